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
#include "core/util.h"
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
            "  triton-grpc  gRPC /inference.GRPCInferenceService/ModelStreamInfer (with --http2;\n"
            "               a decoupled Triton model: one response message per token)\n"
            "and under every profile GET /v1/models, GET /health, GET /metrics (Prometheus\n"
            "text: the server's own TTFT, ITL and E2E histograms under vLLM's names).\n"
            "\n"
            "  --listen [HOST:]PORT  address to listen on; HOST defaults to 127.0.0.1,\n"
            "                        [v6addr]:PORT for IPv6; PORT 0 picks a free port.\n"
            "                        Prints 'listening on HOST:PORT' on stdout once ready.\n"
            "  --profile NAME        framing to reproduce: %s\n"
            "  --log FILE            ground-truth log, JSON lines, one per write (mode 0600)\n"
            "  --ttft-ms D           delay from a request's last byte to its first token\n"
            "                        (default 50); D is MS, uniform:A:B, normal:MEAN:SD\n"
            "                        (truncated at 0) or replay:FILE (one delay in ms per\n"
            "                        line, cycled: the server's n-th request takes line n)\n"
            "  --itl-ms D            delay between tokens (default 20), same forms (replay:\n"
            "                        each stream's gaps cycle through the file from line 1)\n"
            "  --reasoning-tokens N  the first N tokens are reasoning (reasoning_content,\n"
            "                        Anthropic thinking block, Ollama thinking)\n"
            "  --tokens N            output length when the request sets no max_tokens /\n"
            "                        max_completion_tokens (default 16)\n"
            "  --tokens-max N        cap on any output length (default 4096)\n"
            "  --eos-after K         the model stops by itself after K tokens (finish_reason\n"
            "                        stop) unless ignore_eos (vllm only) or a larger\n"
            "                        min_tokens says otherwise; 0 never (default)\n"
            "  --seed S              seed for ids and uniform/normal delays (default 1)\n"
            "  --model NAME          served model name (default tokentap-model)\n"
            "  --created T           fixed \"created\" value (default: the clock per request)\n"
            "  --no-nodelay          leave TCP_NODELAY off on accepted sockets\n"
            "  --tls CERT KEY        HTTPS (OpenSSL; ALPN http/1.1, with --http2 h2 first) with\n"
            "                        this PEM certificate (chain) and key; the log is unchanged:\n"
            "                        a write's instant is taken just before its SSL_write\n"
            "  --http2               HTTP/2 (nghttp2): over cleartext (h2c) with prior knowledge\n"
            "                        or upgraded from HTTP/1.1 (Upgrade: h2c: 101, then the\n"
            "                        request as stream 1; other HTTP/1.1 requests answered as\n"
            "                        without --http2), or with --tls where ALPN chooses h2\n"
            "                        (http/1.1 or no ALPN: HTTP/1.1): many streams per\n"
            "                        connection, each answered as over HTTP/1.1, one DATA\n"
            "                        frame per write; log lines add stream_id\n"
            "  --triton-final MODE   triton-grpc: where triton_final_response=true goes: last\n"
            "                        (with the last token, as vLLM's backend; default) or\n"
            "                        empty (an empty final response, sent when the request\n"
            "                        sets triton_enable_empty_final_response, as Triton does)\n"
            "  --workers N           event-loop threads (default 1, at most %d); connections\n"
            "                        are dealt round-robin and stay on theirs; the log gets\n"
            "                        whole lines from every worker, in order per connection\n"
            "Framing faults (each logged as it happens):\n"
            "  --split-at OFF[,OFF]  write each event in parts, cut at these byte offsets\n"
            "                        of the event's bytes (at most %d offsets)\n"
            "  --split-pause-ms D    pause between the parts (default 0)\n"
            "  --coalesce N          put N events in one write (not with --split-at)\n"
            "  --keepalive-ms D      keep-alive every D ms while a stream is open (': ping -\n"
            "                        <time>' comments; anthropic: event: ping); not ollama\n"
            "  --close-after K       close the connection after K tokens, without the end\n"
            "  --error-after K       an error event after K tokens, then end the stream\n"
            "  --status CODE         answer every generation with HTTP status CODE (400-599)\n"
            "                        and a JSON error body\n"
            "  -h, --help            this help\n"
            "\n"
            "Stops cleanly on SIGINT or SIGTERM. Exit: 0 stopped, 1 could not listen or\n"
            "failed at run time, 2 bad command line.\n",
            tt_serve_profile_names(), TT_SERVE_MAX_WORKERS, TT_SERVE_MAX_SPLITS);
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

