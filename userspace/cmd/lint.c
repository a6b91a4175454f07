/* lint.c - `tokentap lint`: a capture or a recording in, the framing and
 * protocol findings of every response out (docs/framing.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocks/clock_set.h"
#include "cmd/cmd_input.h"
#include "cmd/commands.h"
#include "lint/lint.h"
#include "report/json_writer.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tokentap lint [OPTIONS] CAPTURE|DIR\n"
            "       tokentap lint [OPTIONS] DIR DIR...   (recordings of several hosts: every\n"
            "                                            vantage's findings, each on its own clock)\n"
            "\n"
            "Reconstruct every streamed response in CAPTURE (pcap or pcapng) or in a\n"
            "recording DIR (`tokentap record`: each vantage present), and list what in\n"
            "its framing or protocol makes known benchmark clients mis-measure or fail:\n"
            "CRLF separators, split or coalesced events, keep-alives, usage frames with\n"
            "choices, a missing terminal event, and the rest of the catalogue in\n"
            "docs/framing.md. One finding per request and id: its first occurrence's\n"
            "event, body offset and instant, how often it occurred, and the raw bytes\n"
            "(length and FNV-1a hash; escaped, with --text).\n"
            "\n"
            "options:\n"
            "  --json               write the JSON document (docs/formats.md) instead of text\n"
            "  --text               show the raw bytes of each finding, escaped\n"
            "  --fail-on LEVEL      exit 1 when a finding of LEVEL or worse is present:\n"
            "                       info, warn, error (default) or none\n"
            "  -o, --output FILE    write to FILE (created mode 0600) instead of stdout\n"
            "  --wall-to-mono-offset NS\n"
            "                       convert a capture's wall-clock timestamps to CLOCK_MONOTONIC\n"
            "  -h, --help           this help\n"
            "\n"
            "severities: error (the response or any measurement of it is wrong), warn\n"
            "(known clients mis-measure it), info (legal; some client handles it badly).\n"
            "\n"
            "exit status: 0 no finding at or above --fail-on; 1 such a finding; 2 bad usage;\n"
            "3 input unreadable or not a capture; 4 no HTTP exchange found; 5 capture\n"
            "damaged part way (findings cover what came before; 1 still wins); 6 output not\n"
            "written.\n");
}

/* as[0..n): every vantage of every input, in order */
static void write_text(FILE *out, const char *path, const tt_analysis *const *as, size_t n, bool with_text)
{
    fprintf(out, "tokentap lint %s\n", path);
    for (size_t k = 0; k < n; k++) {
        const tt_analysis *a = as[k];
        fprintf(out, "%svantage: %s   requests: %zu   input: %s\n", k ? "\n" : "", tt_vantage_name(a->vantage),
                a->n_reqs, a->input);
        if (a->source_error) fprintf(out, "warning: %s\n", a->source_error);
        tt_lint_write_text(out, a->lint, &(tt_lint_view){.reqs = a->reqs, .with_text = with_text, .detailed = true});
    }
}

static void write_json(FILE *out, const char *path, const tt_analysis *const *as, size_t n, bool with_text,
                       tt_lint_severity fail_on, bool failed)
{
    tt_jw w;
    tt_jw_init(&w, out, true);
    tt_jw_object_begin(&w, NULL);
    tt_jw_object_begin(&w, "tokentap");
    tt_jw_str(&w, "version", TT_VERSION);
    tt_jw_str(&w, "schema", "tokentap.lint/1");
    tt_jw_object_end(&w);
    tt_jw_str(&w, "input", path);
    tt_jw_str(&w, "fail_on", tt_lint_severity_name(fail_on));
    tt_jw_bool(&w, "failed", failed);
    tt_jw_array_begin(&w, "vantages");
    for (size_t k = 0; k < n; k++) {
        const tt_analysis *a = as[k];
        tt_jw_object_begin(&w, NULL);
        tt_jw_str(&w, "vantage", tt_vantage_name(a->vantage));
        tt_jw_str(&w, "input", a->input);
        tt_jw_uint(&w, "requests", a->n_reqs);
        tt_jw_str_or_null(&w, "source_error", a->source_error);
        tt_lint_write_json_summary(&w, "summary", a->lint);
        tt_jw_object_end(&w);
    }
    tt_jw_array_end(&w);
    tt_jw_array_begin(&w, "findings");
    for (size_t k = 0; k < n; k++) {
        const tt_analysis *a = as[k];
        tt_lint_view v = {.reqs = a->reqs, .with_text = with_text, .vantage = tt_vantage_name(a->vantage)};
        tt_lint_write_json_items(&w, a->lint, &v);
    }
    tt_jw_array_end(&w);
    tt_jw_object_end(&w);
    tt_jw_end(&w);
}

