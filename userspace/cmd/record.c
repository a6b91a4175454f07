/* record.c - `tokentap record`: every vantage of a live exchange into a
 * directory: server.pcap and client.pcap synthesized from the eBPF socket
 * source, wire.pcap captured with libpcap, and manifest.json. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "cmd/commands.h"
#include "report/json_writer.h"
#include "report/pcap_synth.h"
#include "report/report.h"
#include "source/bpf_source.h"

#define RECORD_MAX_PIDS 64

static volatile sig_atomic_t record_stop;

static void on_signal(int sig) { record_stop = 1; }

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap record -o DIR [--pid PID]... [--comm NAME] [--cgroup DIR] [--port PORT]\n"
            "                       [-i IFACE] [--duration S]\n"
            "\n"
            "Record every vantage of the TCP exchanges of a process into DIR (created 0700):\n"
            "server.pcap and client.pcap (the socket reads and writes traced with eBPF, as\n"
            "synthesized TCP/IP packets stamped with their syscall instant, CLOCK_MONOTONIC),\n"
            "wire.pcap (captured with libpcap on IFACE, wall clock) and manifest.json (pids,\n"
            "clock offsets, drop counts). Runs until SIGINT/SIGTERM or the duration. Read the\n"
            "result with `tokentap analyze DIR`. Needs root.\n"
            "\n"
            "options:\n"
            "  -o, --output DIR     the directory to create (must not exist)\n"
            "  --pid PID            trace this process and its descendants: those alive at start\n"
            "                       and every process they fork later (repeatable: any of them)\n"
            "  --comm NAME          only processes named NAME (/proc/PID/comm, 1 to 15 bytes)\n"
            "  --cgroup DIR         only tasks in this cgroup v2 directory or below it\n"
            "  --port PORT          only sockets with this local or remote port (also the wire filter)\n"
            "                       (the eBPF filters apply in the kernel before any copy; all given\n"
            "                       must match; default: every process, every TCP socket)\n"
            "  -i, --iface IFACE    the interface the wire is captured on (default lo)\n"
            "  --duration S         stop after S seconds\n"
            "  -h, --help           this help\n"
            "\n"
            "exit status: 0 ok; 2 bad usage; 3 eBPF could not be set up (or a filter is invalid:\n"
            "no such pid, not a cgroup v2 directory); 6 DIR not written.\n");
}

/* wall - mono, reading the wall clock between two monotonic reads and
 * keeping the tightest of a few tries; mono_out gets the monotonic instant. */
static int64_t sample_offset(uint64_t *mono_out, uint64_t *wall_out)
{
    uint64_t best_span = UINT64_MAX;
    int64_t best = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t m1 = tt_clock_ns(CLOCK_MONOTONIC), w = tt_clock_ns(CLOCK_REALTIME), m2 = tt_clock_ns(CLOCK_MONOTONIC);
        if (m2 - m1 < best_span) {
            best_span = m2 - m1;
            uint64_t mid = m1 + (m2 - m1) / 2;
            best = (int64_t)(w - mid);
            *mono_out = mid;
            *wall_out = w;
        }
    }
    return best;
}

typedef struct wire_capture {
    pcap_t *p;
    pcap_dumper_t *dumper;
    char skipped[PCAP_ERRBUF_SIZE + 128];
    struct pcap_stat stats;
    bool have_stats;
} wire_capture;

static void wire_start(wire_capture *w, const char *path, const char *iface, uint16_t port)
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
    int rc = pcap_activate(w->p);
    char filter[64];
    snprintf(filter, sizeof filter, "tcp port %u", (unsigned)port);
    struct bpf_program prog;
    if (rc < 0) {
        snprintf(w->skipped, sizeof w->skipped, "libpcap cannot capture on %s: %s", iface, pcap_geterr(w->p));
    } else if (port && (pcap_compile(w->p, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0 ||
                        (pcap_setfilter(w->p, &prog) < 0 ? (pcap_freecode(&prog), 1) : (pcap_freecode(&prog), 0)))) {
        snprintf(w->skipped, sizeof w->skipped, "libpcap filter '%s' failed: %s", filter, pcap_geterr(w->p));
    } else if (pcap_setnonblock(w->p, 1, errbuf) < 0) {
        snprintf(w->skipped, sizeof w->skipped, "libpcap: %s", errbuf);
    } else {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (!f) {
            snprintf(w->skipped, sizeof w->skipped, "cannot create wire.pcap: %s", strerror(errno));
            if (fd >= 0) close(fd);
        } else if (!(w->dumper = pcap_dump_fopen(w->p, f))) {
            snprintf(w->skipped, sizeof w->skipped, "cannot start wire.pcap: %s", pcap_geterr(w->p));
            fclose(f);
        } else {
            return;
        }
    }
    pcap_close(w->p);
    w->p = NULL;
}

