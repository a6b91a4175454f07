/* serve.c - `tokentap serve`: a streaming server whose every emission
 * instant is known (docs/serve.md). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "core/tt_types.h"
#include "serve/serve.h"

#define SERVE_EXIT_RUNTIME 1

static void serve_usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap serve --listen [HOST:]PORT --profile NAME [OPTIONS]\n"
            "\n"
            "Stream synthetic completions in a real server's framing on a known schedule,\n"
            "logging the CLOCK_MONOTONIC instant of every write (see docs/serve.md).\n"
            "Endpoints, each answered by the profiles that speak it (stream true or false):\n"
            "  vllm, tabby  POST /v1/chat/completions, POST /v1/completions\n"
            "  responses    POST /v1/responses        anthropic  POST /v1/messages\n"
            "  tgi          POST /generate_stream, POST /generate\n"
            "  llamacpp     POST /completion          ollama     POST /api/generate, /api/chat\n"
            "and under every profile GET /v1/models, GET /health, GET /metrics (Prometheus\n"
            "text: the server's own TTFT, ITL and E2E histograms under vLLM's names).\n"
            "\n"
            "  --listen [HOST:]PORT  address to listen on; HOST defaults to 127.0.0.1,\n"
            "                        [v6addr]:PORT for IPv6; PORT 0 picks a free port.\n"
            "                        Prints 'listening on HOST:PORT' on stdout once ready.\n"
            "  --profile NAME        framing to reproduce: %s\n"
            "  --log FILE            ground-truth log, JSON lines, one per write (mode 0600)\n"
            "  --ttft-ms D           delay from a request's last byte to its first token\n"
            "                        (default 50); D is MS or uniform:A:B (milliseconds)\n"
            "  --itl-ms D            delay between tokens (default 20), same forms\n"
            "  --tokens N            output length when the request sets no max_tokens /\n"
            "                        max_completion_tokens (default 16)\n"
            "  --tokens-max N        cap on any output length (default 4096)\n"
            "  --eos-after K         the model stops by itself after K tokens (finish_reason\n"
            "                        stop) unless ignore_eos (vllm only) or a larger\n"
            "                        min_tokens says otherwise; 0 never (default)\n"
            "  --seed S              seed for ids and uniform delays (default 1)\n"
            "  --model NAME          served model name (default tokentap-model)\n"
            "  --created T           fixed \"created\" value (default: the clock per request)\n"
            "  --no-nodelay          leave TCP_NODELAY off on accepted sockets\n"
            "  -h, --help            this help\n"
            "\n"
            "Stops cleanly on SIGINT or SIGTERM. Exit: 0 stopped, 1 could not listen or\n"
            "failed at run time, 2 bad command line.\n",
            tt_serve_profile_names());
}

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "tokentap serve: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    return TT_EXIT_USAGE;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!*s || *s == '-' || *s == '+') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v > max) return -1;
    *out = v;
    return 0;
}

/* "[HOST:]PORT" or "[V6]:PORT" into host (buffer) and port. */
static int parse_listen(const char *text, char *host, size_t hostlen, uint16_t *port)
{
    const char *colon = strrchr(text, ':');
    const char *port_text = colon ? colon + 1 : text;
    uint64_t p;
    if (parse_u64(port_text, 65535, &p)) return -1;
    *port = (uint16_t)p;
    snprintf(host, hostlen, "127.0.0.1");
    if (!colon || colon == text) return 0;
    size_t hl = (size_t)(colon - text);
    const char *h = text;
    if (h[0] == '[') {
        if (hl < 3 || h[hl - 1] != ']') return -1;
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= hostlen) return -1;
    memcpy(host, h, hl);
    host[hl] = 0;
    return 0;
}

/* The log's first line pairs the two clocks so that its CLOCK_MONOTONIC
 * instants can be set against a capture's wall-clock timestamps. */
static void log_clock_line(tt_serve_log *log)
{
    tt_sbuf *b = tt_serve_log_begin(log);
    if (!b) return;
    struct timespec rt, m0, m1;
    clock_gettime(CLOCK_MONOTONIC, &m0);
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &m1);
    uint64_t mono = ((uint64_t)m0.tv_sec * 1000000000ull + (uint64_t)m0.tv_nsec +
                     (uint64_t)m1.tv_sec * 1000000000ull + (uint64_t)m1.tv_nsec) / 2;
    tt_sbuf_printf(b, "{\"type\":\"clock\",\"mono_ns\":%llu,\"realtime_ns\":%llu}\n",
                   (unsigned long long)mono,
                   (unsigned long long)rt.tv_sec * 1000000000ull + (unsigned long long)rt.tv_nsec);
    tt_serve_log_commit(log);
}

