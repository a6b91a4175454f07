/* watch.c - `tokentap watch`: live server and client vantages from eBPF,
 * the same connection tracker and report as analyze. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/privileges.h"
#include "core/util.h"
#include "cmd/cmd_input.h"
#include "cmd/commands.h"
#include "metrics/metrics.h"
#include "report/report.h"
#include "source/bpf_source.h"
#include "cmd/watch_live.h"
#include "export/metrics_http.h"
#include "source/tls_attach.h"
#include "timeline/conn_tracker.h"

#define WATCH_MAX_PIDS 64
/* How often, at most, the metrics' tracer gauges are refreshed while records flow. */
#define WATCH_EXPORT_EVERY_NS (100 * 1000 * 1000ull)

static volatile sig_atomic_t watch_stop, watch_reopen_log;

static void on_signal(int sig) { watch_stop = 1; }
static void on_hangup(int sig) { watch_reopen_log = 1; }

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap watch [--pid PID]... [--comm NAME] [--cgroup DIR] [--port PORT]\n"
            "                      [--duration S] [--interval S] [--vantage V] [OPTIONS]\n"
            "\n"
            "Trace the TCP reads and writes of processes with eBPF (root) and time every\n"
            "token event where the server wrote it (server vantage) or the client read it\n"
            "(client vantage). A line per finished request as it ends (up to 0.1 s late: the\n"
            "ring buffer is read on a timer, not on every record), a summary line every\n"
            "--interval seconds; the full report when the duration is over or on Ctrl-C.\n"
            "TLS: uprobes on OpenSSL (every libssl the traced processes map, the system's,\n"
            "or OpenSSL linked into their executable) and on Go's crypto/tls give the\n"
            "plaintext of each read and write as the vantages server_tls and client_tls\n"
            "(the end that accepted, the end that connected) beside the socket's\n"
            "ciphertext; the processes are not restarted (TOKENTAP_NO_TLS=1: none;\n"
            "bpf/README.md).\n"
            "Privileges: once the programs are attached, the metrics socket bound and the\n"
            "-o file opened, watch sets no_new_privs and, in every thread, keeps only the\n"
            "capabilities it still needs (the rest leave the bounding set too):\n"
            "cap_sys_admin, cap_sys_ptrace and cap_dac_read_search to attach TLS uprobes to\n"
            "programs started later; none with TOKENTAP_NO_TLS=1 (cap_bpf alone on a kernel\n"
            "before 6.5 with unprivileged eBPF disabled). A line on stderr (not with -q) says\n"
            "what it kept.\n"
            "\n"
            "filters (applied in the kernel before any byte is copied; all given must match;\n"
            "default: every process, every TCP socket):\n"
            "  --pid PID            this process and its descendants: those alive at start and\n"
            "                       every process they fork later (repeatable: any of them)\n"
            "  --comm NAME          only processes named NAME (/proc/PID/comm, 1 to 15 bytes)\n"
            "  --cgroup DIR         only tasks in this cgroup v2 directory or below it\n"
            "                       (e.g. /sys/fs/cgroup/system.slice/vllm.service)\n"
            "  --port PORT          only sockets with this local or remote port\n"
            "options:\n"
            "  --duration S         stop after S seconds (default: until SIGINT/SIGTERM)\n"
            "  --interval S         a summary line every S seconds (default 5; 0: none)\n"
            "  --vantage V          report server, client or both (default both; client only\n"
            "                       when it saw a request)\n"
            "  --json               the JSON document (docs/formats.md) instead of text\n"
            "  --events             list every framed event with its instant (with --json: JSON)\n"
            "  --text               include generated text\n"
            "  -o, --output FILE    write the report to FILE (mode 0600) instead of stdout;\n"
            "                       created before the privileges are dropped\n"
            "  --metrics HOST:PORT  serve /metrics for Prometheus (text 0.0.4, or OpenMetrics\n"
            "                       1.0 when asked) on HOST:PORT (PORT alone: 127.0.0.1);\n"
            "                       OpenTelemetry GenAI histograms per vantage and model,\n"
            "                       tokentap's own counters (docs/metrics.md)\n"
            "  --user NAME          after setting up, become user NAME (or a uid) and its\n"
            "                       primary group, no other group, keeping the capabilities\n"
            "                       above\n"
            "  --keep-requests N    finished requests per vantage kept for the final report\n"
            "                       (default: all; with --metrics 100): older ones are\n"
            "                       counted, exported and printed, then let go\n"
            "  --max-connections N  connections followed at once per vantage (default 65536);\n"
            "                       past it the least recently active is evicted: what it had\n"
            "                       begun ends incomplete (evicted), its next request is found\n"
            "                       again\n"
            "  --max-memory MB      heap budget: over it, the kept requests are let go, then\n"
            "                       connections evicted, least recently active first\n"
            "                       (default: none; the rings and the program are extra)\n"
            "  --log FILE           the per-request and summary lines into FILE (appended,\n"
            "                       created 0600) instead of stderr; SIGHUP reopens it (log\n"
            "                       rotation); a failed write (full disk) loses lines,\n"
            "                       counted, and tracing and metrics go on\n"
            "  -q, --quiet          no per-request or summary lines while watching\n"
            "  -h, --help           this help\n"
            "\n"
            "exit status: 0 ok; 2 bad usage; 3 eBPF could not be set up (or a filter is\n"
            "invalid: no such pid, not a cgroup v2 directory), --user names no user, or\n"
            "the privileges could not be dropped; 4 no HTTP exchange seen; 6 output not\n"
            "written.\n");
}

