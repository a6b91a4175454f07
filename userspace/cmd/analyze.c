/* analyze.c - `tokentap analyze`: a capture file or a recording DIR in
 * (read by cmd_input), the per-request timing report out. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_input.h"
#include "cmd/commands.h"
#include "import/bench_import.h"
#include "metrics/metrics.h"
#include "report/report.h"
#include "report/report_multi.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap analyze [OPTIONS] CAPTURE|DIR\n"
            "\n"
            "Reconstruct the HTTP/1.1 streams in CAPTURE (pcap or pcapng), frame each\n"
            "response body as SSE or NDJSON, classify every event, and report TTFT, TPOT,\n"
            "ITL and E2EL per request at the wire vantage.\n"
            "A DIR written by `tokentap record` is read whole: each vantage present (server,\n"
            "client, wire; the wire converted to CLOCK_MONOTONIC with the manifest's offset),\n"
            "joined request by request (x-request-id, else connection and ordinal, else\n"
            "response id): the text report shows the vantages side by side, where the time\n"
            "went (uplink, server, downlink), the lint findings (each once per request, with\n"
            "the vantages that saw it) and then each vantage's own report; --json writes one\n"
            "document whose requests carry vantages.server, .client and .wire, and whose\n"
            "findings name their vantage and joined request.\n"
            "With --bench-result the benchmark's own result file joins too: its TTFT and\n"
            "E2EL are split into send lag, uplink, server, downlink and client lag\n"
            "(docs/metrics.md), and where it disagrees with the capture is listed.\n"
            "\n"
            "options:\n"
            "  --json               write the JSON document (docs/formats.md) instead of text\n"
            "  --events             list every framed event with its instant, kind and framing\n"
            "  --text               include generated text (otherwise only lengths and hashes)\n"
            "  --percentiles LIST   percentiles to report, e.g. 50,90,99 (default 99)\n"
            "  -o, --output FILE    write to FILE (created mode 0600) instead of stdout\n"
            "  --bench-result FILE  the benchmark's result file (vllm --save-result --save-detailed,\n"
            "                       genai-perf, aiperf, guidellm, sglang, llmperf; docs/formats.md)\n"
            "  --bench-format NAME  its format (vllm, genai-perf, aiperf, guidellm, sglang, llmperf;\n"
            "                       default: detected from the content)\n"
            "  --bench-id-prefix P  the x-request-id prefix the tool numbered its requests with\n"
            "                       (vllm --request-id-prefix; found by itself when the ids are\n"
            "                       P0, P1, ... in file order)\n"
            "  --perfetto FILE      also write a Chrome trace JSON (ui.perfetto.dev) of every request:\n"
            "                       a track per request and vantage, token events, the TTFT parts\n"
            "  --wall-to-mono-offset NS\n"
            "                       convert the capture's wall-clock timestamps to CLOCK_MONOTONIC\n"
            "                       (mono = wall - NS); without it instants stay in the capture's clock\n"
            "  -h, --help           this help\n"
            "\n"
            "exit status: 0 ok; 2 bad usage; 3 input (or the benchmark file) unreadable or\n"
            "not a capture;\n"
            "4 no HTTP exchange found; 5 capture damaged part way (report covers what came\n"
            "before); 6 output not written.\n");
}

typedef struct analyze_opts {
    bool json, events;
    const char *output;      /* NULL or "-": stdout */
    const char *perfetto;    /* --perfetto FILE, or NULL */
    const tt_bench_result *bench; /* --bench-result, or NULL */
    tt_cmd_input_options input;   /* --text, --percentiles, --wall-to-mono-offset */
} analyze_opts;

/* Write what the options ask for over the n analyses: the joined breakdown
 * for a recording or with a benchmark file, else the single report. */
static int write_reports(const analyze_opts *o, const char *input, const tt_analysis *const *as, size_t n,
                         bool recording, const tt_join_options *jopt)
{
    bool joined = !o->events && (recording || o->bench);
    tt_breakdown b;
    bool built = false;
    if (joined || o->perfetto) {
        if (tt_breakdown_build(&b, as, n, o->bench, jopt) < 0) {
            fprintf(stderr, "tokentap analyze: out of memory joining requests\n");
            return TT_EXIT_INTERNAL;
        }
        built = true;
    }
    int status = TT_EXIT_OK;
    FILE *out = tt_open_output(o->output);
    if (!out) {
        fprintf(stderr, "tokentap analyze: cannot write %s: %s\n", o->output, strerror(errno));
        status = TT_EXIT_OUTPUT;
    } else {
        tt_report_vantages(out, input, as, n, joined ? &b : NULL, o->json, o->events);
        status = tt_cmd_output_close("analyze", out, o->output);
    }
    if (o->perfetto && status == TT_EXIT_OK) {
        FILE *pf = tt_open_output(o->perfetto);
        if (!pf) {
            fprintf(stderr, "tokentap analyze: cannot write %s: %s\n", o->perfetto, strerror(errno));
            status = TT_EXIT_OUTPUT;
        } else {
            tt_report_perfetto(pf, &b);
            status = tt_cmd_output_close("analyze", pf, o->perfetto);
        }
    }
    if (built) tt_breakdown_free(&b);
    return status;
}

