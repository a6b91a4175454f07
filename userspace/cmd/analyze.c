/* analyze.c - `tokentap analyze`: a capture file or a recording DIR in
 * (read by cmd_input), the per-request timing report out. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clocks/clock_set.h"
#include "cmd/cmd_input.h"
#include "cmd/commands.h"
#include "import/bench_import.h"
#include "metrics/metrics.h"
#include "report/release_digest.h"
#include "report/report.h"
#include "report/report_multi.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap analyze [OPTIONS] CAPTURE|DIR\n"
            "       tokentap analyze [OPTIONS] DIR DIR...   (recordings of several hosts)\n"
            "\n"
            "Reconstruct the HTTP/1.1 streams in CAPTURE (pcap or pcapng), frame each\n"
            "response body as SSE or NDJSON, classify every event, and report TTFT, TPOT,\n"
            "ITL and E2EL per request at the wire vantage.\n"
            "A DIR written by `tokentap record` is read whole: each vantage present (server,\n"
            "client, wire; the wire converted to CLOCK_MONOTONIC with the manifest's offset),\n"
            "joined request by request (x-request-id, else connection and TCP sequence\n"
            "number, else connection and ordinal, else response id): the text report shows\n"
            "the vantages side by side, where the time went (uplink, server queue, server,\n"
            "downlink, client queue), the lint findings (each once per request, with the\n"
            "vantages that saw it) and then each vantage's own report; --json writes one\n"
            "document whose requests carry vantages.server, .client and .wire, and whose\n"
            "findings name their vantage and joined request.\n"
            "With --bench-result the benchmark's own result file joins too: its TTFT and\n"
            "E2EL are split into send lag, uplink, server queue, server, downlink, client\n"
            "queue and client lag (docs/metrics.md), and where it disagrees with the\n"
            "capture is listed.\n"
            "Several DIRs (recordings made on different hosts) are put on the first one's\n"
            "clock from the bytes they exchanged and joined as one (docs/clocks.md): the\n"
            "offset, skew and uncertainty found (\"clocks\" in --json), and +- on the parts\n"
            "that cross hosts; --bench-result is read on the clock of the recording that\n"
            "holds the client vantage.\n"
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
            "  -j, --jobs N         read a capture file with N threads, each following its share of\n"
            "                       the connections, merged into the report one thread writes\n"
            "                       (default: the CPUs it may run on, see taskset; 1: one thread).\n"
            "                       A recording DIR, and a file read through libpcap (neither pcap\n"
            "                       nor pcapng read in place), are read with one thread\n"
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
                         bool recording, const tt_join_options *jopt, const tt_clock_set *clocks)
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
        b.clocks = clocks;
    }
    int status = TT_EXIT_OK;
    FILE *out = tt_open_output(o->output);
    if (!out) {
        fprintf(stderr, "tokentap analyze: cannot write %s: %s\n", o->output, strerror(errno));
        status = TT_EXIT_OUTPUT;
    } else {
        tt_report_vantages(out, input, as, n, joined ? &b : NULL, o->json, o->events);
        status = tt_cmd_output_close("analyze", out, o->output);
        for (size_t k = 0; k < n && status == TT_EXIT_OK; k++)
            if (as[k]->released && as[k]->released->read_failed) {
                fprintf(stderr, "tokentap analyze: the temporary file of the JSON requests could not be read back\n");
                status = TT_EXIT_OUTPUT;
            }
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
        int wrote = write_reports(o, path, in.analyses, in.n, in.recording, &jopt, NULL);
        if (wrote != TT_EXIT_OK) status = wrote;
    }
    tt_cmd_input_free(&in);
    return status;
}

/* The earliest request instant of a recording's analyses (its t0 for the fit). */
static int64_t first_instant(const tt_cmd_input *in)
{
    uint64_t t = TT_NS_NONE;
    for (size_t v = 0; v < in->n; v++)
        for (size_t i = 0; i < in->analyses[v]->n_reqs; i++)
            if (in->analyses[v]->reqs[i].req_first_ns < t) t = in->analyses[v]->reqs[i].req_first_ns;
    return t == TT_NS_NONE ? 0 : (int64_t)t;
}