/* A line per TLS library attached since the last call (a traced process
 * started a program: its libssl, or its own executable); *said counts
 * those already said. quiet: counted, not printed. */
static void say_new_tls_libraries(const tt_bpf_source *src, size_t *said, bool quiet)
{
    const tt_tls_attach *t = tt_bpf_source_tls(src);
    if (!t) return;
    for (; *said < t->n_libs; (*said)++) {
        const tt_tls_lib *lib = &t->libs[*said];
        if (quiet || !lib->functions) continue;
        fprintf(stderr, "tokentap watch: TLS library attached (pid %u): %s%s%s\n", lib->pid, lib->path,
                lib->note[0] ? ": " : "", lib->note);
    }
}

/* Once tracing is set up: no_new_privs, only the capabilities a running
 * watch still needs (core/privileges.h: those to attach TLS uprobes to
 * programs started later, unless TOKENTAP_NO_TLS), user when not NULL, in
 * every thread. One line saying what was kept unless quiet. 0, or -1 after
 * saying why (the process is then part way: the caller must stop). */
static int drop_privileges(const tt_bpf_source *src, const tt_priv_user *user, bool quiet)
{
    bool follows_tls = tt_bpf_source_tls(src) && !tt_env_flag("TOKENTAP_NO_TLS");
    tt_caps keep = tt_priv_watch_needs_here(follows_tls);
    tt_priv_result r;
    char err[256], caps[512];
    if (tt_priv_drop(keep, user, &r, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap watch: %s\n", err);
        return -1;
    }
    if (quiet) return 0;
    fprintf(stderr,
            "tokentap watch: privileges dropped: uid %u gid %u%s%s%s, no_new_privs, "
            "capabilities kept: %s%s%s%s\n",
            (unsigned)r.state.uid[0], (unsigned)r.state.gid[0], user ? " (" : "", user ? user->name : "",
            user ? ")" : "", tt_caps_format(r.kept, caps, sizeof caps),
            follows_tls ? " (to attach TLS uprobes to programs started later)" : "",
            r.kept & TT_CAP_BIT(CAP_BPF) ? " (bpf() map reads on this kernel)" : "",
            r.bounding_dropped ? "" : "; bounding set left as it was (no cap_setpcap to change it)");
    return 0;
}

/* The report of one vantage; returns the number of requests. */
static size_t report_vantage(FILE *out, watch_vantage *w, const tt_bpf_stats *bs, bool json, bool events, bool text,
                             bool *failed)
{
    tt_tracker *t = w->tracker;
    tt_vantage v = w->vantage;
    tt_reasm_stats rs = {
        .connections = tt_tracker_connections(t), .gaps = bs->vantage_gaps[v], .gap_bytes = bs->vantage_gap_bytes[v],
    };
    tt_analysis a = {
        .command = "watch",
        .input = "(eBPF socket syscalls)",
        .vantage = v,
        .clock = TT_CLOCK_MONOTONIC,
        .reasm = &rs,
        .with_text = text,
    };
    const double pct[1] = {99};
    if (tt_analysis_fill_released(&a, t, pct, 1, w->release ? &w->digest : NULL) < 0) *failed = true;
    else tt_report_write(out, &a, json, events);
    tt_analysis_release(&a);
    return a.n_reqs;
}

int tt_cmd_watch(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"pid", required_argument, NULL, 'p'},   {"port", required_argument, NULL, 'P'},
        {"duration", required_argument, NULL, 'd'}, {"json", no_argument, NULL, 'j'},
        {"events", no_argument, NULL, 'e'},      {"text", no_argument, NULL, 't'},
        {"output", required_argument, NULL, 'o'}, {"quiet", no_argument, NULL, 'q'},
        {"vantage", required_argument, NULL, 'V'}, {"help", no_argument, NULL, 'h'},
        {"comm", required_argument, NULL, 'c'},  {"cgroup", required_argument, NULL, 'g'},
        {"interval", required_argument, NULL, 'I'}, {"ring-kb", required_argument, NULL, 'R'},
        {"metrics", required_argument, NULL, 'M'}, {"user", required_argument, NULL, 'U'},
        {"keep-requests", required_argument, NULL, 'K'}, {"max-connections", required_argument, NULL, 'C'},
        {"max-memory", required_argument, NULL, 'X'}, {"log", required_argument, NULL, 'L'},
        {NULL, 0, NULL, 0},
    };
    tt_bpf_options bopt = {0};
    uint32_t pids[WATCH_MAX_PIDS];
    double duration_s = 0, interval_s = 5;
    bool json = false, events = false, text = false, quiet = false;
    bool want_server = true, want_client = true;
    const char *output = NULL, *metrics_listen = NULL, *user_spec = NULL, *log_path = NULL;
    bool keep_given = false;
    watch_limits lim = {.keep_requests = SIZE_MAX};
    size_t max_connections = 65536;
    uint32_t v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (!tt_parse_u32(optarg, 0x7fffffff, &v) || v == 0) {
                fprintf(stderr, "tokentap watch: --pid wants a process id, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            if (bopt.n_tgids == WATCH_MAX_PIDS) {
                fprintf(stderr, "tokentap watch: at most %d --pid\n", WATCH_MAX_PIDS);
                return TT_EXIT_USAGE;
            }
            pids[bopt.n_tgids++] = v;
            break;
        case 'P':
            if (!tt_parse_u32(optarg, 65535, &v) || v == 0) {
                fprintf(stderr, "tokentap watch: --port wants 1..65535, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            bopt.port = (uint16_t)v;
            break;
        case 'c':
            if (!optarg[0] || strlen(optarg) > 15) {
                fprintf(stderr, "tokentap watch: --comm wants a process name of 1 to 15 bytes, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            bopt.comm = optarg;
            break;
        case 'g': bopt.cgroup = optarg; break;
        case 'R':
            /* Hidden, for tests: the ring-buffer size in KiB. */
            if (!tt_parse_u32(optarg, 1u << 20, &v) || v < 4 || (v & (v - 1))) {
                fprintf(stderr, "tokentap watch: --ring-kb wants a power of two from 4 to 1048576, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            bopt.ring_bytes = v * 1024;
            break;
        case 'd':
            if (!tt_parse_seconds(optarg, &duration_s)) {
                fprintf(stderr, "tokentap watch: --duration wants seconds > 0, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            break;
        case 'I':
            if (!strcmp(optarg, "0")) {
                interval_s = 0;
            } else if (!tt_parse_seconds(optarg, &interval_s)) {
                fprintf(stderr, "tokentap watch: --interval wants seconds (0: no summary), got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            break;
        case 'V':
            want_server = !strcmp(optarg, "server") || !strcmp(optarg, "both");
            want_client = !strcmp(optarg, "client") || !strcmp(optarg, "both");
            if (!want_server && !want_client) {
                fprintf(stderr, "tokentap watch: --vantage wants server, client or both, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            break;
        case 'M': metrics_listen = optarg; break;
        case 'U': user_spec = optarg; break;
        case 'L': log_path = optarg; break;
        case 'K':
            if (!tt_parse_u32(optarg, UINT32_MAX, &v)) {
                fprintf(stderr, "tokentap watch: --keep-requests wants a count, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            lim.keep_requests = v;
            keep_given = true;
            break;
        case 'C':
            if (!tt_parse_u32(optarg, UINT32_MAX, &v) || v == 0) {
                fprintf(stderr, "tokentap watch: --max-connections wants a count of at least 1, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            max_connections = v;
            break;
        case 'X':
            if (!tt_parse_u32(optarg, 1u << 20, &v) || v < 16) {
                fprintf(stderr, "tokentap watch: --max-memory wants megabytes, 16 to 1048576, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            lim.max_heap = (size_t)v << 20;
            break;
        case 'j': json = true; break;
        case 'e': events = true; break;
        case 't': text = true; break;
        case 'o': output = optarg; break;
        case 'q': quiet = true; break;
        case 'h': usage(stdout); return TT_EXIT_OK;
        case ':':
            fprintf(stderr, "tokentap watch: %s needs a value (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        default:
            fprintf(stderr, "tokentap watch: unknown option '%s' (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "tokentap watch: unexpected argument '%s' (try --help)\n", argv[optind]);
        return TT_EXIT_USAGE;
    }
    bopt.tgids = pids;
    if (metrics_listen && !keep_given) lim.keep_requests = 100;
    if (metrics_listen && text) {
        fprintf(stderr, "tokentap watch: --text keeps completion text, which --metrics never does (docs/production.md)\n");
        return TT_EXIT_USAGE;
    }
    char err[256];
    /* the user to become, known before anything is loaded */
    tt_priv_user user;
    if (user_spec && tt_priv_user_lookup(user_spec, &user, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap watch: %s\n", err);
        return TT_EXIT_INPUT;
    }

    /* one tracker per vantage: the sockets' and the TLS plaintext's, each end */
    tt_tracker_options topt = {.keep_text = text, .max_connections = max_connections};
    watch_vantage vs[] = {{.vantage = TT_VANTAGE_SERVER}, {.vantage = TT_VANTAGE_CLIENT},
                          {.vantage = TT_VANTAGE_SERVER_TLS}, {.vantage = TT_VANTAGE_CLIENT_TLS}};
    enum { W_SERVER, W_CLIENT, W_SERVER_TLS, W_CLIENT_TLS, W_COUNT };
    bool made = true;
    for (size_t i = 0; i < W_COUNT; i++) made &= (vs[i].tracker = tt_tracker_new(&topt)) != NULL;
    /* Keeping every request (no --keep-requests, --metrics or --max-memory,
     * which let requests go, whose ITLs a pooled quantile could not give
     * back) and with a report that needs no events (no --events), each
     * request's events go once it is handled, as analyze does: the heap
     * then grows with the requests, not with their events. */
    bool release = !events && lim.keep_requests == SIZE_MAX && !lim.max_heap && !tt_cmd_keep_events_forced();
    for (size_t i = 0; i < W_COUNT; i++) {
        tt_release_digest_init(&vs[i].digest);
        vs[i].release = release && (!json || tt_release_digest_spool_json(&vs[i].digest, vs[i].vantage, text) == 0);
    }
    tt_bpf_source *src = made ? tt_bpf_source_new(tt_tracker_chunk, vs[W_SERVER].tracker, tt_tracker_chunk,
                                                  vs[W_CLIENT].tracker)
                              : NULL;
    if (src)
        tt_bpf_source_route_tls(src, tt_tracker_chunk, vs[W_SERVER_TLS].tracker, tt_tracker_chunk,
                                vs[W_CLIENT_TLS].tracker);
    int setup_status = !src ? TT_EXIT_INTERNAL : TT_EXIT_OK;
    if (!src) fprintf(stderr, "tokentap watch: out of memory\n");
    if (src && tt_bpf_source_start(src, &bopt, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap watch: %s\n", err);
        setup_status = TT_EXIT_INPUT;
    }
    /* the metrics endpoint, once tracing is set up */
    tt_mreg *reg = NULL;
    tt_metrics_http *http = NULL;
    tt_ljoin *join = NULL;
    if (setup_status == TT_EXIT_OK && metrics_listen) {
        reg = tt_mreg_new(NULL);
        /* a request's two socket views, paired for its uplink and downlink */
        join = reg ? tt_ljoin_new(4096, 30 * 1000000000ull, watch_observe_pair, reg) : NULL;
        http = join ? tt_metrics_http_start(reg, metrics_listen, err, sizeof err) : NULL;
        if (!http) {
            fprintf(stderr, "tokentap watch: %s\n", join ? err : "out of memory");
            setup_status = TT_EXIT_USAGE;
        } else {
            fprintf(stderr, "tokentap watch: metrics on port %u, path /metrics\n",
                    (unsigned)tt_metrics_http_port(http));
        }
    }
    /* The report's file is opened before the privileges go: the process
     * may not be allowed to create it afterwards. */
    FILE *out = NULL;
    watch_log log = {0};
    if (setup_status == TT_EXIT_OK && !(out = tt_open_output(output))) {
        fprintf(stderr, "tokentap watch: cannot write %s: %s\n", output, strerror(errno));
        setup_status = TT_EXIT_OUTPUT;
    }
    if (setup_status == TT_EXIT_OK && watch_log_open(&log, log_path, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap watch: %s\n", err);
        setup_status = TT_EXIT_OUTPUT;
    }
    if (setup_status == TT_EXIT_OK && drop_privileges(src, user_spec ? &user : NULL, quiet) < 0)
        setup_status = TT_EXIT_INPUT;
    if (setup_status != TT_EXIT_OK) {
        if (out && out != stdout) fclose(out);
        watch_log_close(&log);
        tt_metrics_http_stop(http);
        tt_ljoin_free(join);
        tt_mreg_free(reg);
        tt_bpf_source_free(src);
        for (size_t i = 0; i < W_COUNT; i++) watch_vantage_free(&vs[i]);
        return setup_status;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction hup = {.sa_handler = on_hangup};
    sigemptyset(&hup.sa_mask);
    sigaction(SIGHUP, &hup, NULL);
    fprintf(stderr, "tokentap watch: tracing");
    for (size_t i = 0; i < bopt.n_tgids; i++) fprintf(stderr, "%s%u", i ? "," : " pid ", pids[i]);
    if (bopt.n_tgids) fprintf(stderr, " (and descendants)");
    if (bopt.comm) fprintf(stderr, " comm %s", bopt.comm);
    if (bopt.cgroup) fprintf(stderr, " cgroup %s", bopt.cgroup);
    if (bopt.port) fprintf(stderr, " port %u", (unsigned)bopt.port);
    tt_bpf_stats started_st;
    tt_bpf_source_stats(src, &started_st);
    if (started_st.raw_syscalls) fprintf(stderr, " (data syscalls on raw tracepoints)");
    else if (!started_st.send_stamped) fprintf(stderr, " (sends stamped at syscall entry)");
    if (!started_st.raw_syscalls && !started_st.sock_hooks) fprintf(stderr, " (data at syscall exits)");
    else if (!started_st.raw_syscalls && !started_st.sock_state)
        fprintf(stderr, " (connect, accept and close at syscall tracepoints)");
    fputc('\n', stderr);
    fflush(stderr);

    uint64_t start = tt_clock_ns(CLOCK_MONOTONIC);
    uint64_t deadline = duration_s > 0 ? start + (uint64_t)(duration_s * 1e9) : UINT64_MAX;
    uint64_t interval_ns = (uint64_t)(interval_s * 1e9);
    uint64_t next_summary = interval_ns ? start + interval_ns : UINT64_MAX;
    /* The tracer's own counters for the metrics (a map lookup per counter,
     * each a system call, and the heap's size, which mallinfo2 reads by
     * walking the allocator's bins) are read at most every
     * WATCH_EXPORT_EVERY_NS while records flow, and at once when a poll
     * finds none: under load the loop turns thousands of times a second,
     * and reading them on every turn was a sixth of the watcher's CPU. */
    uint64_t next_export = 0;
    size_t tls_said = 0;
    say_new_tls_libraries(src, &tls_said, true); /* those of the start are in the last line */
    int status = TT_EXIT_OK;
    while (!watch_stop) {
        uint64_t now = tt_clock_ns(CLOCK_MONOTONIC);
        if (now >= deadline) break;
        if (now >= next_summary) {
            if (!quiet) watch_print_summary(src, (double)(now - start) / 1e9, &vs[W_SERVER], &vs[W_CLIENT], &log);
            while (next_summary <= now) next_summary += interval_ns;
        }
        int records = tt_bpf_source_poll(src, 100, err, sizeof err);
        if (records < 0) {
            fprintf(stderr, "tokentap watch: %s\n", err);
            status = TT_EXIT_INPUT;
            break;
        }
        if (watch_reopen_log) {
            watch_reopen_log = 0;
            watch_log_reopen(&log);
        }
        watch_sinks sinks = {.log = quiet ? NULL : &log, .reg = reg, .join = join};
        for (size_t i = 0; i < W_COUNT; i++) watch_take_new(&vs[i], &lim, &sinks, now);
        watch_bound_memory(vs, W_COUNT, &lim, &sinks, now);
        if (reg && (records == 0 || now >= next_export)) {
            watch_export(src, vs, W_COUNT, &log, reg);
            next_export = now + WATCH_EXPORT_EVERY_NS;
        }
        say_new_tls_libraries(src, &tls_said, quiet);
    }
    tt_metrics_http_stop(http);
    tt_ljoin_free(join);
    tt_mreg_free(reg);
    if (log.dropped)
        fprintf(stderr, "tokentap watch: --log %s: %llu lines lost to failed writes\n", log_path,
                (unsigned long long)log.dropped);
    watch_log_close(&log);
    tt_bpf_source_poll(src, 0, err, sizeof err);
    tt_bpf_source_finish(src);
    tt_bpf_stats bs;
    tt_bpf_source_stats(src, &bs);
    char ready[160];
    fprintf(stderr,
            "tokentap watch: %llu records, %llu connections (%llu connected, %llu accepted, %llu closed), %llu bytes; "
            "kernel: %llu events, %llu ring-buffer "
            "drops (%llu bytes), %llu truncated syscalls (%llu bytes), %llu args lost, %llu sendfile or mmsg calls "
            "not copied (%llu bytes), %llu children followed; %s\n",
            (unsigned long long)bs.records, (unsigned long long)bs.connections, (unsigned long long)bs.connects,
            (unsigned long long)bs.accepts, (unsigned long long)bs.closes,
            (unsigned long long)bs.data_bytes,
            (unsigned long long)bs.kernel_events, (unsigned long long)bs.rb_fail,
            (unsigned long long)bs.rb_fail_bytes, (unsigned long long)bs.truncated,
            (unsigned long long)bs.truncated_bytes, (unsigned long long)bs.args_full,
            (unsigned long long)bs.not_copied, (unsigned long long)bs.not_copied_bytes,
            (unsigned long long)bs.children, tt_bpf_ready_note(&bs, ready, sizeof ready));
    if (bs.not_copied && bs.sock_state)
        fprintf(stderr, "tokentap watch: sendmmsg and recvmmsg bytes are counted at the socket hooks, not copied; "
                        "TOKENTAP_NO_SOCK_STATE=1 copies them through syscall tracepoints (bpf/README.md)\n");
    if (bs.tls_note)
        fprintf(stderr, "tokentap watch: %s; %llu SSL calls, %llu TLS records on %llu connections (%llu with their "
                        "socket instant), %llu calls (%llu bytes) whose socket was not known; %llu uprobe links "
                        "held, %llu released for %llu exited processes\n",
                bs.tls_note, (unsigned long long)bs.kernel_tls_calls, (unsigned long long)bs.tls_records,
                (unsigned long long)bs.tls_connections, (unsigned long long)bs.tls_socket_instants,
                (unsigned long long)bs.tls_unpaired, (unsigned long long)bs.tls_unpaired_bytes,
                (unsigned long long)bs.tls_links_held, (unsigned long long)bs.tls_links_released,
                (unsigned long long)bs.tls_processes_released);

    watch_say_released(vs, W_COUNT);

    bool failed = false;
    size_t n = 0;
    size_t held[W_COUNT];
    for (size_t i = 0; i < W_COUNT; i++) tt_tracker_requests(vs[i].tracker, &held[i]);
    /* The server vantage always; the client vantage when it saw anything
     * (or when it alone was asked for); TLS plaintext at either end, when
     * some was seen. */
    bool report[W_COUNT] = {want_server, want_client && (held[W_CLIENT] || !want_server), held[W_SERVER_TLS] > 0,
                            held[W_CLIENT_TLS] > 0};
    for (size_t i = 0; i < W_COUNT; i++)
        if (report[i]) n += report_vantage(out, &vs[i], &bs, json, events, text, &failed);
    if (fflush(out) != 0 || ferror(out) || (out != stdout && fclose(out) != 0)) {
        fprintf(stderr, "tokentap watch: writing %s failed: %s\n", output ? output : "stdout", strerror(errno));
        status = TT_EXIT_OUTPUT;
    }
    if (failed && status == TT_EXIT_OK) status = TT_EXIT_INTERNAL;
    if (status == TT_EXIT_OK && n == 0) status = TT_EXIT_NO_HTTP;
    tt_bpf_source_free(src);
    for (size_t i = 0; i < W_COUNT; i++) watch_vantage_free(&vs[i]);
    return status;
}