static void wire_drain(wire_capture *w)
{
    if (w->dumper)
        while (pcap_dispatch(w->p, -1, pcap_dump, (u_char *)w->dumper) > 0) {}
}

static int wire_stop(wire_capture *w)
{
    if (!w->p) return 0;
    wire_drain(w);
    w->have_stats = pcap_stats(w->p, &w->stats) == 0;
    int rc = pcap_dump_flush(w->dumper) == 0 && !ferror(pcap_dump_file(w->dumper)) ? 0 : -1;
    pcap_dump_close(w->dumper);
    pcap_close(w->p);
    w->p = NULL;
    return rc;
}

static void read_comm(uint32_t pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/comm", pid);
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (!fgets(buf, (int)cap, f)) buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
}

typedef struct record_manifest {
    const uint32_t *pids;
    char (*comms)[32];
    size_t n_pids;
    uint16_t port;
    const char *comm, *cgroup;
    const char *iface;
    uint64_t start_mono, end_mono, start_wall, end_wall;
    int64_t start_offset, end_offset;
    const char *wire_skipped;
    const wire_capture *wire;
    const tt_bpf_stats *bs;
    uint64_t server_packets, client_packets;
} record_manifest;

static int write_manifest(const char *path, const record_manifest *m)
{
    FILE *out = tt_open_output(path);
    if (!out) return -1;
    tt_jw w;
    tt_jw_init(&w, out, true);
    tt_jw_object_begin(&w, NULL);
    tt_jw_object_begin(&w, "tokentap");
    tt_jw_str(&w, "version", TT_VERSION);
    tt_jw_str(&w, "schema", "tokentap.record/1");
    tt_jw_object_end(&w);
    tt_jw_array_begin(&w, "pids");
    for (size_t i = 0; i < m->n_pids; i++) tt_jw_uint(&w, NULL, m->pids[i]);
    tt_jw_array_end(&w);
    tt_jw_array_begin(&w, "comms");
    for (size_t i = 0; i < m->n_pids; i++) tt_jw_str_or_null(&w, NULL, m->comms[i]);
    tt_jw_array_end(&w);
    if (m->port) tt_jw_uint(&w, "port", m->port);
    else tt_jw_null(&w, "port");
    tt_jw_str_or_null(&w, "comm", m->comm);
    tt_jw_str_or_null(&w, "cgroup", m->cgroup);
    tt_jw_str(&w, "iface", m->iface);
    tt_jw_uint(&w, "start_mono_ns", m->start_mono);
    tt_jw_uint(&w, "end_mono_ns", m->end_mono);
    tt_jw_uint(&w, "start_wall_ns", m->start_wall);
    tt_jw_uint(&w, "end_wall_ns", m->end_wall);
    tt_jw_object_begin(&w, "wall_to_mono_offset_ns");
    tt_jw_int(&w, "start", m->start_offset);
    tt_jw_int(&w, "end", m->end_offset);
    tt_jw_object_end(&w);
    tt_jw_object_begin(&w, "files");
    tt_jw_str(&w, "server", "server.pcap");
    tt_jw_str(&w, "client", "client.pcap");
    if (m->wire_skipped) tt_jw_null(&w, "wire");
    else tt_jw_str(&w, "wire", "wire.pcap");
    tt_jw_str_or_null(&w, "wire_skipped", m->wire_skipped);
    tt_jw_object_end(&w);
    tt_jw_object_begin(&w, "packets");
    tt_jw_uint(&w, "server", m->server_packets);
    tt_jw_uint(&w, "client", m->client_packets);
    tt_jw_object_end(&w);
    const tt_bpf_stats *b = m->bs;
    tt_jw_object_begin(&w, "drops");
    tt_jw_object_begin(&w, "ebpf");
    tt_jw_uint(&w, "records", b->records);
    tt_jw_uint(&w, "bad_records", b->bad_records);
    tt_jw_uint(&w, "connections", b->connections);
    tt_jw_uint(&w, "data_bytes", b->data_bytes);
    tt_jw_uint(&w, "gaps", b->gaps);
    tt_jw_uint(&w, "gap_bytes", b->gap_bytes);
    tt_jw_uint(&w, "kernel_events", b->kernel_events);
    tt_jw_uint(&w, "ringbuf_drops", b->rb_fail);
    tt_jw_uint(&w, "ringbuf_drop_bytes", b->rb_fail_bytes);
    tt_jw_uint(&w, "truncated", b->truncated);
    tt_jw_uint(&w, "truncated_bytes", b->truncated_bytes);
    tt_jw_uint(&w, "args_full", b->args_full);
    tt_jw_uint(&w, "not_copied", b->not_copied);
    tt_jw_uint(&w, "not_copied_bytes", b->not_copied_bytes);
    tt_jw_uint(&w, "processes_at_start", b->tgids_at_start);
    tt_jw_uint(&w, "children_followed", b->children);
    tt_jw_uint(&w, "children_not_followed", b->tgids_full);
    tt_jw_object_end(&w);
    if (m->wire->have_stats) {
        tt_jw_object_begin(&w, "pcap");
        tt_jw_uint(&w, "received", m->wire->stats.ps_recv);
        tt_jw_uint(&w, "dropped", m->wire->stats.ps_drop);
        tt_jw_uint(&w, "if_dropped", m->wire->stats.ps_ifdrop);
        tt_jw_object_end(&w);
    } else {
        tt_jw_null(&w, "pcap");
    }
    tt_jw_object_end(&w);
    tt_jw_object_end(&w);
    tt_jw_end(&w);
    int rc = fflush(out) == 0 && !ferror(out) ? 0 : -1;
    if (fclose(out) != 0) rc = -1;
    return rc;
}