/* How recording in (read raw) goes onto the reference's clock: the same
 * clock, the traffic's fit, or the wall clocks. TT_EXIT_OK with e filled,
 * else TT_EXIT_INPUT after one line on stderr. */
static int place_recording(const tt_cmd_input *ref, const tt_cmd_input *raw, const char *path, tt_clock_entry *e)
{
    e->recording = path;
    e->wall_offset_ns = (double)raw->mono_offset_ns - (double)ref->mono_offset_ns;
    e->t0_ns = first_instant(raw);
    e->ca = tt_clock_align_new(e->t0_ns);
    if (!e->ca || tt_clock_bounds_add(e->ca, ref->analyses, ref->n, raw->analyses, raw->n, &e->match) < 0) {
        fprintf(stderr, "tokentap analyze: out of memory\n");
        return TT_EXIT_INTERNAL;
    }
    if (!e->match.requests) {
        fprintf(stderr, "tokentap analyze: %s: no request in common with %s (a client side in one, its server side "
                        "in the other): nothing to put them on one timeline with\n", path, ref->analyses[0]->input);
        return TT_EXIT_INPUT;
    }
    if (ref->clock_id[0] && !strcmp(ref->clock_id, raw->clock_id)) {
        e->method = TT_CLOCK_METHOD_SAME_HOST;
        return TT_EXIT_OK;
    }
    if (tt_clock_align_fit(e->ca, &e->fit) < 0) {
        fprintf(stderr, "tokentap analyze: out of memory\n");
        return TT_EXIT_INTERNAL;
    }
    switch (e->fit.status) {
    case TT_CLOCK_FIT_OK:
        e->method = TT_CLOCK_METHOD_TRAFFIC;
        e->offset_ns = e->fit.offset_ns;
        e->skew_ppm = e->fit.skew_ppm;
        e->uncertainty_ns = e->fit.uncertainty_ns;
        return TT_EXIT_OK;
    case TT_CLOCK_FIT_CONTRADICTION:
        fprintf(stderr, "tokentap analyze: %s: the bytes it shares with %s bound its clock from both sides and the "
                        "bounds contradict each other by %.1f us at best (a middlebox, a wrong match, a stepped "
                        "clock): no common timeline\n", path, ref->analyses[0]->input, e->fit.worst_violation_ns / 1e3);
        return TT_EXIT_INPUT;
    case TT_CLOCK_FIT_NONE:
    case TT_CLOCK_FIT_ONE_SIDED:
        break;
    }
    fprintf(stderr, "tokentap analyze: %s: its bytes bound the clock from one side only: the manifests' wall clocks "
                    "place it (method wall-clock, no uncertainty known)\n", path);
    e->method = TT_CLOCK_METHOD_WALL_CLOCK;
    e->offset_ns = e->wall_offset_ns;
    e->uncertainty_ns = NAN;
    return TT_EXIT_OK;
}

/* Which of in's analyses is a wire that saw requests; SIZE_MAX when none. */
static size_t wire_index(const tt_cmd_input *in)
{
    for (size_t v = 0; v < in->n; v++)
        if (in->analyses[v]->vantage == TT_VANTAGE_WIRE && in->analyses[v]->n_reqs) return v;
    return SIZE_MAX;
}

/* Several recording directories on the first one's clock, joined and
 * reported as one (docs/clocks.md). Each vantage comes from the first
 * recording that has it, but for the wires of two hosts: the client
 * host's joins as client_wire. Any other second copy of a vantage is named
 * and left out. */
