/* run.c - `tokentap run -- CMD ARGS...`: start CMD with the LD_PRELOAD probe
 * (probe/), follow it and its children, and report the client vantage (and,
 * as root, the server vantage from eBPF and the wire from libpcap) when CMD
 * exits. CMD's exit status is passed through. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../probe/probe_abi.h"
#include "../../probe/probe_ring.h"
#include "cmd/cmd_input.h"
#include "cmd/run_launch.h"
#include "cmd/commands.h"
#include "core/util.h"
#include "import/bench_import.h"
#include "metrics/metrics.h"
#include "report/json_writer.h"
#include "report/pcap_synth.h"
#include "report/recording_dir.h"
#include "report/report.h"
#include "report/report_multi.h"
#include "source/bpf_source.h"
#include "source/pcap_source.h"
#include "source/probe_source.h"
#include "source/ready_bridge.h"
#include "source/ring_dir.h"
#include "timeline/conn_tracker.h"

static volatile sig_atomic_t run_child_pid;
static volatile sig_atomic_t run_interrupted;

/* SIGTERM/SIGHUP to tokentap go on to CMD; SIGINT and SIGQUIT reach CMD
 * from the terminal by themselves, so tokentap only notes them and keeps
 * collecting until CMD exits. */
static void on_signal(int sig)
{
    run_interrupted = 1;
    if ((sig == SIGTERM || sig == SIGHUP) && run_child_pid > 0) kill((pid_t)run_child_pid, sig);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap run [OPTIONS] [--] CMD [ARGS...]\n"
            "\n"
            "Run CMD with the tokentap probe preloaded (LD_PRELOAD, no root needed): every\n"
            "read and write CMD, its threads and the processes it forks or execs make on a\n"
            "TCP socket is recorded with its CLOCK_MONOTONIC instant, and when CMD exits the\n"
            "report of its streams is printed at the client vantage (sockets it connected;\n"
            "client_tls: their plaintext, OpenSSL's SSL_read/SSL_write; server and server_tls:\n"
            "sockets it accepted).\n"
            "As root, --server-pid/--server-port also take the server vantage with eBPF and\n"
            "the wire with libpcap; otherwise one line says which vantages were not taken.\n"
            "See docs/probe.md.\n"
            "\n"
            "options:\n"
            "  -o, --output DIR     also record the run into DIR like `tokentap record`\n"
            "                       (client.pcap, server.pcap, client_tls.pcap, server_tls.pcap,\n"
            "                       wire.pcap, manifest.json),\n"
            "                       for `tokentap analyze DIR`\n"
            "  --server-pid PID     (root) the server's process: its vantage from eBPF\n"
            "  --server-port PORT   (root) the server's port: eBPF server vantage and wire filter\n"
            "  -i, --iface IFACE    (root) the interface the wire is captured on (default lo)\n"
            "  --report FILE        write the report to FILE (mode 0600) instead of stdout\n"
            "  --json               the JSON document (docs/formats.md) instead of text\n"
            "  --events             list every framed event with its instant (with --json: JSON)\n"
            "  --text               include generated text\n"
            "  --ring-kb N          each process's ring in KiB (default 16384): full -> records dropped\n"
            "  --bench-result FILE  the benchmark's result file, written by CMD (vllm --save-result\n"
            "                       --save-detailed, genai-perf, aiperf, guidellm, sglang, llmperf),\n"
            "                       read after CMD exits: its TTFT and E2EL are split into send lag,\n"
            "                       uplink, server queue, server, downlink, client queue and client lag\n"
            "                       (docs/metrics.md; the queues need root, --server-port and a kernel\n"
            "                       with sock:sk_data_ready)\n"
            "  --bench-format NAME  its format (vllm, genai-perf, aiperf, guidellm, sglang, llmperf;\n"
            "                       default: detected from the content)\n"
            "  --bench-id-prefix P  the x-request-id prefix the tool numbered its requests with\n"
            "  --perfetto FILE      also write a Chrome trace JSON (ui.perfetto.dev) of every request\n"
            "  -h, --help           this help\n"
            "\n"
            "With a benchmark file, or when more than one vantage was taken, the report is the\n"
            "joined breakdown of `tokentap analyze DIR` (vantages side by side, where the time\n"
            "went), then each vantage's own report.\n"
            "The probe library (libtokentap-probe.so) is $TOKENTAP_PROBE when set, else the one\n"
            "next to the tokentap binary, else ../lib/tokentap/ from the binary's directory.\n"
            "The rings are in a fresh directory in /dev/shm; as root a tmpfs with huge pages is\n"
            "mounted on it for the run (fewer page faults in CMD; TOKENTAP_HUGE_RINGS=0: not),\n"
            "with spare rings made ahead for the next processes that record (docs/probe.md).\n"
            "Where the CPU's time-stamp counter is invariant, the probe stamps its records with\n"
            "it and run converts them to CLOCK_MONOTONIC (TOKENTAP_PROBE_CLOCK=monotonic: the\n"
            "probe reads CLOCK_MONOTONIC itself, as it does elsewhere).\n"
            "\n"
            "exit status: CMD's own (128+N when a signal N killed it; 127 when it could not be\n"
            "started); 2 bad usage and 3 the probe or its directory could not be set up, both\n"
            "before CMD starts. A report that could not be written is said on stderr.\n");
}

