/* recording_dir.c - see recording_dir.h. */
#include "report/recording_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "core/version.h"
#include "report/report.h"

int64_t tt_recdir_sample_offset(uint64_t *mono_out, uint64_t *wall_out)
{
    uint64_t tightest = UINT64_MAX;
    int64_t offset = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t before = tt_clock_ns(CLOCK_MONOTONIC);
        uint64_t wall = tt_clock_ns(CLOCK_REALTIME);
        uint64_t after = tt_clock_ns(CLOCK_MONOTONIC);
        if (after - before >= tightest) continue;
        tightest = after - before;
        uint64_t mid = before + (after - before) / 2;
        offset = (int64_t)(wall - mid);
        *mono_out = mid;
        *wall_out = wall;
    }
    return offset;
}

void tt_recdir_clock_id(char *out, size_t cap)
{
    char boot[64] = "", ns[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof boot, f)) boot[0] = 0;
        fclose(f);
    }
    boot[strcspn(boot, "\n")] = 0;
    ssize_t n = readlink("/proc/self/ns/time", ns, sizeof ns - 1);
    ns[n > 0 ? n : 0] = 0;
    snprintf(out, cap, "%s/%s", boot[0] ? boot : "unknown-boot", ns[0] ? ns : "time:[unknown]");
}

FILE *tt_recdir_manifest_open(const char *path, tt_jw *w, const char *command, const tt_recdir_clock *clock)
{
    FILE *out = tt_open_output(path);
    if (!out) return NULL;
    tt_jw_init(w, out, true);
    tt_jw_object_begin(w, NULL);
    tt_jw_object_begin(w, "tokentap");
    tt_jw_str(w, "version", TT_VERSION);
    tt_jw_str(w, "schema", "tokentap.record/1");
    tt_jw_str(w, "command", command);
    tt_jw_object_end(w);
    tt_jw_uint(w, "start_mono_ns", clock->start_mono);
    tt_jw_uint(w, "end_mono_ns", clock->end_mono);
    tt_jw_uint(w, "start_wall_ns", clock->start_wall);
    tt_jw_uint(w, "end_wall_ns", clock->end_wall);
    tt_jw_object_begin(w, "wall_to_mono_offset_ns");
    tt_jw_int(w, "start", clock->start_offset);
    tt_jw_int(w, "end", clock->end_offset);
    tt_jw_object_end(w);
    char id[160];
    tt_recdir_clock_id(id, sizeof id);
    tt_jw_str(w, "clock_id", id);
    return out;
}

int tt_recdir_manifest_close(FILE *out, tt_jw *w)
{
    tt_jw_object_end(w);
    tt_jw_end(w);
    int rc = fflush(out) == 0 && !ferror(out) ? 0 : -1;
    if (fclose(out) != 0) rc = -1;
    return rc;
}