/* "OFF[,OFF...]" into faults->split_at. */
static int parse_offsets(const char *text, tt_serve_faults *faults)
{
    faults->n_split = 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char num[16];
        uint64_t v;
        if (len == 0 || len >= sizeof num || faults->n_split == TT_SERVE_MAX_SPLITS) return -1;
        memcpy(num, p, len);
        num[len] = 0;
        if (parse_u64(num, 1000000, &v) || v == 0) return -1;
        faults->split_at[faults->n_split++] = (uint32_t)v;
        if (!comma) return 0;
        p = comma + 1;
    }
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

static int serve_main(int argc, char **argv, tt_serve_config *cfg)
{
    enum { O_LISTEN = 256, O_PROFILE, O_LOG, O_TTFT, O_ITL, O_TOKENS, O_TOKENS_MAX, O_EOS,
           O_SEED, O_MODEL, O_CREATED, O_NO_NODELAY, O_REASONING, O_SPLIT_AT, O_SPLIT_PAUSE, O_COALESCE,
           O_KEEPALIVE, O_CLOSE_AFTER, O_ERROR_AFTER, O_STATUS, O_WORKERS, O_TLS, O_HTTP2, O_TRITON_FINAL };
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
        {"reasoning-tokens", required_argument, NULL, O_REASONING},
        {"split-at", required_argument, NULL, O_SPLIT_AT},
        {"split-pause-ms", required_argument, NULL, O_SPLIT_PAUSE},
        {"coalesce", required_argument, NULL, O_COALESCE},
        {"keepalive-ms", required_argument, NULL, O_KEEPALIVE},
        {"close-after", required_argument, NULL, O_CLOSE_AFTER},
        {"error-after", required_argument, NULL, O_ERROR_AFTER},
        {"status", required_argument, NULL, O_STATUS},
        {"workers", required_argument, NULL, O_WORKERS},
        {"tls", required_argument, NULL, O_TLS},
        {"http2", no_argument, NULL, O_HTTP2},
        {"triton-final", required_argument, NULL, O_TRITON_FINAL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *listen_text = NULL, *profile_name = NULL, *log_path = NULL;
    char err[256];
    uint64_t v;
    optind = 1;
    opterr = 0;
    int opt;
    /* "+": no permutation, so that --tls CERT KEY takes the word after CERT */
    while ((opt = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (opt) {
        case O_LISTEN: listen_text = optarg; break;
        case O_PROFILE: profile_name = optarg; break;
        case O_LOG: log_path = optarg; break;
        case O_TTFT:
        case O_ITL:
        {
            tt_dist d, *slot = opt == O_TTFT ? &cfg->ttft : &cfg->itl;
            if (tt_dist_parse(optarg, &d, err, sizeof err))
                return bad(opt == O_TTFT ? "--ttft-ms: %s" : "--itl-ms: %s", err);
            tt_dist_free(slot);
            *slot = d;
            break;
        }
        case O_TOKENS:
            if (parse_u64(optarg, 10000000, &v) || v == 0)
                return bad("--tokens: '%s' is not a count in [1, 10000000]", optarg);
            cfg->gen.default_tokens = (uint32_t)v;
            break;
        case O_TOKENS_MAX:
            if (parse_u64(optarg, 10000000, &v) || v == 0)
                return bad("--tokens-max: '%s' is not a count in [1, 10000000]", optarg);
            cfg->gen.tokens_max = (uint32_t)v;
            break;
        case O_EOS:
            if (parse_u64(optarg, 10000000, &v))
                return bad("--eos-after: '%s' is not a count in [0, 10000000]", optarg);
            cfg->gen.eos_after = (uint32_t)v;
            break;
        case O_SEED:
            if (parse_u64(optarg, UINT64_MAX, &cfg->seed))
                return bad("--seed: '%s' is not an unsigned integer", optarg);
            break;
        case O_MODEL:
            if (!*optarg || strlen(optarg) > 100) return bad("--model: '%s' must be 1 to 100 bytes", optarg);
            cfg->gen.model = optarg;
            break;
        case O_CREATED:
            if (parse_u64(optarg, (uint64_t)INT64_MAX, &v))
                return bad("--created: '%s' is not a unix time", optarg);
            cfg->gen.created = (int64_t)v;
            break;
        case O_NO_NODELAY: cfg->nodelay = false; break;
        case O_HTTP2: cfg->http2 = true; break;
        case O_TRITON_FINAL:
            if (!strcmp(optarg, "last")) cfg->gen.triton_empty_final = false;
            else if (!strcmp(optarg, "empty")) cfg->gen.triton_empty_final = true;
            else return bad("--triton-final: '%s' is not last or empty", optarg);
            break;
        case O_TLS:
            /* two values: CERT KEY */
            if (optind >= argc || argv[optind][0] == '-') return bad("--tls wants CERT KEY (two PEM files)%s", "");
            cfg->tls_cert = optarg;
            cfg->tls_key = argv[optind++];
            break;
        case O_REASONING:
            if (parse_u64(optarg, 10000000, &v))
                return bad("--reasoning-tokens: '%s' is not a count in [0, 10000000]", optarg);
            cfg->gen.reasoning_tokens = (uint32_t)v;
            break;
        case O_SPLIT_AT:
            if (parse_offsets(optarg, &cfg->faults))
                return bad("--split-at: '%s' is not OFF[,OFF...] (1 to 16 offsets, each in [1, 1000000])", optarg);
            break;
        case O_SPLIT_PAUSE:
        case O_KEEPALIVE: {
            tt_dist d;
            if (tt_dist_parse(optarg, &d, err, sizeof err) || d.kind != TT_DIST_FIXED)
                return bad(opt == O_KEEPALIVE ? "--keepalive-ms: '%s' is not a number of milliseconds"
                                              : "--split-pause-ms: '%s' is not a number of milliseconds", optarg);
            if (opt == O_KEEPALIVE && d.a_ns < 1000000)
                return bad("--keepalive-ms: '%s' is below 1 ms", optarg);
            if (opt == O_KEEPALIVE) cfg->faults.keepalive_ns = d.a_ns;
            else cfg->faults.split_pause_ns = d.a_ns;
            break;
        }
        case O_COALESCE:
            if (parse_u64(optarg, 1000000, &v) || v == 0)
                return bad("--coalesce: '%s' is not a count in [1, 1000000]", optarg);
            cfg->faults.coalesce = (uint32_t)v;
            break;
        case O_CLOSE_AFTER:
        case O_ERROR_AFTER:
            if (parse_u64(optarg, 10000000, &v))
                return bad(opt == O_CLOSE_AFTER ? "--close-after: '%s' is not a count in [0, 10000000]"
                                                : "--error-after: '%s' is not a count in [0, 10000000]", optarg);
            if (opt == O_CLOSE_AFTER) cfg->faults.close_after = (int64_t)v;
            else cfg->faults.error_after = (int64_t)v;
            break;
        case O_STATUS:
            if (parse_u64(optarg, 599, &v) || v < 400)
                return bad("--status: '%s' is not an HTTP error status in [400, 599]", optarg);
            cfg->faults.status = (int)v;
            break;
        case O_WORKERS:
            if (parse_u64(optarg, TT_SERVE_MAX_WORKERS, &v) || v == 0)
                return bad("--workers: '%s' is not a count in [1, " TT_STR(TT_SERVE_MAX_WORKERS) "]", optarg);
            cfg->workers = (unsigned)v;
            break;
        case 'h': serve_usage(stdout); return TT_EXIT_OK;
        case ':': return bad("option '%s' needs a value", argv[optind - 1]);
        default: return bad("unknown option '%s' (try --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return bad("unexpected argument '%s'", argv[optind]);
    if (!listen_text) return bad("%s", "--listen [HOST:]PORT is required (try --help)");
    if (!profile_name) return bad("--profile is required; one of %s", tt_serve_profile_names());
    cfg->profile = tt_serve_profile_find(profile_name);
    if (!cfg->profile) {
        fprintf(stderr, "tokentap serve: unknown profile '%s'; one of %s\n", profile_name,
                tt_serve_profile_names());
        return TT_EXIT_USAGE;
    }
    if (cfg->faults.n_split && cfg->faults.coalesce > 1)
        return bad("%s", "--split-at and --coalesce cannot be combined");
    if (cfg->faults.close_after >= 0 && cfg->faults.error_after >= 0)
        return bad("%s", "--close-after and --error-after cannot be combined");
    if (cfg->profile->id == TT_PROFILE_TRITON_GRPC) {
        if (!cfg->http2) return bad("%s", "profile triton-grpc speaks gRPC, which needs --http2");
        if (cfg->faults.keepalive_ns) return bad("%s", "--keepalive-ms: gRPC messages have no keep-alive comment");
        if (cfg->faults.status) return bad("%s", "--status: not for triton-grpc (no HTTP error answers on a gRPC call)");
    }
    if (cfg->faults.keepalive_ns && cfg->profile->id == TT_PROFILE_OLLAMA)
        return bad("%s", "--keepalive-ms: NDJSON (ollama) has no comment lines");
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
    tt_server *srv = tt_server_new(cfg, host, port, &log, err, sizeof err);
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

int tt_cmd_serve(int argc, char **argv)
{
    tt_serve_config cfg = {
        .gen = {.default_tokens = 16, .tokens_max = 4096, .model = "tokentap-model", .created = -1},
        .seed = 1, .nodelay = true, .max_body = 1u << 20,
        .ttft = {.kind = TT_DIST_FIXED, .a_ns = 50000000, .b_ns = 50000000},
        .itl = {.kind = TT_DIST_FIXED, .a_ns = 20000000, .b_ns = 20000000},
        .faults = {.close_after = -1, .error_after = -1},
    };
    int rc = serve_main(argc, argv, &cfg);
    tt_dist_free(&cfg.ttft);
    tt_dist_free(&cfg.itl);
    return rc;
}