/* Sends a vantage's chunks to its tracker and, when recording, its pcap. */
typedef struct vantage_sink {
    tt_ready_bridge *learn; /* the probe's client vantage: its connections, for the kernel's ready instants */
    tt_tracker *tracker;
    tt_synth *synth;       /* NULL when not recording (or not yet opened) */
    char synth_path[4096]; /* opened on the first chunk ("" when not recording) */
    bool synth_failed;
    uint64_t chunks;
} vantage_sink;

static void sink_chunk(void *ctx, const tt_chunk *c)
{
    vantage_sink *v = ctx;
    v->chunks++;
    if (v->learn) tt_ready_bridge_learn(v->learn, c);
    tt_tracker_chunk(v->tracker, c);
    if (v->learn) tt_ready_bridge_release_held(v->learn); /* marks that came before this connection's first chunk */
    if (!v->synth && v->synth_path[0] && !v->synth_failed) {
        char err[256];
        v->synth = tt_synth_open(v->synth_path, err, sizeof err);
        if (!v->synth) {
            fprintf(stderr, "tokentap run: %s\n", err);
            v->synth_failed = true;
        }
    }
    if (v->synth) tt_synth_chunk(v->synth, c);
}

typedef struct run_options {
    const char *record_dir, *report_path, *iface;
    const char *bench_path, *bench_id_prefix, *perfetto_path;
    tt_bench_format bench_format;
    uint32_t server_pid;
    uint16_t server_port;
    uint32_t ring_kb;
    bool json, events, text;
} run_options;

/* Everything collected during the run. */
typedef struct run_state {
    vantage_sink client, server, client_tls, server_tls, ebpf_server;
    tt_probe_source *probe;
    tt_bpf_source *bpf;
    tt_ready_bridge *bridge; /* eBPF ready instants onto the probe's client connections */
    tt_recdir_wire wire;
    char wire_path[4200];
    const char *bpf_skipped; /* why the eBPF server vantage was not taken (NULL: taken or not asked) */
    char bpf_err[256];
} run_state;

static int sink_init(vantage_sink *v, bool keep_text, const char *dir, const char *file)
{
    tt_tracker_options topt = {.keep_text = keep_text};
    v->tracker = tt_tracker_new(&topt);
    if (dir) snprintf(v->synth_path, sizeof v->synth_path, "%s/%s", dir, file);
    return v->tracker ? 0 : -1;
}

static bool sink_close(vantage_sink *v)
{
    bool ok = !v->synth_failed;
    if (v->synth && tt_synth_close(v->synth) < 0) ok = false;
    v->synth = NULL;
    return ok;
}

/* One analysed vantage for the report. */
typedef struct run_analysis {
    tt_analysis a;
    tt_reasm_stats rs;
    char input[4300];
    bool filled;
} run_analysis;

static int analysis_of(run_analysis *ra, tt_tracker *t, tt_vantage v, const char *input, const tt_probe_stats *ps,
                       const tt_bpf_stats *bs, bool text)
{
    ra->rs.connections = tt_tracker_connections(t);
    ra->rs.gaps = bs ? bs->gaps : ps->gaps;
    ra->rs.gap_bytes = bs ? bs->gap_bytes : ps->gap_bytes;
    snprintf(ra->input, sizeof ra->input, "%s", input);
    ra->a = (tt_analysis){
        .command = "run",
        .input = ra->input,
        .vantage = v,
        .clock = TT_CLOCK_MONOTONIC,
        .reasm = &ra->rs,
        .has_drops = true,
        .dropped_records = bs ? bs->rb_fail : ps->drop_records,
        .dropped_bytes = bs ? bs->rb_fail_bytes : ps->drop_bytes,
        .with_text = text,
    };
    const double pct[1] = {99};
    int rc = tt_analysis_fill(&ra->a, t, pct, 1);
    ra->filled = true;
    return rc;
}