/* The capture file, opened and handed to libpcap; -1 with w->skipped set. */
static int wire_open_file(tt_recdir_wire *w, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        snprintf(w->skipped, sizeof w->skipped, "cannot create %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    w->dumper = pcap_dump_fopen(w->p, f);
    if (!w->dumper) {
        snprintf(w->skipped, sizeof w->skipped, "cannot start %s: %s", path, pcap_geterr(w->p));
        fclose(f);
        return -1;
    }
    return 0;
}

void tt_recdir_wire_start(tt_recdir_wire *w, const char *path, const char *iface, uint16_t port)
{
    char errbuf[PCAP_ERRBUF_SIZE] = "";
    if (geteuid() != 0) {
        snprintf(w->skipped, sizeof w->skipped, "not root: no wire capture");
        return;
    }
    w->p = pcap_create(iface, errbuf);
    if (!w->p) {
        snprintf(w->skipped, sizeof w->skipped, "libpcap cannot open %s: %s", iface, errbuf);
        return;
    }
    pcap_set_snaplen(w->p, 262144);
    pcap_set_immediate_mode(w->p, 1);
    pcap_set_buffer_size(w->p, 64 << 20);
    pcap_set_tstamp_precision(w->p, PCAP_TSTAMP_PRECISION_NANO);
    if (pcap_activate(w->p) < 0) {
        snprintf(w->skipped, sizeof w->skipped, "libpcap cannot capture on %s: %s", iface, pcap_geterr(w->p));
    } else {
        char filter[64];
        snprintf(filter, sizeof filter, "tcp port %u", (unsigned)port);
        struct bpf_program prog;
        bool filtered = true;
        if (port) {
            filtered = pcap_compile(w->p, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) == 0;
            if (filtered) {
                filtered = pcap_setfilter(w->p, &prog) == 0;
                pcap_freecode(&prog);
            }
        }
        if (!filtered)
            snprintf(w->skipped, sizeof w->skipped, "libpcap filter '%s' failed: %s", filter, pcap_geterr(w->p));
        else if (pcap_setnonblock(w->p, 1, errbuf) < 0)
            snprintf(w->skipped, sizeof w->skipped, "libpcap: %s", errbuf);
        else if (wire_open_file(w, path) == 0)
            return;
    }
    pcap_close(w->p);
    w->p = NULL;
}

void tt_recdir_wire_drain(tt_recdir_wire *w)
{
    if (w->dumper)
        while (pcap_dispatch(w->p, -1, pcap_dump, (u_char *)w->dumper) > 0) {}
}

int tt_recdir_wire_stop(tt_recdir_wire *w)
{
    if (!w->p) return 0;
    tt_recdir_wire_drain(w);
    w->have_stats = pcap_stats(w->p, &w->stats) == 0;
    int rc = pcap_dump_flush(w->dumper) == 0 && !ferror(pcap_dump_file(w->dumper)) ? 0 : -1;
    pcap_dump_close(w->dumper);
    pcap_close(w->p);
    w->p = NULL;
    w->dumper = NULL;
    return rc;
}

void tt_recdir_wire_stats_json(tt_jw *jw, const char *key, const tt_recdir_wire *w)
{
    if (!w->have_stats) {
        tt_jw_null(jw, key);
        return;
    }
    tt_jw_object_begin(jw, key);
    tt_jw_uint(jw, "received", w->stats.ps_recv);
    tt_jw_uint(jw, "dropped", w->stats.ps_drop);
    tt_jw_uint(jw, "if_dropped", w->stats.ps_ifdrop);
    tt_jw_object_end(jw);
}

void tt_recdir_bpf_stats_json(tt_jw *jw, const char *key, const tt_bpf_stats *b)
{
    tt_jw_object_begin(jw, key);
    tt_jw_uint(jw, "records", b->records);
    tt_jw_uint(jw, "bad_records", b->bad_records);
    tt_jw_uint(jw, "connections", b->connections);
    tt_jw_uint(jw, "data_bytes", b->data_bytes);
    tt_jw_uint(jw, "gaps", b->gaps);
    tt_jw_uint(jw, "gap_bytes", b->gap_bytes);
    tt_jw_uint(jw, "kernel_events", b->kernel_events);
    tt_jw_uint(jw, "ringbuf_drops", b->rb_fail);
    tt_jw_uint(jw, "ringbuf_drop_bytes", b->rb_fail_bytes);
    tt_jw_uint(jw, "truncated", b->truncated);
    tt_jw_uint(jw, "truncated_bytes", b->truncated_bytes);
    tt_jw_uint(jw, "args_full", b->args_full);
    tt_jw_uint(jw, "not_copied", b->not_copied);
    tt_jw_uint(jw, "not_copied_bytes", b->not_copied_bytes);
    tt_jw_uint(jw, "processes_at_start", b->tgids_at_start);
    tt_jw_uint(jw, "children_followed", b->children);
    tt_jw_uint(jw, "children_not_followed", b->tgids_full);
    tt_jw_bool(jw, "ready_instants", b->ready_available);
    tt_jw_str_or_null(jw, "ready_missing", b->ready_missing);
    tt_jw_uint(jw, "ready_records", b->ready_records);
    tt_jw_uint(jw, "ready_marks", b->ready_marks);
    tt_jw_uint(jw, "ready_unplaced", b->ready_unplaced);
    tt_jw_uint(jw, "ready_repeats", b->ready_repeats);
    tt_jw_uint(jw, "ready_sockets_not_followed", b->ready_full);
    tt_jw_object_end(jw);
}