int tt_cmd_lint(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},         {"text", no_argument, NULL, 't'},
        {"fail-on", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},         {"wall-to-mono-offset", required_argument, NULL, 'W'},
        {NULL, 0, NULL, 0},
    };
    static const double pct[] = {99};
    tt_cmd_input_options opt = {.command = "lint", .keep_body = true, .pct = pct, .n_pct = 1, .progress = true};
    bool json = false, text = false;
    const char *output = NULL;
    tt_lint_severity fail_on = TT_LINT_ERROR;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 't': text = true; break;
        case 'o': output = optarg; break;
        case 'f':
            if (!tt_lint_parse_severity(optarg, &fail_on)) {
                fprintf(stderr, "tokentap lint: --fail-on wants info, warn, error or none, got '%s'\n", optarg);
                return TT_EXIT_USAGE;
            }
            break;
        case 'W':
            if (tt_cmd_input_parse_offset(&opt, optarg) != TT_EXIT_OK) return TT_EXIT_USAGE;
            break;
        case 'h': usage(stdout); return TT_EXIT_OK;
        default: return tt_cmd_option_error("lint", c, argv);
        }
    }
    /* one capture or recording; or several recordings (hosts), each vantage on its own clock */
    size_t n_in = argc > optind ? (size_t)(argc - optind) : 0;
    const char *one = n_in > 1 ? argv[optind] : tt_cmd_input_operand("lint", argc, argv);
    if (!one) return TT_EXIT_USAGE;
    if (n_in > TT_CLOCK_MAX_RECORDINGS) {
        fprintf(stderr, "tokentap lint: at most %d recordings at once\n", TT_CLOCK_MAX_RECORDINGS);
        return TT_EXIT_USAGE;
    }
    for (size_t i = 0; n_in > 1 && i < n_in; i++)
        if (!tt_cmd_input_is_recording(argv[optind + (int)i])) {
            fprintf(stderr, "tokentap lint: %s is not a recording directory (several operands must each be one)\n",
                    argv[optind + (int)i]);
            return TT_EXIT_USAGE;
        }
    opt.keep_text = text;
    tt_cmd_input ins[TT_CLOCK_MAX_RECORDINGS];
    memset(ins, 0, sizeof ins);
    int status = TT_EXIT_OK;
    char label[1024] = "";
    size_t used = 0, loaded = 0;
    for (size_t i = 0; i < (n_in > 1 ? n_in : 1); i++) {
        const char *path = n_in > 1 ? argv[optind + (int)i] : one;
        used += (size_t)snprintf(label + used, used < sizeof label ? sizeof label - used : 0, "%s%s", i ? " + " : "", path);
        if (used >= sizeof label) used = sizeof label - 1;
        int rc = tt_cmd_input_load(path, &opt, &ins[i]);
        loaded = i + 1;
        if (rc != TT_EXIT_OK && rc != TT_EXIT_DAMAGED && rc != TT_EXIT_NO_HTTP) {
            for (size_t k = 0; k < loaded; k++) tt_cmd_input_free(&ins[k]);
            return rc;
        }
        if (rc != TT_EXIT_OK && status == TT_EXIT_OK) status = rc;
    }
    const tt_analysis *as[TT_CLOCK_MAX_RECORDINGS * TT_VANTAGE_COUNT];
    size_t n_as = 0;
    for (size_t i = 0; i < loaded; i++)
        for (size_t k = 0; k < ins[i].n; k++) as[n_as++] = ins[i].analyses[k];
    bool failed = false;
    for (size_t k = 0; k < n_as; k++) failed = failed || tt_lint_fails(as[k]->lint, fail_on);
    if (failed) status = TT_EXIT_FINDINGS;

    FILE *out = tt_open_output(output);
    if (!out) {
        fprintf(stderr, "tokentap lint: cannot write %s: %s\n", output, strerror(errno));
        status = TT_EXIT_OUTPUT;
    } else {
        if (json) write_json(out, label, as, n_as, text, fail_on, failed);
        else write_text(out, label, as, n_as, text);
        int closed = tt_cmd_output_close("lint", out, output);
        if (closed != TT_EXIT_OK) status = closed;
    }
    if (failed && status == TT_EXIT_FINDINGS)
        fprintf(stderr, "tokentap lint: findings at or above '%s' (exit 1)\n", tt_lint_severity_name(fail_on));
    for (size_t k = 0; k < loaded; k++) tt_cmd_input_free(&ins[k]);
    return status;
}