static void analysis_free(run_analysis *ra)
{
    if (ra->filled) tt_analysis_release(&ra->a);
}

static void write_probe_stats(tt_jw *w, const tt_probe_stats *p)
{
    tt_jw_object_begin(w, "probe");
    tt_jw_uint(w, "processes", p->processes);
    tt_jw_uint(w, "rings", p->rings);
    tt_jw_uint(w, "bad_rings", p->bad_rings);
    tt_jw_uint(w, "records", p->records);
    tt_jw_uint(w, "bad_records", p->bad_records);
    tt_jw_uint(w, "connections", p->connections);
    tt_jw_uint(w, "data_bytes", p->data_bytes);
    tt_jw_uint(w, "gaps", p->gaps);
    tt_jw_uint(w, "gap_bytes", p->gap_bytes);
    tt_jw_uint(w, "ring_full_drops", p->drop_records);
    tt_jw_uint(w, "ring_full_drop_bytes", p->drop_bytes);
    tt_jw_uint(w, "unfinished_bytes", p->unfinished_bytes);
    tt_jw_uint(w, "untracked_fds", p->untracked_fds);
    tt_jw_object_end(w);
}

static int write_run_manifest(const char *dir, const run_state *st, const tt_recdir_clock *clock, char **cmd_argv,
                              pid_t child, int exit_status, const tt_probe_stats *ps, const tt_bpf_stats *bs)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    tt_jw w;
    FILE *out = tt_recdir_manifest_open(path, &w, "run", clock);
    if (!out) return -1;
    tt_jw_array_begin(&w, "argv");
    for (int i = 0; cmd_argv[i]; i++) tt_jw_str(&w, NULL, cmd_argv[i]);
    tt_jw_array_end(&w);
    tt_jw_array_begin(&w, "pids");
    tt_jw_uint(&w, NULL, (uint64_t)child);
    tt_jw_array_end(&w);
    tt_jw_int(&w, "exit_status", exit_status);
    tt_jw_object_begin(&w, "files");
    tt_jw_str_or_null(&w, "client", st->client.synth_path[0] && access(st->client.synth_path, F_OK) == 0 ? "client.pcap" : NULL);
    bool server_file = access(st->ebpf_server.synth_path, F_OK) == 0 || access(st->server.synth_path, F_OK) == 0;
    tt_jw_str_or_null(&w, "server", server_file ? "server.pcap" : NULL);
    tt_jw_str_or_null(&w, "client_tls", access(st->client_tls.synth_path, F_OK) == 0 ? "client_tls.pcap" : NULL);
    tt_jw_str_or_null(&w, "server_tls", access(st->server_tls.synth_path, F_OK) == 0 ? "server_tls.pcap" : NULL);
    tt_jw_str_or_null(&w, "wire", st->wire.skipped[0] ? NULL : "wire.pcap");
    tt_jw_str_or_null(&w, "wire_skipped", st->wire.skipped[0] ? st->wire.skipped : NULL);
    tt_jw_str_or_null(&w, "server_skipped", st->bpf_skipped);
    tt_jw_object_end(&w);
    tt_jw_object_begin(&w, "drops");
    write_probe_stats(&w, ps);
    if (bs) {
        tt_jw_object_begin(&w, "ebpf");
        tt_jw_uint(&w, "records", bs->records);
        tt_jw_uint(&w, "gaps", bs->gaps);
        tt_jw_uint(&w, "gap_bytes", bs->gap_bytes);
        tt_jw_uint(&w, "ringbuf_drops", bs->rb_fail);
        tt_jw_uint(&w, "ringbuf_drop_bytes", bs->rb_fail_bytes);
        tt_jw_uint(&w, "truncated", bs->truncated);
        tt_jw_uint(&w, "truncated_bytes", bs->truncated_bytes);
        tt_jw_object_end(&w);
    } else {
        tt_jw_null(&w, "ebpf");
    }
    tt_recdir_wire_stats_json(&w, "pcap", &st->wire);
    tt_jw_object_end(&w);
    return tt_recdir_manifest_close(out, &w);
}

