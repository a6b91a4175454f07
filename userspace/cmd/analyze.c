/* analyze.c - `tokentap analyze`: a capture file in, the per-request
 * timing report out. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "cmd/commands.h"
#include "import/bench_import.h"
#include "metrics/metrics.h"
#include "report/report.h"
#include "report/report_multi.h"
#include "source/pcap_source.h"
#include "timeline/conn_tracker.h"

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
            "went (uplink, server, downlink) and then each vantage's own report; --json\n"
            "writes one document whose requests carry vantages.server, .client and .wire.\n"
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

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    if (total) fprintf(stderr, "\ranalyze: %3u%% (%llu of %llu MB)", (unsigned)(done * 100 / total),
                       (unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
}

/* One vantage file of a recording, analysed. */
typedef struct vantage_run {
    char path[4096];
    tt_pcap_source *src;
    tt_tracker *tracker;
    tt_reasm *reasm;
    tt_analysis a;
    char err[256];
    bool filled;
} vantage_run;

static void vantage_run_free(vantage_run *v)
{
    if (v->filled) tt_analysis_release(&v->a);
    tt_reasm_free(v->reasm);
    tt_tracker_free(v->tracker);
    tt_pcap_source_close(v->src);
}

/* Read the wall-to-monotonic offset sampled at the start of the recording. */
static int read_manifest_offset(const char *path, int64_t *offset, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *doc = cJSON_Parse(buf);
    const cJSON *off = doc ? cJSON_GetObjectItemCaseSensitive(doc, "wall_to_mono_offset_ns") : NULL;
    const cJSON *start = off ? cJSON_GetObjectItemCaseSensitive(off, "start") : NULL;
    int rc = -1;
    if (!doc) snprintf(err, errlen, "%s: not JSON", path);
    else if (!cJSON_IsNumber(start)) snprintf(err, errlen, "%s: no wall_to_mono_offset_ns.start", path);
    else {
        /* cJSON keeps numbers as doubles: re-read the digits for full precision */
        const char *p = strstr(buf, "\"start\"");
        p = p ? strchr(p, ':') : NULL;
        char *end;
        errno = 0;
        long long v = p ? strtoll(p + 1, &end, 10) : 0;
        if (!p || errno || end == p + 1) snprintf(err, errlen, "%s: bad wall_to_mono_offset_ns.start", path);
        else {
            *offset = v;
            rc = 0;
        }
    }
    cJSON_Delete(doc);
    return rc;
}

typedef struct analyze_opts {
    bool json, events, text;
    const char *output;      /* NULL or "-": stdout */
    const char *perfetto;    /* --perfetto FILE, or NULL */
    const double *pct;
    int n_pct;
    const tt_bench_result *bench; /* --bench-result, or NULL */
} analyze_opts;

static int close_output(FILE *f, const char *path)
{
    if (fflush(f) != 0 || ferror(f) || (f != stdout && fclose(f) != 0)) {
        fprintf(stderr, "tokentap analyze: writing %s failed: %s\n", path ? path : "stdout", strerror(errno));
        return TT_EXIT_OUTPUT;
    }
    return TT_EXIT_OK;
}

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
        if (joined && o->json) {
            tt_report_json_breakdown(out, input, &b);
        } else if (joined) {
            tt_report_breakdown_text(out, input, &b);
            for (size_t k = 0; k < n; k++) {
                fputc('\n', out);
                tt_report_write(out, as[k], false, false);
            }
        } else {
            for (size_t k = 0; k < n; k++) {
                if (k && !o->json) fputc('\n', out);
                tt_report_write(out, as[k], o->json, o->events);
            }
        }
        status = close_output(out, o->output);
    }
    if (o->perfetto && status == TT_EXIT_OK) {
        FILE *pf = tt_open_output(o->perfetto);
        if (!pf) {
            fprintf(stderr, "tokentap analyze: cannot write %s: %s\n", o->perfetto, strerror(errno));
            status = TT_EXIT_OUTPUT;
        } else {
            tt_report_perfetto(pf, &b);
            status = close_output(pf, o->perfetto);
        }
    }
    if (built) tt_breakdown_free(&b);
    return status;
}

static int analyze_path(const char *path, const analyze_opts *o, bool have_offset, long long mono_offset);

