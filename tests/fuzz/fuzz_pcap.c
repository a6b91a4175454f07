/* fuzz_pcap - the input is a capture file (pcap or pcapng, any damage). It is
 * read through the pcap source and the reassembler; the chunks must keep the
 * chunk contract (chunk_check.h), an error must be one line, and nothing may
 * crash. The input length picks the reassembler limits, so the seeds stay
 * plain capture files. The file lives in a memfd (no disk). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chunk_check.h"
#include "source/pcap_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_pcap", 0);
    if (fd < 0) return 0;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    char path[64], err[512];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    if (!s) {
        if (!err[0] || strchr(err, '\n')) abort();
        close(fd);
        return 0;
    }
    tt_reasm_limits lim = {.max_held_bytes_per_dir = (size % 4) ? 4096 : 0, .max_connections = 1 + size % 3};
    chunk_check cc = {0};
    tt_reasm *r = tt_reasm_new(&lim, TT_VANTAGE_WIRE, chunk_check_fn, &cc);
    if (r) {
        if (size & 1) tt_pcap_source_set_mono_offset(s, (int64_t)size * 1000);
        err[0] = 0;
        if (tt_pcap_source_run(s, r, NULL, NULL, err, sizeof err) != 0 && (!err[0] || strchr(err, '\n'))) abort();
        const tt_pcap_stats *st = tt_pcap_source_stats(s);
        if (st->tcp_segments + st->non_ip + st->non_tcp + st->fragments + st->malformed != st->packets) abort();
        chunk_check_done(&cc);
        tt_reasm_free(r);
    }
    tt_pcap_source_close(s);
    close(fd);
    return 0;
}
