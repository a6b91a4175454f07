/* watch.c - `tokentap watch`: live server and client vantages from eBPF,
 * the same connection tracker and report as analyze. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "cmd/commands.h"
#include "metrics/metrics.h"
#include "report/report.h"
#include "source/bpf_source.h"
#include "timeline/conn_tracker.h"

static volatile sig_atomic_t watch_stop;

static void on_signal(int sig) { watch_stop = 1; }

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap watch [--pid PID] [--port PORT] [--duration S] [--vantage V] [OPTIONS]\n"
            "\n"
            "Trace the TCP reads and writes of a process with eBPF (root) and time every\n"
            "token event where the server wrote it (server vantage) or the client read it\n"
            "(client vantage). A line per finished request as it ends; the full report when\n"
            "the duration is over or on Ctrl-C.\n"
            "\n"
            "options:\n"
            "  --pid PID            trace only this process (default: every process)\n"
            "  --port PORT          trace only sockets with this local or remote port\n"
            "  --duration S         stop after S seconds (default: until SIGINT/SIGTERM)\n"
            "  --vantage V          report server, client or both (default both; client only\n"
            "                       when it saw a request)\n"
            "  --json               the JSON document (docs/formats.md) instead of text\n"
            "  --events             list every framed event with its instant (with --json: JSON)\n"
            "  --text               include generated text\n"
            "  -o, --output FILE    write the report to FILE (mode 0600) instead of stdout\n"
            "  -q, --quiet          no per-request lines while watching\n"
            "  -h, --help           this help\n"
            "\n"
            "exit status: 0 ok; 2 bad usage; 3 eBPF could not be set up; 4 no HTTP exchange seen;\n"
            "6 output not written.\n");
}

/* One line per request the tracker filed since the last call. */
static void print_new_requests(tt_tracker *t, tt_vantage v, size_t *shown)
{
    size_t n;
    tt_request *reqs = tt_tracker_requests(t, &n);
    for (; *shown < n; (*shown)++) {
        const tt_request *r = &reqs[*shown];
        tt_req_metrics m;
        if (tt_req_metrics_compute(r, &m) < 0) return;
        char client[64], server[64], why[128];
        fprintf(stderr, "%s %s -> %s %s %s status=%d tokens=%u", tt_vantage_name(v),
                tt_endpoint_format(&r->client, client, sizeof client),
                tt_endpoint_format(&r->server, server, sizeof server), r->method, r->path, r->status,
                r->token_events);
        if (m.has_ttft) fprintf(stderr, " ttft=%.3fms", (double)m.ttft_ns / 1e6);
        if (m.has_e2el) fprintf(stderr, " e2el=%.3fms", (double)m.e2el_ns / 1e6);
        if (!tt_request_complete(r)) fprintf(stderr, " incomplete=%s", tt_incomplete_reasons(r, why, sizeof why));
        fputc('\n', stderr);
        tt_req_metrics_free(&m);
    }
}