/* One capture file or recording directory, read by cmd_input, reported. */
static int analyze_path(const char *path, const analyze_opts *o)
{
    tt_cmd_input in;
    int status = tt_cmd_input_load(path, &o->input, &in);
    if (in.n && status != TT_EXIT_USAGE && status != TT_EXIT_INTERNAL) {
        tt_join_options jopt = tt_cmd_input_join_options(&in);
        int wrote = write_reports(o, path, in.analyses, in.n, in.recording, &jopt);
        if (wrote != TT_EXIT_OK) status = wrote;
    }
    tt_cmd_input_free(&in);
    return status;
}

int tt_cmd_analyze(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},       {"events", no_argument, NULL, 'e'},
        {"text", no_argument, NULL, 't'},       {"percentiles", required_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
        {"wall-to-mono-offset", required_argument, NULL, 'W'},
        {"bench-result", required_argument, NULL, 'B'},
        {"bench-format", required_argument, NULL, 'F'},
        {"perfetto", required_argument, NULL, 'P'},
        {"bench-id-prefix", required_argument, NULL, 'I'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, events = false, text = false;
    const char *output = NULL, *bench_path = NULL, *perfetto = NULL, *id_prefix = NULL;
    tt_bench_format bench_format = TT_BENCH_AUTO;
    tt_cmd_input_options input = {.command = "analyze", .progress = true};
    double pct[TT_MAX_PERCENTILES] = {99};
    int n_pct = 1;
    char err[256];
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'e': events = true; break;
        case 't': text = true; break;
        case 'o': output = optarg; break;
        case 'B': bench_path = optarg; break;
        case 'P': perfetto = optarg; break;
        case 'I': id_prefix = optarg; break;
        case 'F': {
            int f = tt_bench_format_parse(optarg);
            if (f < 0) {
                fprintf(stderr, "tokentap analyze: --bench-format: unknown format '%s' (vllm, genai-perf, aiperf, "
                                "guidellm, sglang, llmperf)\n", optarg);
                return TT_EXIT_USAGE;
            }
            bench_format = (tt_bench_format)f;
            break;
        }
        case 'W':
            if (tt_cmd_input_parse_offset(&input, optarg) != TT_EXIT_OK) return TT_EXIT_USAGE;
            break;
        case 'p':
            n_pct = tt_parse_percentiles(optarg, pct, TT_MAX_PERCENTILES, err, sizeof err);
            if (n_pct < 0) {
                fprintf(stderr, "tokentap analyze: %s\n", err);
                return TT_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return TT_EXIT_OK;
        default: return tt_cmd_option_error("analyze", c, argv);
        }
    }
    const char *path = tt_cmd_input_operand("analyze", argc, argv);
    if (!path) return TT_EXIT_USAGE;
    if ((bench_path || perfetto) && events) {
        fprintf(stderr, "tokentap analyze: --bench-result and --perfetto do not apply to --events\n");
        return TT_EXIT_USAGE;
    }
    if ((bench_format != TT_BENCH_AUTO || id_prefix) && !bench_path) {
        fprintf(stderr, "tokentap analyze: --bench-format and --bench-id-prefix need --bench-result\n");
        return TT_EXIT_USAGE;
    }
    tt_bench_result bench = {0};
    if (bench_path && tt_bench_load(bench_path, bench_format, &bench, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap analyze: %s: %s\n", bench_path, err);
        return TT_EXIT_INPUT;
    }
    if (id_prefix && tt_bench_set_id_prefix(&bench, id_prefix) != 0) {
        fprintf(stderr, "tokentap analyze: out of memory\n");
        tt_bench_result_free(&bench);
        return TT_EXIT_INTERNAL;
    }
    input.keep_text = text;
    input.pct = pct;
    input.n_pct = (size_t)n_pct;
    analyze_opts o = {.json = json, .events = events, .output = output, .perfetto = perfetto,
                      .bench = bench_path ? &bench : NULL, .input = input};
    int status = analyze_path(path, &o);
    tt_bench_result_free(&bench);
    return status;
}