static int analyze_recordings(char **paths, size_t n, const analyze_opts *o)
{
    if (n > TT_CLOCK_MAX_RECORDINGS) {
        fprintf(stderr, "tokentap analyze: at most %d recordings at once\n", TT_CLOCK_MAX_RECORDINGS);
        return TT_EXIT_USAGE;
    }
    for (size_t k = 0; k < n; k++)
        if (!tt_cmd_input_is_recording(paths[k])) {
            fprintf(stderr, "tokentap analyze: %s is not a recording directory (several operands must each be "
                            "one, with manifest.json)\n", paths[k]);
            return TT_EXIT_USAGE;
        }
    if (o->events) {
        fprintf(stderr, "tokentap analyze: --events reads one recording at a time\n");
        return TT_EXIT_USAGE;
    }
    tt_cmd_input in[TT_CLOCK_MAX_RECORDINGS];
    memset(in, 0, sizeof in);
    tt_clock_set cs;
    memset(&cs, 0, sizeof cs);
    for (int v = 0; v < TT_VANTAGE_COUNT; v++) cs.recording_of[v] = -1;
    int status = tt_cmd_input_load(paths[0], &o->input, &in[0]);
    size_t loaded = 1;
    cs.e[0] = (tt_clock_entry){.recording = paths[0], .method = TT_CLOCK_METHOD_REFERENCE,
                               .t0_ns = first_instant(&in[0])};
    cs.n = 1;
    for (size_t k = 1; k < n && (status == TT_EXIT_OK || status == TT_EXIT_DAMAGED); k++) {
        tt_cmd_input raw;
        int rc = tt_cmd_input_load(paths[k], &o->input, &raw);
        if (rc == TT_EXIT_OK || rc == TT_EXIT_DAMAGED) rc = place_recording(&in[0], &raw, paths[k], &cs.e[k]);
        cs.n = k + 1;
        tt_cmd_input_free(&raw);
        if (rc != TT_EXIT_OK) {
            status = rc;
            break;
        }
        tt_cmd_input_options mapped = o->input;
        const tt_clock_entry *e = &cs.e[k];
        mapped.has_clock_map = e->method != TT_CLOCK_METHOD_SAME_HOST;
        mapped.quiet_damage = true; /* read a second time, on the reference's clock */
        mapped.map_d0_ns = e->offset_ns;
        mapped.map_skew = e->skew_ppm * 1e-6;
        mapped.map_t0_ns = e->t0_ns;
        rc = tt_cmd_input_load(paths[k], &mapped, &in[k]);
        loaded = k + 1;
        if (rc != TT_EXIT_OK && status == TT_EXIT_OK) status = rc;
    }
    if (status == TT_EXIT_OK || status == TT_EXIT_DAMAGED) {
        /* each vantage from the first recording where it saw requests (else where it is present) */
        const tt_analysis *pick[TT_VANTAGE_COUNT] = {0};
        for (int pass = 0; pass < 2; pass++)
            for (size_t k = 0; k < loaded; k++)
                for (size_t v = 0; v < in[k].n; v++) {
                    const tt_analysis *a = in[k].analyses[v];
                    if (pick[a->vantage] || (pass == 0 && !a->n_reqs)) continue;
                    pick[a->vantage] = a;
                    cs.recording_of[a->vantage] = (int)k;
                }
        /* Two hosts, two wires: the one of the recording that holds the
         * client vantage is the client host's (client_wire), the other the
         * server host's (wire). */
        int sr = cs.recording_of[TT_VANTAGE_SERVER], cr = cs.recording_of[TT_VANTAGE_CLIENT];
        if (sr >= 0 && cr >= 0 && sr != cr) {
            size_t sw = wire_index(&in[sr]), cw = wire_index(&in[cr]);
            if (sw != SIZE_MAX && cw != SIZE_MAX) {
                tt_cmd_input_relabel(&in[cr], cw, TT_VANTAGE_CLIENT_WIRE);
                pick[TT_VANTAGE_WIRE] = in[sr].analyses[sw];
                pick[TT_VANTAGE_CLIENT_WIRE] = in[cr].analyses[cw];
                cs.recording_of[TT_VANTAGE_WIRE] = sr;
                cs.recording_of[TT_VANTAGE_CLIENT_WIRE] = cr;
            }
        }
        const tt_analysis *as[TT_VANTAGE_COUNT];
        size_t na = 0;
        for (size_t k = 0; k < loaded; k++)
            for (size_t v = 0; v < in[k].n; v++) {
                const tt_analysis *a = in[k].analyses[v];
                if (pick[a->vantage] == a) as[na++] = a;
                else if (a->n_reqs)
                    fprintf(stderr, "tokentap analyze: %s: its %s vantage is left out (that vantage comes from %s)\n",
                            paths[k], tt_vantage_name(a->vantage), paths[cs.recording_of[a->vantage]]);
            }
        /* the benchmark ran where the client vantage was recorded */
        int bench_rec = cs.recording_of[TT_VANTAGE_CLIENT] >= 0 ? cs.recording_of[TT_VANTAGE_CLIENT] : 0;
        tt_join_options jopt = tt_cmd_input_join_options(&in[bench_rec]);
        if (bench_rec > 0 && cs.e[bench_rec].method != TT_CLOCK_METHOD_SAME_HOST) {
            jopt.has_clock_map = true;
            jopt.map_d0_ns = cs.e[bench_rec].offset_ns;
            jopt.map_skew = cs.e[bench_rec].skew_ppm * 1e-6;
            jopt.map_t0_ns = cs.e[bench_rec].t0_ns;
        }
        char label[1024];
        size_t used = 0;
        for (size_t k = 0; k < n && used < sizeof label - 1; k++)
            used += (size_t)snprintf(label + used, sizeof label - used, "%s%s", k ? " + " : "", paths[k]);
        int wrote = write_reports(o, label, as, na, true, &jopt, &cs);
        if (wrote != TT_EXIT_OK) status = wrote;
    }
    for (size_t k = 0; k < loaded; k++) tt_cmd_input_free(&in[k]);
    tt_clock_set_free(&cs);
    return status;
}