int tt_cmd_record(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"pid", required_argument, NULL, 'p'},
        {"port", required_argument, NULL, 'P'},   {"iface", required_argument, NULL, 'i'},
        {"duration", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
        {"comm", required_argument, NULL, 'c'},   {"cgroup", required_argument, NULL, 'g'},
        {"ring-kb", required_argument, NULL, 'R'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = NULL, *iface = "lo";
    uint32_t pids[RECORD_MAX_PIDS];
    size_t n_pids = 0;
    uint16_t port = 0;
    const char *comm = NULL, *cgroup = NULL;
    uint32_t ring_bytes = 0;
    double duration_s = 0;
    uint32_t v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:i:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': dir = optarg; break;
        case 'i': iface = optarg; break;
        case 'p':
            if (!tt_parse_u32(optarg, 0x7fffffff, &v) || v == 0) {
                fprintf(stderr, "tokentap record: --pid wants a process id, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            if (n_pids == RECORD_MAX_PIDS) {
                fprintf(stderr, "tokentap record: at most %d --pid\n", RECORD_MAX_PIDS);
                return TT_EXIT_USAGE;
            }
            pids[n_pids++] = v;
            break;
        case 'P':
            if (!tt_parse_u32(optarg, 65535, &v) || v == 0) {
                fprintf(stderr, "tokentap record: --port wants 1..65535, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            port = (uint16_t)v;
            break;
        case 'd':
            if (!tt_parse_seconds(optarg, &duration_s)) {
                fprintf(stderr, "tokentap record: --duration wants seconds > 0, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            break;
        case 'c':
            if (!optarg[0] || strlen(optarg) > 15) {
                fprintf(stderr, "tokentap record: --comm wants a process name of 1 to 15 bytes, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            comm = optarg;
            break;
        case 'g': cgroup = optarg; break;
        case 'R':
            /* Hidden, for tests: the ring-buffer size in KiB. */
            if (!tt_parse_u32(optarg, 1u << 20, &v) || v < 4 || (v & (v - 1))) {
                fprintf(stderr, "tokentap record: --ring-kb wants a power of two from 4 to 1048576, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            ring_bytes = v * 1024;
            break;
        case 'h': usage(stdout); return TT_EXIT_OK;
        case ':':
            fprintf(stderr, "tokentap record: %s needs a value (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        default:
            fprintf(stderr, "tokentap record: unknown option '%s' (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "tokentap record: unexpected argument '%s' (try --help)\n", argv[optind]);
        return TT_EXIT_USAGE;
    }
    if (!dir) {
        fprintf(stderr, "tokentap record: -o DIR is required (try --help)\n");
        return TT_EXIT_USAGE;
    }
    char (*comms)[32] = calloc(n_pids ? n_pids : 1, sizeof *comms);
    if (!comms) return TT_EXIT_INTERNAL;
    for (size_t i = 0; i < n_pids; i++) read_comm(pids[i], comms[i], sizeof comms[i]);

    tt_bpf_options bopt = {
        .port = port, .tgids = pids, .n_tgids = n_pids, .comm = comm, .cgroup = cgroup, .ring_bytes = ring_bytes,
    };

    if (mkdir(dir, 0700) < 0) {
        fprintf(stderr, "tokentap record: cannot create %s: %s\n", dir, strerror(errno));
        free(comms);
        return TT_EXIT_OUTPUT;
    }
    char path[3][4096], manifest_path[4096], err[PCAP_ERRBUF_SIZE + 256];
    static const char *const names[3] = {"server.pcap", "client.pcap", "wire.pcap"};
    for (int i = 0; i < 3; i++) snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
    snprintf(manifest_path, sizeof manifest_path, "%s/manifest.json", dir);

    tt_synth *server = tt_synth_open(path[0], err, sizeof err);
    tt_synth *client = server ? tt_synth_open(path[1], err, sizeof err) : NULL;
    if (!client) {
        fprintf(stderr, "tokentap record: %s\n", err);
        tt_synth_close(server);
        free(comms);
        return TT_EXIT_OUTPUT;
    }
    tt_bpf_source *src = tt_bpf_source_new(tt_synth_chunk, server, tt_synth_chunk, client);
    if (!src || tt_bpf_source_start(src, &bopt, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap record: %s\n", src ? err : "out of memory");
        tt_bpf_source_free(src);
        tt_synth_close(server);
        tt_synth_close(client);
        free(comms);
        return TT_EXIT_INPUT;
    }
    wire_capture wire = {0};
    wire_start(&wire, path[2], iface, port);
    if (wire.skipped[0]) fprintf(stderr, "tokentap record: wire vantage skipped: %s\n", wire.skipped);

    record_manifest m = {
        .pids = pids, .comms = comms, .n_pids = n_pids, .port = port, .comm = comm, .cgroup = cgroup, .iface = iface,
    };
    m.start_offset = sample_offset(&m.start_mono, &m.start_wall);

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    fprintf(stderr, "tokentap record: recording into %s\n", dir);
    fflush(stderr);

    uint64_t deadline = duration_s > 0 ? m.start_mono + (uint64_t)(duration_s * 1e9) : UINT64_MAX;
    int status = TT_EXIT_OK;
    while (!record_stop && tt_clock_ns(CLOCK_MONOTONIC) < deadline) {
        if (tt_bpf_source_poll(src, wire.p ? 10 : 100, err, sizeof err) < 0) {
            fprintf(stderr, "tokentap record: %s\n", err);
            status = TT_EXIT_INPUT;
            break;
        }
        wire_drain(&wire);
    }
    tt_bpf_source_poll(src, 0, err, sizeof err);
    tt_bpf_source_finish(src);
    m.end_offset = sample_offset(&m.end_mono, &m.end_wall);
    tt_bpf_stats bs;
    tt_bpf_source_stats(src, &bs);
    bool wire_failed = wire_stop(&wire) < 0;
    m.server_packets = tt_synth_packets(server);
    m.client_packets = tt_synth_packets(client);
    bool failed = tt_synth_close(server) < 0;
    failed |= tt_synth_close(client) < 0;
    failed |= wire_failed;
    m.wire = &wire;
    m.wire_skipped = wire.skipped[0] ? wire.skipped : NULL;
    m.bs = &bs;
    if (write_manifest(manifest_path, &m) < 0) failed = true;
    tt_bpf_source_free(src);
    free(comms);
    fprintf(stderr,
            "tokentap record: %llu server packets, %llu client packets; ring-buffer drops %llu, truncated %llu, "
            "gaps %llu; wire: %s (%u received, %u dropped)\n",
            (unsigned long long)m.server_packets, (unsigned long long)m.client_packets,
            (unsigned long long)bs.rb_fail, (unsigned long long)bs.truncated, (unsigned long long)bs.gaps,
            m.wire_skipped ? "skipped" : "captured", wire.have_stats ? wire.stats.ps_recv : 0,
            wire.have_stats ? wire.stats.ps_drop : 0);
    if (failed) {
        fprintf(stderr, "tokentap record: writing %s failed\n", dir);
        if (status == TT_EXIT_OK) status = TT_EXIT_OUTPUT;
    }
    return status;
}