static int analyze_directory(const char *dir, const analyze_opts *o)
{
    bool text = o->text;
    char manifest[4096];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", dir);
    char err[512];
    int64_t offset = 0;
    if (read_manifest_offset(manifest, &offset, err, sizeof err) < 0) {
        fprintf(stderr, "tokentap analyze: %s\n", err);
        return TT_EXIT_INPUT;
    }
    static const struct { const char *file; tt_vantage vantage; } files[3] = {
        {"server.pcap", TT_VANTAGE_SERVER}, {"client.pcap", TT_VANTAGE_CLIENT}, {"wire.pcap", TT_VANTAGE_WIRE}};
    vantage_run *runs = calloc(3, sizeof *runs);
    if (!runs) return TT_EXIT_INTERNAL;
    const tt_analysis *as[3];
    size_t n = 0, n_reqs = 0;
    int status = TT_EXIT_OK;
    for (int i = 0; i < 3; i++) {
        vantage_run *v = &runs[n];
        snprintf(v->path, sizeof v->path, "%s/%s", dir, files[i].file);
        if (access(v->path, F_OK) != 0) continue;
        v->src = tt_pcap_source_open(v->path, v->err, sizeof v->err);
        if (!v->src) {
            fprintf(stderr, "tokentap analyze: %s\n", v->err);
            status = TT_EXIT_INPUT;
            continue;
        }
        bool wire = files[i].vantage == TT_VANTAGE_WIRE;
        if (wire) tt_pcap_source_set_mono_offset(v->src, offset);
        tt_tracker_options topt = {.keep_text = text};
        v->tracker = tt_tracker_new(&topt);
        v->reasm = v->tracker ? tt_reasm_new(NULL, files[i].vantage, tt_tracker_chunk, v->tracker) : NULL;
        if (!v->reasm) {
            vantage_run_free(v);
            free(runs);
            return TT_EXIT_INTERNAL;
        }
        int rc = tt_pcap_source_run(v->src, v->reasm, NULL, NULL, v->err, sizeof v->err);
        if (rc < 0) {
            fprintf(stderr, "tokentap analyze: %s: %s\n", v->path, v->err);
            if (status == TT_EXIT_OK) status = TT_EXIT_DAMAGED;
        }
        v->a = (tt_analysis){
            .input = v->path,
            .vantage = files[i].vantage,
            .clock = wire ? tt_pcap_source_clock(v->src) : TT_CLOCK_MONOTONIC,
            .has_mono_offset = wire,
            .mono_offset_ns = wire ? offset : 0,
            .pcap = tt_pcap_source_stats(v->src),
            .reasm = tt_reasm_get_stats(v->reasm),
            .tracker = v->tracker,
            .source_error = rc < 0 ? v->err : NULL,
            .with_text = text,
        };
        if (tt_analysis_fill(&v->a, v->tracker, o->pct, (size_t)o->n_pct) < 0) {
            fprintf(stderr, "tokentap analyze: out of memory\n");
            v->filled = true;
            for (size_t k = 0; k <= n; k++) vantage_run_free(&runs[k]);
            free(runs);
            return TT_EXIT_INTERNAL;
        }
        v->filled = true;
        n_reqs += v->a.n_reqs;
        as[n++] = &v->a;
    }
    if (n == 0) {
        fprintf(stderr, "tokentap analyze: %s: no vantage file (server.pcap, client.pcap, wire.pcap)\n", dir);
        free(runs);
        return status == TT_EXIT_OK ? TT_EXIT_INPUT : status;
    }
    if (n_reqs == 0) {
        fprintf(stderr, "tokentap analyze: %s: no HTTP/1.1 exchange found at any vantage\n", dir);
        if (status == TT_EXIT_OK) status = TT_EXIT_NO_HTTP;
    }
    tt_join_options jopt = {.clock_is_mono = true, .has_wall_to_mono = true, .wall_to_mono_ns = offset};
    int wrote = write_reports(o, dir, as, n, true, &jopt);
    if (wrote != TT_EXIT_OK) status = wrote;
    for (size_t k = 0; k < n; k++) vantage_run_free(&runs[k]);
    free(runs);
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
    bool have_offset = false;
    long long mono_offset = 0;
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
        case 'W': {
            char *end;
            errno = 0;
            mono_offset = strtoll(optarg, &end, 10);
            if (errno || end == optarg || *end) {
                fprintf(stderr, "tokentap analyze: --wall-to-mono-offset wants an integer of nanoseconds, got '%s'\n",
                        optarg);
                return TT_EXIT_USAGE;
            }
            have_offset = true;
            break;
        }
        case 'p':
            n_pct = tt_parse_percentiles(optarg, pct, TT_MAX_PERCENTILES, err, sizeof err);
            if (n_pct < 0) {
                fprintf(stderr, "tokentap analyze: %s\n", err);
                return TT_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return TT_EXIT_OK;
        case ':':
            fprintf(stderr, "tokentap analyze: %s needs a value (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        default:
            fprintf(stderr, "tokentap analyze: unknown option '%s' (try --help)\n", argv[optind - 1]);
            return TT_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "tokentap analyze: expected exactly one capture file (try --help)\n");
        return TT_EXIT_USAGE;
    }
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
    analyze_opts o = {.json = json, .events = events, .text = text, .output = output, .perfetto = perfetto,
                      .pct = pct, .n_pct = n_pct, .bench = bench_path ? &bench : NULL};
    int status = analyze_path(argv[optind], &o, have_offset, mono_offset);
    tt_bench_result_free(&bench);
    return status;
}

