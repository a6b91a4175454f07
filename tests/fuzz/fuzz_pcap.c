/* fuzz_pcap - the input is a capture file (pcap or pcapng, any damage). It is
 * read through the pcap source and the reassembler; the chunks must keep the
 * chunk contract (chunk_check.h), an error must be one line, and nothing may
 * crash. It is read twice, with whole windows and with reads of a few bytes
 * (tt_pcap_source_set_read_chunk): the two must agree on the result, the
 * error and the packet counts. It is read a third time as two shares
 * (analyze --jobs 2, tt_pcap_source_share), one after the other: each
 * must keep the chunk contract, and their counts, merged
 * (tt_pcap_source_absorb_share), must be the whole read's: each packet's
 * class counted once. A fourth time the two shares read it at once, on two
 * threads walking the file once between them in chunks of a few bytes
 * (tt_pcap_source_walk_together): the same, and the whole read's error
 * line in both. The input length picks the reassembler
 * limits and the read size, so the seeds stay plain capture files. The
 * file lives in a memfd (no disk). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chunk_check.h"
#include "source/pcap_source.h"

/* One share's read: through its own reassembler, keeping the chunk contract. */
typedef struct share_read {
    tt_pcap_source *src;
    size_t size;
    int rc;
    char err[512];
} share_read;

static void *share_read_main(void *arg)
{
    share_read *sr = arg;
    tt_reasm_limits lim = {.max_held_bytes_per_dir = (sr->size % 4) ? 4096 : 0, .max_connections = 1 + sr->size % 3};
    chunk_check cc = {0};
    tt_reasm *r = tt_reasm_new(&lim, TT_VANTAGE_WIRE, chunk_check_fn, &cc);
    if (!r) abort();
    sr->rc = tt_pcap_source_run(sr->src, r, NULL, NULL, sr->err, sizeof sr->err);
    chunk_check_done(&cc);
    tt_reasm_free(r);
    return NULL;
}

/* Read path as two shares, one after the other or (together) at once
 * through one walk, and check them against the whole read (its result rc,
 * error line whole_err and counts whole). */
static void shares_agree(const char *path, size_t size, int rc, const char *whole_err, const tt_pcap_stats *whole,
                         bool together)
{
    char err[512] = "";
    tt_pcap_source *s = tt_pcap_source_open(path, err, sizeof err);
    if (!s) abort(); /* it opened twice already */
    tt_pcap_source *other = tt_pcap_source_share(s, 1, 2);
    if (!other) { /* a file libpcap reads (pcapng it does not take) has no shares */
        tt_pcap_source_close(s);
        return;
    }
    share_read sr[2] = {{.src = other, .size = size}, {.src = s, .size = size}};
    for (int k = 0; k < 2; k++)
        if (size & 1) tt_pcap_source_set_mono_offset(sr[k].src, (int64_t)size * 1000);
    if (together) {
        tt_pcap_source_set_read_chunk(s, 1 + size % 37);
        if (tt_pcap_source_walk_together(s, &other, 1) != 0) abort();
        pthread_t th;
        if (pthread_create(&th, NULL, share_read_main, &sr[0]) != 0) abort();
        share_read_main(&sr[1]);
        pthread_join(th, NULL);
    } else {
        for (int k = 0; k < 2; k++) share_read_main(&sr[k]);
    }
    for (int k = 0; k < 2; k++)
        if (sr[k].rc != rc || (together && rc && strcmp(sr[k].err, whole_err))) abort();
    tt_pcap_source_absorb_share(s, other);
    const tt_pcap_stats *st = tt_pcap_source_stats(s);
    if (st->packets != whole->packets || st->bytes != whole->bytes || st->tcp_segments != whole->tcp_segments ||
        st->non_ip != whole->non_ip || st->non_tcp != whole->non_tcp || st->fragments != whole->fragments ||
        st->malformed != whole->malformed || st->last_ns != whole->last_ns)
        abort();
    tt_pcap_source_close(other);
    tt_pcap_source_close(s);
}

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
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int rc[2] = {0, 0};
    char err[2][512];
    tt_pcap_stats stats[2];
    for (int pass = 0; pass < 2; pass++) {
        err[pass][0] = 0;
        tt_pcap_source *s = tt_pcap_source_open(path, err[pass], sizeof err[pass]);
        if (!s) {
            if (!err[pass][0] || strchr(err[pass], '\n')) abort();
            close(fd);
            return 0;
        }
        if (pass == 1) tt_pcap_source_set_read_chunk(s, 1 + size % 29);
        tt_reasm_limits lim = {.max_held_bytes_per_dir = (size % 4) ? 4096 : 0, .max_connections = 1 + size % 3};
        chunk_check cc = {0};
        tt_reasm *r = tt_reasm_new(&lim, TT_VANTAGE_WIRE, chunk_check_fn, &cc);
        if (!r) abort();
        if (size & 1) tt_pcap_source_set_mono_offset(s, (int64_t)size * 1000);
        rc[pass] = tt_pcap_source_run(s, r, NULL, NULL, err[pass], sizeof err[pass]);
        if (rc[pass] != 0 && (!err[pass][0] || strchr(err[pass], '\n'))) abort();
        const tt_pcap_stats *st = tt_pcap_source_stats(s);
        if (st->tcp_segments + st->non_ip + st->non_tcp + st->fragments + st->malformed != st->packets) abort();
        stats[pass] = *st;
        chunk_check_done(&cc);
        tt_reasm_free(r);
        tt_pcap_source_close(s);
    }
    if (rc[0] != rc[1] || (rc[0] && strcmp(err[0], err[1])) || stats[0].packets != stats[1].packets ||
        stats[0].tcp_segments != stats[1].tcp_segments || stats[0].bytes != stats[1].bytes ||
        stats[0].last_ns != stats[1].last_ns)
        abort();
    shares_agree(path, size, rc[0], err[0], &stats[0], false);
    shares_agree(path, size, rc[0], err[0], &stats[0], true);
    close(fd);
    return 0;
}
