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
#include "report/recording_dir.h"
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
            "wire.pcap (captured with libpcap on IFACE, wall clock), server_tls.pcap and\n"
            "client_tls.pcap (the TLS plaintext at each end: uprobes on OpenSSL and Go's\n"
            "crypto/tls; each only when some was seen)\n"
            "and manifest.json (pids, clock offsets, drop counts). Runs until SIGINT/SIGTERM\n"
            "or the duration. Read the result with `tokentap analyze DIR`. Needs root.\n"
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
    tt_recdir_clock clock;
    const tt_recdir_wire *wire;
    const tt_bpf_stats *bs;
    uint64_t server_packets, client_packets;
} record_manifest;

static int write_manifest(const char *path, const record_manifest *m)
{
    tt_jw w;
    FILE *out = tt_recdir_manifest_open(path, &w, "record", &m->clock);
    if (!out) return -1;
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
    const char *wire_skipped = m->wire->skipped[0] ? m->wire->skipped : NULL;
    tt_jw_object_begin(&w, "files");
    tt_jw_str(&w, "server", "server.pcap");
    tt_jw_str(&w, "client", "client.pcap");
    tt_jw_str_or_null(&w, "wire", wire_skipped ? NULL : "wire.pcap");
    tt_jw_str_or_null(&w, "wire_skipped", wire_skipped);
    tt_jw_object_end(&w);
    tt_jw_object_begin(&w, "packets");
    tt_jw_uint(&w, "server", m->server_packets);
    tt_jw_uint(&w, "client", m->client_packets);
    tt_jw_object_end(&w);
    tt_jw_object_begin(&w, "drops");
    tt_recdir_bpf_stats_json(&w, "ebpf", m->bs);
    tt_recdir_wire_stats_json(&w, "pcap", m->wire);
    tt_jw_object_end(&w);
    return tt_recdir_manifest_close(out, &w);
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
    char path[5][4096], manifest_path[4096], err[PCAP_ERRBUF_SIZE + 256];
    static const char *const names[5] = {"server.pcap", "client.pcap", "wire.pcap", "server_tls.pcap",
                                         "client_tls.pcap"};
    for (int i = 0; i < 5; i++) snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
    snprintf(manifest_path, sizeof manifest_path, "%s/manifest.json", dir);

    tt_synth *server = tt_synth_open(path[0], err, sizeof err);
    tt_synth *client = server ? tt_synth_open(path[1], err, sizeof err) : NULL;
    tt_synth *server_tls = client ? tt_synth_open(path[3], err, sizeof err) : NULL;
    tt_synth *client_tls = server_tls ? tt_synth_open(path[4], err, sizeof err) : NULL;
    if (!client_tls) {
        fprintf(stderr, "tokentap record: %s\n", err);
        tt_synth_close(server);
        tt_synth_close(client);
        tt_synth_close(server_tls);
        free(comms);
        return TT_EXIT_OUTPUT;
    }
    tt_bpf_source *src = tt_bpf_source_new(tt_synth_chunk, server, tt_synth_chunk, client);
    if (src) tt_bpf_source_route_tls(src, tt_synth_chunk, server_tls, tt_synth_chunk, client_tls);
    if (!src || tt_bpf_source_start(src, &bopt, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap record: %s\n", src ? err : "out of memory");
        tt_bpf_source_free(src);
        tt_synth_close(server);
        tt_synth_close(client);
        tt_synth_close(server_tls);
        tt_synth_close(client_tls);
        /* Nothing was recorded: leave no half-made directory behind. */
        unlink(path[0]);
        unlink(path[1]);
        unlink(path[3]);
        unlink(path[4]);
        rmdir(dir);
        free(comms);
        return TT_EXIT_INPUT;
    }
    tt_recdir_wire wire = {0};
    tt_recdir_wire_start(&wire, path[2], iface, port);
    if (wire.skipped[0]) fprintf(stderr, "tokentap record: wire vantage skipped: %s\n", wire.skipped);

    record_manifest m = {
        .pids = pids, .comms = comms, .n_pids = n_pids, .port = port, .comm = comm, .cgroup = cgroup, .iface = iface,
    };
    m.clock.start_offset = tt_recdir_sample_offset(&m.clock.start_mono, &m.clock.start_wall);

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    fprintf(stderr, "tokentap record: recording into %s\n", dir);
    fflush(stderr);

    uint64_t deadline = duration_s > 0 ? m.clock.start_mono + (uint64_t)(duration_s * 1e9) : UINT64_MAX;
    int status = TT_EXIT_OK;
    while (!record_stop && tt_clock_ns(CLOCK_MONOTONIC) < deadline) {
        if (tt_bpf_source_poll(src, wire.p ? 10 : 100, err, sizeof err) < 0) {
            fprintf(stderr, "tokentap record: %s\n", err);
            status = TT_EXIT_INPUT;
            break;
        }
        tt_recdir_wire_drain(&wire);
    }
    tt_bpf_source_poll(src, 0, err, sizeof err);
    tt_bpf_source_finish(src);
    m.clock.end_offset = tt_recdir_sample_offset(&m.clock.end_mono, &m.clock.end_wall);
    tt_bpf_stats bs;
    tt_bpf_source_stats(src, &bs);
    bool wire_failed = tt_recdir_wire_stop(&wire) < 0;
    m.server_packets = tt_synth_packets(server);
    m.client_packets = tt_synth_packets(client);
    bool failed = tt_synth_close(server) < 0;
    failed |= tt_synth_close(client) < 0;
    /* the TLS plaintext vantages, each kept when some was seen */
    tt_synth *tls[2] = {server_tls, client_tls};
    for (int k = 0; k < 2; k++) {
        bool any = tt_synth_packets(tls[k]) > 0;
        failed |= tt_synth_close(tls[k]) < 0;
        if (!any) unlink(path[3 + k]);
    }
    failed |= wire_failed;
    m.wire = &wire;
    m.bs = &bs;
    if (write_manifest(manifest_path, &m) < 0) failed = true;
    free(comms);
    char ready[160];
    fprintf(stderr,
            "tokentap record: %llu server packets, %llu client packets; ring-buffer drops %llu, truncated %llu, "
            "gaps %llu; wire: %s (%u received, %u dropped); %s\n",
            (unsigned long long)m.server_packets, (unsigned long long)m.client_packets,
            (unsigned long long)bs.rb_fail, (unsigned long long)bs.truncated, (unsigned long long)bs.gaps,
            wire.skipped[0] ? "skipped" : "captured", wire.have_stats ? wire.stats.ps_recv : 0,
            wire.have_stats ? wire.stats.ps_drop : 0, tt_bpf_ready_note(&bs, ready, sizeof ready));
    if (bs.tls_note)
        fprintf(stderr, "tokentap record: %s; %llu TLS records on %llu connections (server_tls.pcap, client_tls.pcap), "
                        "%llu SSL calls whose "
                        "socket was not known\n",
                bs.tls_note, (unsigned long long)bs.tls_records, (unsigned long long)bs.tls_connections,
                (unsigned long long)bs.tls_unpaired);
    tt_bpf_source_free(src); /* after the lines above: bs.tls_note lives in it */
    if (failed) {
        fprintf(stderr, "tokentap record: writing %s failed\n", dir);
        if (status == TT_EXIT_OK) status = TT_EXIT_OUTPUT;
    }
    return status;
}