/* One capture file or recording directory. */
static int analyze_path(const char *path, const analyze_opts *o, bool have_offset, long long mono_offset)
{
    char err[256];
    struct stat st;
    char manifest[4096];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", path);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(manifest, F_OK) == 0) {
        if (have_offset) {
            fprintf(stderr, "tokentap analyze: --wall-to-mono-offset does not apply to a recording (its manifest has one)\n");
            return TT_EXIT_USAGE;
        }
        return analyze_directory(path, o);
    }

    /* Connections come and go while requests accumulate: keep freed heap
     * instead of returning it to the kernel and faulting it back in. */
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    mallopt(M_TOP_PAD, 16 << 20);
    mallopt(M_MMAP_THRESHOLD, 64 << 20);

    tt_pcap_source *src = tt_pcap_source_open(path, err, sizeof err);
    if (!src) {
        fprintf(stderr, "tokentap analyze: %s\n", err);
        return TT_EXIT_INPUT;
    }
    if (have_offset) tt_pcap_source_set_mono_offset(src, mono_offset);
    tt_tracker_options topt = {.keep_text = o->text};
    tt_tracker *tracker = tt_tracker_new(&topt);
    tt_reasm *reasm = tt_reasm_new(NULL, TT_VANTAGE_WIRE, tt_tracker_chunk, tracker);
    if (!tracker || !reasm) {
        fprintf(stderr, "tokentap analyze: out of memory\n");
        return TT_EXIT_INTERNAL;
    }
    bool show_progress = isatty(STDERR_FILENO);
    int rc = tt_pcap_source_run(src, reasm, show_progress ? progress : NULL, NULL, err, sizeof err);
    if (show_progress) fputs("\r\033[K", stderr);
    const char *source_error = rc < 0 ? err : NULL;
    if (source_error) fprintf(stderr, "tokentap analyze: %s: %s\n", path, source_error);

    tt_analysis a = {
        .input = path,
        .vantage = TT_VANTAGE_WIRE,
        .clock = tt_pcap_source_clock(src),
        .has_mono_offset = have_offset,
        .mono_offset_ns = mono_offset,
        .pcap = tt_pcap_source_stats(src),
        .reasm = tt_reasm_get_stats(reasm),
        .tracker = tracker,
        .source_error = source_error,
        .with_text = o->text,
    };
    if (tt_analysis_fill(&a, tracker, o->pct, (size_t)o->n_pct) < 0) {
        fprintf(stderr, "tokentap analyze: out of memory\n");
        return TT_EXIT_INTERNAL;
    }

    int status = source_error ? TT_EXIT_DAMAGED : TT_EXIT_OK;
    if (a.n_reqs == 0) {
        fprintf(stderr, "tokentap analyze: %s: no HTTP/1.1 exchange found (%llu packets, %llu connections)\n",
                path, (unsigned long long)a.pcap->packets, (unsigned long long)tt_tracker_connections(tracker));
        if (!source_error) status = TT_EXIT_NO_HTTP;
    }
    const tt_analysis *as[1] = {&a};
    tt_join_options jopt = {.clock_is_mono = a.clock == TT_CLOCK_MONOTONIC,
                            .has_wall_to_mono = have_offset,
                            .wall_to_mono_ns = mono_offset};
    int wrote = write_reports(o, path, as, 1, false, &jopt);
    if (wrote != TT_EXIT_OK) status = wrote;
    tt_analysis_release(&a);
    tt_reasm_free(reasm);
    tt_tracker_free(tracker);
    tt_pcap_source_close(src);
    return status;
}