static int parse_args(int argc, char **argv, run_options *o, int *cmd_index)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},     {"server-pid", required_argument, NULL, 'p'},
        {"server-port", required_argument, NULL, 'P'}, {"iface", required_argument, NULL, 'i'},
        {"report", required_argument, NULL, 'r'},     {"json", no_argument, NULL, 'j'},
        {"events", no_argument, NULL, 'e'},           {"text", no_argument, NULL, 't'},
        {"ring-kb", required_argument, NULL, 'k'},    {"help", no_argument, NULL, 'h'},
        {"bench-result", required_argument, NULL, 'B'}, {"bench-format", required_argument, NULL, 'F'},
        {"bench-id-prefix", required_argument, NULL, 'I'}, {"perfetto", required_argument, NULL, 'E'},
        {NULL, 0, NULL, 0},
    };
    uint32_t v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:o:i:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o->record_dir = optarg; break;
        case 'i': o->iface = optarg; break;
        case 'r': o->report_path = optarg; break;
        case 'j': o->json = true; break;
        case 'e': o->events = true; break;
        case 't': o->text = true; break;
        case 'p':
            if (!tt_parse_u32(optarg, 0x7fffffff, &v) || v == 0) {
                fprintf(stderr, "tokentap run: --server-pid wants a process id, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            o->server_pid = v;
            break;
        case 'P':
            if (!tt_parse_u32(optarg, 65535, &v) || v == 0) {
                fprintf(stderr, "tokentap run: --server-port wants 1..65535, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            o->server_port = (uint16_t)v;
            break;
        case 'k':
            if (!tt_parse_u32(optarg, TT_PROBE_MAX_RING >> 10, &v) || v < (TT_PROBE_MIN_RING >> 10)) {
                fprintf(stderr, "tokentap run: --ring-kb wants %u..%u, got '%s'\n", TT_PROBE_MIN_RING >> 10,
                        TT_PROBE_MAX_RING >> 10, optarg);
                return TT_EXIT_USAGE;
            }
            o->ring_kb = v;
            break;
        case 'B': o->bench_path = optarg; break;
        case 'I': o->bench_id_prefix = optarg; break;
        case 'E': o->perfetto_path = optarg; break;
        case 'F': {
            int f = tt_bench_format_parse(optarg);
            if (f < 0) {
                fprintf(stderr, "tokentap run: --bench-format: unknown format '%s' (vllm, genai-perf, aiperf, "
                                "guidellm, sglang, llmperf)\n", optarg);
                return TT_EXIT_USAGE;
            }
            o->bench_format = (tt_bench_format)f;
            break;
        }
        case 'h': usage(stdout); return TT_EXIT_OK;
        case ':':
            fprintf(stderr, "tokentap run: %s needs a value (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        default:
            fprintf(stderr, "tokentap run: unknown option '%s' (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "tokentap run: no command to run (try --help)\n");
        return TT_EXIT_USAGE;
    }
    if ((o->bench_path || o->perfetto_path) && o->events) {
        fprintf(stderr, "tokentap run: --bench-result and --perfetto do not apply to --events\n");
        return TT_EXIT_USAGE;
    }
    if ((o->bench_format != TT_BENCH_AUTO || o->bench_id_prefix) && !o->bench_path) {
        fprintf(stderr, "tokentap run: --bench-format and --bench-id-prefix need --bench-result\n");
        return TT_EXIT_USAGE;
    }
    *cmd_index = optind;
    return -1;
}

/* Whether this process's CLOCK_MONOTONIC is the kernel's own (no time
 * namespace offset): then eBPF's instants and the probe's are on one clock. */
static bool monotonic_is_the_kernels(void)
{
    FILE *f = fopen("/proc/self/timens_offsets", "r");
    if (!f) return true; /* no time namespaces in this kernel */
    char name[32];
    long long sec = 0, nsec = 0;
    bool zero = true;
    while (fscanf(f, "%31s %lld %lld", name, &sec, &nsec) == 3)
        if (!strcmp(name, "monotonic") && (sec || nsec)) zero = false;
    fclose(f);
    return zero;
}

/* Start the root-only vantages, or say why they are not taken. */
static void start_root_vantages(run_state *st, const run_options *o, const char *ring_dir, bool keep_text)
{
    bool asked = o->server_pid || o->server_port;
    if (geteuid() != 0) {
        fprintf(stderr, "tokentap run: not root: the server vantage (eBPF) and the wire vantage (libpcap) are not "
                        "taken; reporting the client vantage\n");
        st->bpf_skipped = "not root";
        snprintf(st->wire.skipped, sizeof st->wire.skipped, "not root: no wire capture");
        return;
    }
    if (!asked) {
        st->bpf_skipped = "no --server-pid or --server-port";
        snprintf(st->wire.skipped, sizeof st->wire.skipped, "no --server-pid or --server-port");
        return;
    }
    tt_bpf_options bopt = {.tgid = o->server_pid, .port = o->server_port};
    /* With --server-port the client's own sockets pass the port filter too:
     * the kernel's ready instants at them go onto the probe's connections
     * (the client queue wait), unless this process's CLOCK_MONOTONIC is
     * offset from the kernel's (a time namespace), which eBPF stamps with. */
    if (o->server_port && monotonic_is_the_kernels()) {
        st->bridge = tt_ready_bridge_new(sink_chunk, &st->client);
        st->client.learn = st->bridge;
    }
    st->bpf = tt_bpf_source_new(sink_chunk, &st->ebpf_server, st->bridge ? tt_ready_bridge_chunk : NULL, st->bridge);
    if (!st->bpf || tt_bpf_source_start(st->bpf, &bopt, st->bpf_err, sizeof st->bpf_err) < 0) {
        if (!st->bpf) snprintf(st->bpf_err, sizeof st->bpf_err, "out of memory");
        fprintf(stderr, "tokentap run: server vantage not taken: %s\n", st->bpf_err);
        st->bpf_skipped = st->bpf_err;
        tt_bpf_source_free(st->bpf);
        st->bpf = NULL;
    }
    snprintf(st->wire_path, sizeof st->wire_path, "%s/wire.pcap", o->record_dir ? o->record_dir : ring_dir);
    tt_recdir_wire_start(&st->wire, st->wire_path, o->iface, o->server_port);
    if (st->wire.skipped[0]) fprintf(stderr, "tokentap run: wire vantage not taken: %s\n", st->wire.skipped);
    (void)keep_text;
}

/* Without the eBPF vantage nothing needs the probe's chunks before CMD
 * exits: the collector holds its records (up to this many bytes, past
 * which the oldest are delivered: tt_probe_source_defer) and
 * looks at the rings every DEFERRED_PAUSE_MS, taking records out only of
 * a ring a quarter full, so that it leaves CMD's CPUs alone while it runs
 * (docs/probe.md). A ring that small polls keep up with is needed: at
 * ~80 MB/s three quarters of 4 MiB fill in 40 ms. */
#define DEFERRED_HOLD_MAX (8u << 20)
#define DEFERRED_PAUSE_MS 10
#define DEFERRED_MIN_RING (4u << 20)

/* The ring size in bytes CMD's processes get (--ring-kb, else the
 * environment's TOKENTAP_PROBE_RING_KB), as the probe computes it. */
static uint64_t ring_bytes_of(const run_options *o)
{
    char kb[32];
    if (o->ring_kb) snprintf(kb, sizeof kb, "%u", (unsigned)o->ring_kb);
    return tt_probe_ring_bytes(o->ring_kb ? kb : getenv(TT_PROBE_RING_ENV));
}

/* How often the collector makes sure the spare rings are there. */
#define SPARE_CHECK_NS (20ull * 1000 * 1000)

/* Poll every source until CMD exits; returns its wait status. */
static int collect(run_state *st, pid_t child, bool deferred, tt_ring_dir *rings, uint64_t ring_bytes)
{
    int wstatus = 0;
    char err[256];
    uint64_t spare_checked = tt_clock_ns(CLOCK_MONOTONIC);
    for (;;) {
        pid_t w = waitpid(child, &wstatus, WNOHANG);
        if (w == child) break;
        if (w < 0 && errno != EINTR) {
            wstatus = 0;
            break;
        }
        /* Drain in batches: a collector reading right behind a producer
         * takes the ring's lines it writes next away from it at every
         * record (docs/probe.md). The pause is skipped while a ring is a
         * quarter full, so a flood is drained as fast as it comes. */
        size_t n = tt_probe_source_poll(st->probe);
        bool pressing = tt_probe_source_last_fill(st->probe) >= TT_PROBE_SOURCE_PRESSING_PERMILLE;
        int pause_ms = pressing ? 0 : deferred ? DEFERRED_PAUSE_MS : n ? 1 : 2;
        if (st->bpf && tt_bpf_source_poll(st->bpf, pause_ms ? pause_ms + (n ? 0 : 3) : 0, err, sizeof err) < 0) {
            fprintf(stderr, "tokentap run: server vantage: %s\n", err);
            tt_bpf_source_free(st->bpf);
            st->bpf = NULL;
        }
        tt_recdir_wire_drain(&st->wire);
        uint64_t now = tt_clock_ns(CLOCK_MONOTONIC);
        if (now - spare_checked >= SPARE_CHECK_NS) { /* nothing to do without a huge-page tmpfs */
            (void)tt_ring_dir_keep_spare(rings, ring_bytes); /* none: the next process makes its own */
            spare_checked = now;
        }
        if (pause_ms && !st->bpf) {
            struct timespec pause = {0, pause_ms * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    return wstatus;
}

static int exit_status_of(int wstatus)
{
    if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
    return TT_EXIT_INTERNAL;
}

/* The benchmark's result file CMD wrote, read now that it exited. False
 * (said on stderr) when it cannot be used. */
static bool load_bench(const run_options *o, tt_bench_result *bench)
{
    char err[512];
    if (tt_bench_load(o->bench_path, o->bench_format, bench, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap run: --bench-result %s: %s; the report is made without it\n", o->bench_path, err);
        return false;
    }
    if (o->bench_id_prefix && tt_bench_set_id_prefix(bench, o->bench_id_prefix) != 0) {
        fprintf(stderr, "tokentap run: out of memory reading %s\n", o->bench_path);
        tt_bench_result_free(bench);
        return false;
    }
    return true;
}

/* The Perfetto trace of the breakdown b; false (said) when not written. */
static bool write_perfetto(const char *path, const tt_breakdown *b)
{
    FILE *pf = tt_open_output(path);
    if (!pf) {
        fprintf(stderr, "tokentap run: cannot write %s: %s\n", path, strerror(errno));
        return false;
    }
    tt_report_perfetto(pf, b);
    if (fflush(pf) != 0 || ferror(pf) || (pf != stdout && fclose(pf) != 0)) {
        fprintf(stderr, "tokentap run: writing %s failed: %s\n", path, strerror(errno));
        return false;
    }
    return true;
}

/* The report: every vantage that saw a request (the client's always);
 * joined into the breakdown (as `analyze DIR` does) with a benchmark file
 * or more than one vantage. */
static bool write_report(const run_options *o, run_state *st, char **cmd_argv, const tt_probe_stats *ps,
                         const tt_bpf_stats *bs, int64_t offset)
{
    char input[512] = "";
    size_t used = 0;
    for (int i = 0; cmd_argv[i] && used < sizeof input - 1; i++)
        used += (size_t)snprintf(input + used, sizeof input - used, "%s%s", i ? " " : "", cmd_argv[i]);
    if (used >= sizeof input) used = sizeof input - 1;
    run_analysis ra[6];
    memset(ra, 0, sizeof ra);
    const tt_analysis *as[6];
    size_t n = 0, n_reqs = 0;
    bool ok = true;
    struct { vantage_sink *sink; tt_vantage v; bool always; } order[5] = {
        {&st->ebpf_server, TT_VANTAGE_SERVER, false},
        {&st->server, TT_VANTAGE_SERVER, false},
        {&st->client, TT_VANTAGE_CLIENT, true},
        {&st->client_tls, TT_VANTAGE_CLIENT_TLS, false},
        {&st->server_tls, TT_VANTAGE_SERVER_TLS, false},
    };
    for (int i = 0; i < 5; i++) {
        size_t nr;
        tt_tracker_requests(order[i].sink->tracker, &nr);
        if (!nr && !order[i].always) continue;
        bool from_bpf = order[i].sink == &st->ebpf_server;
        if (analysis_of(&ra[n], order[i].sink->tracker, order[i].v, input, ps, from_bpf ? bs : NULL, o->text) < 0) {
            ok = false;
            continue;
        }
        n_reqs += ra[n].a.n_reqs;
        as[n] = &ra[n].a;
        n++;
    }
    /* The wire: the capture read back like `tokentap analyze` reads one,
     * converted to CLOCK_MONOTONIC with the offset sampled at the start. */
    tt_cmd_input wire_in = {0};
    if (!st->wire.skipped[0] && st->wire_path[0]) {
        static const double pct99[1] = {99};
        tt_cmd_input_options wopt = {.command = "run", .keep_text = o->text, .have_offset = true,
                                     .mono_offset_ns = offset, .pct = pct99, .n_pct = 1};
        int rc = tt_cmd_input_load(st->wire_path, &wopt, &wire_in);
        if ((rc == TT_EXIT_OK || rc == TT_EXIT_DAMAGED) && wire_in.n == 1) {
            n_reqs += wire_in.analyses[0]->n_reqs;
            as[n++] = wire_in.analyses[0];
        }
    }
    tt_bench_result bench = {0};
    bool have_bench = o->bench_path && load_bench(o, &bench);
    if (o->bench_path && !have_bench) ok = false;
    bool joined = n_reqs && !o->events && (have_bench || n > 1);
    tt_breakdown b;
    bool built = false;
    if (n_reqs && (joined || o->perfetto_path)) {
        /* every vantage here is on CLOCK_MONOTONIC (the wire converted) */
        tt_join_options jopt = {.clock_is_mono = true, .has_wall_to_mono = true, .wall_to_mono_ns = offset};
        if (tt_breakdown_build(&b, as, n, have_bench ? &bench : NULL, &jopt) < 0) {
            fprintf(stderr, "tokentap run: out of memory joining requests\n");
            joined = false;
            ok = false;
        } else {
            built = true;
        }
    }
    FILE *out = NULL;
    if (n_reqs == 0) {
        fprintf(stderr, "tokentap run: no HTTP/1.1 exchange seen at any vantage: no report\n");
    } else if (!(out = tt_open_output(o->report_path))) {
        fprintf(stderr, "tokentap run: cannot write %s: %s\n", o->report_path, strerror(errno));
        ok = false;
    } else {
        tt_report_vantages(out, input, as, n, joined ? &b : NULL, o->json, o->events);
        if (fflush(out) != 0 || ferror(out) || (out != stdout && fclose(out) != 0)) {
            fprintf(stderr, "tokentap run: writing %s failed: %s\n", o->report_path ? o->report_path : "stdout",
                    strerror(errno));
            ok = false;
        }
    }
    if (built && o->perfetto_path && !write_perfetto(o->perfetto_path, &b)) ok = false;
    if (built) tt_breakdown_free(&b);
    if (have_bench) tt_bench_result_free(&bench);
    for (size_t k = 0; k < 6; k++) analysis_free(&ra[k]);
    tt_cmd_input_free(&wire_in);
    return ok;
}

int tt_cmd_run(int argc, char **argv)
{
    run_options o = {.iface = "lo"};
    int cmd_index = 0;
    int rc = parse_args(argc, argv, &o, &cmd_index);
    if (rc >= 0) return rc;
    char **cmd_argv = argv + cmd_index;

    char probe_path[4096];
    tt_ring_dir rings;
    const char *ring_dir = rings.path;
    if (tt_probe_library_path(probe_path, sizeof probe_path) < 0) {
        fprintf(stderr, "tokentap run: the probe library %s is missing (build it with make, or set TOKENTAP_PROBE)\n",
                probe_path);
        return TT_EXIT_INPUT;
    }
    if (o.record_dir && mkdir(o.record_dir, 0700) < 0) {
        fprintf(stderr, "tokentap run: cannot create %s: %s\n", o.record_dir, strerror(errno));
        return TT_EXIT_OUTPUT;
    }
    if (tt_ring_dir_make(&rings) < 0) {
        fprintf(stderr, "tokentap run: cannot create the ring directory %s: %s\n", ring_dir, strerror(errno));
        return TT_EXIT_INPUT;
    }
    char *preload = tt_run_preload_value(probe_path);
    run_state st;
    memset(&st, 0, sizeof st);
    if (!preload || sink_init(&st.client, o.text, o.record_dir, "client.pcap") < 0 ||
        sink_init(&st.server, o.text, o.record_dir, "server.pcap") < 0 ||
        sink_init(&st.client_tls, o.text, o.record_dir, "client_tls.pcap") < 0 ||
        sink_init(&st.server_tls, o.text, o.record_dir, "server_tls.pcap") < 0 ||
        sink_init(&st.ebpf_server, o.text, o.record_dir, "server.pcap") < 0) {
        fprintf(stderr, "tokentap run: out of memory\n");
        tt_ring_dir_remove(&rings);
        return TT_EXIT_INTERNAL;
    }
    start_root_vantages(&st, &o, ring_dir, o.text);
    /* With the eBPF server vantage, a server socket of CMD's is that vantage's. */
    st.probe = tt_probe_source_new(sink_chunk, &st.client, st.bpf ? NULL : sink_chunk, &st.server, sink_chunk, &st.client_tls,
                                   sink_chunk, &st.server_tls);
    char err[512];
    if (!st.probe || tt_probe_source_open_dir(st.probe, ring_dir, true, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap run: %s\n", st.probe ? err : "out of memory");
        tt_ring_dir_remove(&rings);
        return TT_EXIT_INTERNAL;
    }

    /* TSC stamps unless the user asked for CLOCK_MONOTONIC (any other value) */
    const char *clock_wanted = getenv(TT_PROBE_CLOCK_ENV);
    bool stamp_tsc = (!clock_wanted || !strcmp(clock_wanted, "tsc")) && tt_probe_source_use_tsc(st.probe);
    uint64_t ring_bytes = ring_bytes_of(&o);
    (void)tt_ring_dir_keep_spare(&rings, ring_bytes); /* for CMD's first process that records */
    tt_recdir_clock clock;
    clock.start_offset = tt_recdir_sample_offset(&clock.start_mono, &clock.start_wall);
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_quit, old_term, old_hup;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGQUIT, &sa, &old_quit);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "tokentap run: fork: %s\n", strerror(errno));
        tt_ring_dir_remove(&rings);
        return TT_EXIT_INTERNAL;
    }
    if (child == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGHUP, &old_hup, NULL);
        tt_run_exec(cmd_argv, preload, ring_dir, o.ring_kb, stamp_tsc);
    }
    run_child_pid = child;
    free(preload);
    bool deferred = !st.bpf && ring_bytes >= DEFERRED_MIN_RING;
    if (deferred) tt_probe_source_defer(st.probe, DEFERRED_HOLD_MAX);
    int wstatus = collect(&st, child, deferred, &rings, ring_bytes);
    int status = exit_status_of(wstatus);
    run_child_pid = 0;

    /* eBPF first: its ready instants must reach the probe's connections
     * before the probe's finish releases them */
    if (st.bpf) tt_bpf_source_poll(st.bpf, 0, err, sizeof err);
    tt_probe_source_finish(st.probe);
    if (st.bpf) tt_bpf_source_finish(st.bpf);
    clock.end_offset = tt_recdir_sample_offset(&clock.end_mono, &clock.end_wall);
    bool failed = tt_recdir_wire_stop(&st.wire) < 0;
    tt_probe_stats ps;
    tt_probe_source_stats(st.probe, &ps);
    tt_bpf_stats bs;
    if (st.bpf) tt_bpf_source_stats(st.bpf, &bs);
    fprintf(stderr,
            "tokentap run: ");
    tt_run_print_command(stderr, cmd_argv);
    fprintf(stderr,
            " exited %d; probe: %llu process images, %llu connections, %llu records, %llu bytes; ring full: %llu records "
            "(%llu bytes) dropped; %llu gaps (%llu bytes)\n",
            status, (unsigned long long)ps.rings, (unsigned long long)ps.connections,
            (unsigned long long)ps.records, (unsigned long long)ps.data_bytes, (unsigned long long)ps.drop_records,
            (unsigned long long)ps.drop_bytes, (unsigned long long)ps.gaps, (unsigned long long)ps.gap_bytes);
    if (st.bridge) {
        uint64_t forwarded, dropped;
        tt_ready_bridge_counts(st.bridge, &forwarded, &dropped);
        fprintf(stderr, "tokentap run: client ready instants (eBPF): %llu onto the probe's connections, %llu for "
                        "connections it did not have\n",
                (unsigned long long)forwarded, (unsigned long long)dropped);
    }
    if (ps.bad_rings || ps.bad_records || ps.unfinished_bytes)
        fprintf(stderr, "tokentap run: probe: %llu rings and %llu records refused as inconsistent, %llu bytes unfinished\n",
                (unsigned long long)ps.bad_rings, (unsigned long long)ps.bad_records,
                (unsigned long long)ps.unfinished_bytes);

    if (!write_report(&o, &st, cmd_argv, &ps, st.bpf ? &bs : NULL, clock.start_offset)) failed = true;
    /* every sink closed, whatever the others did */
    vantage_sink *sinks[] = {&st.client, &st.server, &st.client_tls, &st.server_tls, &st.ebpf_server};
    bool synth_ok = true;
    for (size_t i = 0; i < sizeof sinks / sizeof *sinks; i++) synth_ok = sink_close(sinks[i]) && synth_ok;
    if (o.record_dir) {
        if (!synth_ok ||
            write_run_manifest(o.record_dir, &st, &clock, cmd_argv, child, status, &ps, st.bpf ? &bs : NULL) < 0) {
            fprintf(stderr, "tokentap run: writing %s failed\n", o.record_dir);
            failed = true;
        }
    }
    tt_probe_source_free(st.probe);
    tt_bpf_source_free(st.bpf);
    tt_ready_bridge_free(st.bridge);
    tt_ring_dir_remove(&rings);
    tt_tracker_free(st.client.tracker);
    tt_tracker_free(st.server.tracker);
    tt_tracker_free(st.client_tls.tracker);
    tt_tracker_free(st.server_tls.tracker);
    tt_tracker_free(st.ebpf_server.tracker);
    (void)failed;
    return status;
}