/* --jobs by default: the CPUs this process may run on (taskset), else the
 * CPUs online; at most 64. */
static unsigned default_jobs(void)
{
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > 64 ? 64 : (unsigned)cpus;
}

int tt_cmd_analyze(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 0x100},       {"events", no_argument, NULL, 'e'},
        {"text", no_argument, NULL, 't'},       {"percentiles", required_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
        {"wall-to-mono-offset", required_argument, NULL, 'W'},
        {"bench-result", required_argument, NULL, 'B'},
        {"bench-format", required_argument, NULL, 'F'},
        {"perfetto", required_argument, NULL, 'P'},
        {"bench-id-prefix", required_argument, NULL, 'I'},
        {"jobs", required_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, events = false, text = false;
    const char *output = NULL, *bench_path = NULL, *perfetto = NULL, *id_prefix = NULL;
    tt_bench_format bench_format = TT_BENCH_AUTO;
    tt_cmd_input_options input = {.command = "analyze", .progress = true};
    input.jobs = default_jobs();
    double pct[TT_MAX_PERCENTILES] = {99};
    int n_pct = 1;
    char err[256];
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:j:h", longopts, NULL)) != -1) {
        switch (c) {
        case 0x100: json = true; break;
        case 'e': events = true; break;
        case 't': text = true; break;
        case 'o': output = optarg; break;
        case 'B': bench_path = optarg; break;
        case 'P': perfetto = optarg; break;
        case 'I': id_prefix = optarg; break;
        case 'j': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 1 || v > 64) {
                fprintf(stderr, "tokentap analyze: --jobs wants a number of threads from 1 to 64, got '%s'\n",
                        optarg);
                return TT_EXIT_USAGE;
            }
            input.jobs = (unsigned)v;
            break;
        }
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
    const char *path = optind + 1 < argc ? argv[optind] : tt_cmd_input_operand("analyze", argc, argv);
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
    /* the text summary and the JSON document read no event once the
     * requests are filed: each request's events go once its ITLs, findings
     * (and JSON object) are taken */
    input.release_events = !events && !perfetto && !bench_path;
    input.release_json = json;
    input.pct = pct;
    input.n_pct = (size_t)n_pct;
    analyze_opts o = {.json = json, .events = events, .output = output, .perfetto = perfetto,
                      .bench = bench_path ? &bench : NULL, .input = input};
    int status = optind + 1 < argc ? analyze_recordings(argv + optind, (size_t)(argc - optind), &o)
                                   : analyze_path(path, &o);
    tt_bench_result_free(&bench);
    return status;
}