/* The report of one vantage; returns the number of requests. */
static size_t report_vantage(FILE *out, tt_tracker *t, tt_vantage v, const tt_bpf_stats *bs, bool json,
                             bool events, bool text, bool *failed)
{
    tt_reasm_stats rs = {.connections = tt_tracker_connections(t), .gaps = bs->gaps, .gap_bytes = bs->gap_bytes};
    tt_analysis a = {
        .command = "watch",
        .input = "(eBPF socket syscalls)",
        .vantage = v,
        .clock = TT_CLOCK_MONOTONIC,
        .reasm = &rs,
        .with_text = text,
    };
    const double pct[1] = {99};
    if (tt_analysis_fill(&a, t, pct, 1) < 0) *failed = true;
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
        {NULL, 0, NULL, 0},
    };
    tt_bpf_options bopt = {0};
    double duration_s = 0;
    bool json = false, events = false, text = false, quiet = false;
    bool want_server = true, want_client = true;
    const char *output = NULL;
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
            bopt.tgid = v;
            break;
        case 'P':
            if (!tt_parse_u32(optarg, 65535, &v) || v == 0) {
                fprintf(stderr, "tokentap watch: --port wants 1..65535, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            bopt.port = (uint16_t)v;
            break;
        case 'd':
            if (!tt_parse_seconds(optarg, &duration_s)) {
                fprintf(stderr, "tokentap watch: --duration wants seconds > 0, got '%s'\n", optarg);
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

    tt_tracker_options topt = {.keep_text = text};
    tt_tracker *server = tt_tracker_new(&topt), *client = tt_tracker_new(&topt);
    tt_bpf_source *src = server && client ? tt_bpf_source_new(tt_tracker_chunk, server, tt_tracker_chunk, client) : NULL;
    if (!src) {
        fprintf(stderr, "tokentap watch: out of memory\n");
        return TT_EXIT_INTERNAL;
    }
    char err[256];
    if (tt_bpf_source_start(src, &bopt, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap watch: %s\n", err);
        tt_bpf_source_free(src);
        tt_tracker_free(server);
        tt_tracker_free(client);
        return TT_EXIT_INPUT;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    fprintf(stderr, "tokentap watch: tracing%s%.0u%s%.0u\n", bopt.tgid ? " pid " : "", bopt.tgid,
            bopt.port ? " port " : "", (unsigned)bopt.port);
    fflush(stderr);

    uint64_t deadline = duration_s > 0 ? tt_clock_ns(CLOCK_MONOTONIC) + (uint64_t)(duration_s * 1e9) : UINT64_MAX;
    size_t shown_server = 0, shown_client = 0;
    int status = TT_EXIT_OK;
    while (!watch_stop && tt_clock_ns(CLOCK_MONOTONIC) < deadline) {
        if (tt_bpf_source_poll(src, 100, err, sizeof err) < 0) {
            fprintf(stderr, "tokentap watch: %s\n", err);
            status = TT_EXIT_INPUT;
            break;
        }
        if (!quiet) {
            print_new_requests(server, TT_VANTAGE_SERVER, &shown_server);
            print_new_requests(client, TT_VANTAGE_CLIENT, &shown_client);
        }
    }
    tt_bpf_source_poll(src, 0, err, sizeof err);
    tt_bpf_source_finish(src);
    tt_bpf_stats bs;
    tt_bpf_source_stats(src, &bs);
    fprintf(stderr,
            "tokentap watch: %llu records, %llu connections (%llu closed), %llu bytes; kernel: %llu events, %llu ring-buffer "
            "drops (%llu bytes), %llu truncated syscalls (%llu bytes), %llu args lost\n",
            (unsigned long long)bs.records, (unsigned long long)bs.connections, (unsigned long long)bs.closes,
            (unsigned long long)bs.data_bytes,
            (unsigned long long)bs.kernel_events, (unsigned long long)bs.rb_fail,
            (unsigned long long)bs.rb_fail_bytes, (unsigned long long)bs.truncated,
            (unsigned long long)bs.truncated_bytes, (unsigned long long)bs.args_full);

    FILE *out = tt_open_output(output);
    bool failed = false;
    size_t n = 0;
    if (!out) {
        fprintf(stderr, "tokentap watch: cannot write %s: %s\n", output, strerror(errno));
        status = TT_EXIT_OUTPUT;
    } else {
        size_t ns = 0, nc = 0;
        tt_tracker_requests(server, &ns);
        tt_tracker_requests(client, &nc);
        /* The server vantage always; the client vantage when it saw anything
         * (or when it alone was asked for). */
        if (want_server) n += report_vantage(out, server, TT_VANTAGE_SERVER, &bs, json, events, text, &failed);
        if (want_client && (nc || !want_server)) n += report_vantage(out, client, TT_VANTAGE_CLIENT, &bs, json, events, text, &failed);
        if (fflush(out) != 0 || ferror(out) || (out != stdout && fclose(out) != 0)) {
            fprintf(stderr, "tokentap watch: writing %s failed: %s\n", output ? output : "stdout", strerror(errno));
            status = TT_EXIT_OUTPUT;
        }
    }
    if (failed && status == TT_EXIT_OK) status = TT_EXIT_INTERNAL;
    if (status == TT_EXIT_OK && n == 0) status = TT_EXIT_NO_HTTP;
    tt_bpf_source_free(src);
    tt_tracker_free(server);
    tt_tracker_free(client);
    return status;
}