int tt_cmd_serve(int argc, char **argv)
{
    enum { O_LISTEN = 256, O_PROFILE, O_LOG, O_TTFT, O_ITL, O_TOKENS, O_TOKENS_MAX, O_EOS,
           O_SEED, O_MODEL, O_CREATED, O_NO_NODELAY };
    static const struct option opts[] = {
        {"listen", required_argument, NULL, O_LISTEN},
        {"profile", required_argument, NULL, O_PROFILE},
        {"log", required_argument, NULL, O_LOG},
        {"ttft-ms", required_argument, NULL, O_TTFT},
        {"itl-ms", required_argument, NULL, O_ITL},
        {"tokens", required_argument, NULL, O_TOKENS},
        {"tokens-max", required_argument, NULL, O_TOKENS_MAX},
        {"eos-after", required_argument, NULL, O_EOS},
        {"seed", required_argument, NULL, O_SEED},
        {"model", required_argument, NULL, O_MODEL},
        {"created", required_argument, NULL, O_CREATED},
        {"no-nodelay", no_argument, NULL, O_NO_NODELAY},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tt_serve_config cfg = {
        .gen = {.default_tokens = 16, .tokens_max = 4096, .model = "tokentap-model", .created = -1},
        .seed = 1, .nodelay = true, .max_body = 1u << 20,
        .ttft = {.kind = TT_DIST_FIXED, .a_ns = 50000000, .b_ns = 50000000},
        .itl = {.kind = TT_DIST_FIXED, .a_ns = 20000000, .b_ns = 20000000},
    };
    const char *listen_text = NULL, *profile_name = NULL, *log_path = NULL;
    char err[256];
    uint64_t v;
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
        case O_LISTEN: listen_text = optarg; break;
        case O_PROFILE: profile_name = optarg; break;
        case O_LOG: log_path = optarg; break;
        case O_TTFT:
        case O_ITL:
            if (tt_dist_parse(optarg, opt == O_TTFT ? &cfg.ttft : &cfg.itl, err, sizeof err))
                return bad(opt == O_TTFT ? "--ttft-ms: %s" : "--itl-ms: %s", err);
            break;
        case O_TOKENS:
            if (parse_u64(optarg, 10000000, &v) || v == 0)
                return bad("--tokens: '%s' is not a count in [1, 10000000]", optarg);
            cfg.gen.default_tokens = (uint32_t)v;
            break;
        case O_TOKENS_MAX:
            if (parse_u64(optarg, 10000000, &v) || v == 0)
                return bad("--tokens-max: '%s' is not a count in [1, 10000000]", optarg);
            cfg.gen.tokens_max = (uint32_t)v;
            break;
        case O_EOS:
            if (parse_u64(optarg, 10000000, &v))
                return bad("--eos-after: '%s' is not a count in [0, 10000000]", optarg);
            cfg.gen.eos_after = (uint32_t)v;
            break;
        case O_SEED:
            if (parse_u64(optarg, UINT64_MAX, &cfg.seed))
                return bad("--seed: '%s' is not an unsigned integer", optarg);
            break;
        case O_MODEL:
            if (!*optarg || strlen(optarg) > 100) return bad("--model: '%s' must be 1 to 100 bytes", optarg);
            cfg.gen.model = optarg;
            break;
        case O_CREATED:
            if (parse_u64(optarg, (uint64_t)INT64_MAX, &v))
                return bad("--created: '%s' is not a unix time", optarg);
            cfg.gen.created = (int64_t)v;
            break;
        case O_NO_NODELAY: cfg.nodelay = false; break;
        case 'h': serve_usage(stdout); return TT_EXIT_OK;
        case ':': return bad("option '%s' needs a value", argv[optind - 1]);
        default: return bad("unknown option '%s' (try --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return bad("unexpected argument '%s'", argv[optind]);
    if (!listen_text) return bad("%s", "--listen [HOST:]PORT is required (try --help)");
    if (!profile_name) return bad("--profile is required; one of %s", tt_serve_profile_names());
    cfg.profile = tt_serve_profile_find(profile_name);
    if (!cfg.profile) {
        fprintf(stderr, "tokentap serve: unknown profile '%s'; one of %s\n", profile_name,
                tt_serve_profile_names());
        return TT_EXIT_USAGE;
    }
    char host[256];
    uint16_t port;
    if (parse_listen(listen_text, host, sizeof host, &port))
        return bad("--listen: '%s' is not [HOST:]PORT with PORT in [0, 65535]", listen_text);

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) {
        fprintf(stderr, "tokentap serve: sigprocmask: %s\n", strerror(errno));
        return SERVE_EXIT_RUNTIME;
    }
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        fprintf(stderr, "tokentap serve: signalfd: %s\n", strerror(errno));
        return SERVE_EXIT_RUNTIME;
    }
    signal(SIGPIPE, SIG_IGN);
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* wake as close to each due instant as the kernel can */

    tt_serve_log log;
    if (tt_serve_log_open(&log, log_path, err, sizeof err) != 0) {
        fprintf(stderr, "tokentap serve: %s\n", err);
        close(sfd);
        return SERVE_EXIT_RUNTIME;
    }
    log_clock_line(&log);
    tt_server *srv = tt_server_new(&cfg, host, port, &log, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "tokentap serve: %s\n", err);
        tt_serve_log_close(&log);
        close(sfd);
        return SERVE_EXIT_RUNTIME;
    }
    printf("listening on %s\n", tt_server_address(srv));
    fflush(stdout);
    int rc = tt_server_run(srv, sfd) == 0 ? TT_EXIT_OK : SERVE_EXIT_RUNTIME;
    tt_server_free(srv);
    if (tt_serve_log_close(&log) != 0) rc = SERVE_EXIT_RUNTIME;
    close(sfd);
    return rc;
}
