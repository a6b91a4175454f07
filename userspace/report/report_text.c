#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lint/lint.h"
#include "report/report.h"

#define MAX_LISTED 20

void tt_report_rule(FILE *out, const char *title, char fill)
{
    size_t n = strlen(title), width = 50;
    size_t left = n < width ? (width - n) / 2 : 0, right = n < width ? width - n - left : 0;
    for (size_t i = 0; i < left; i++) putc(fill, out);
    fputs(title, out);
    for (size_t i = 0; i < right; i++) putc(fill, out);
    putc('\n', out);
}

static void line_count(FILE *out, const char *label, uint64_t v)
{
    fprintf(out, "%-40s %-10" PRIu64 "\n", label, v);
}

static void line_float(FILE *out, const char *label, double v)
{
    if (isfinite(v)) fprintf(out, "%-40s %-10.2f\n", label, v);
    else fprintf(out, "%-40s %-10s\n", label, "n/a");
}

static void distribution(FILE *out, const tt_summary *s, const tt_distribution *d, const char *title,
                         const char *name)
{
    char label[64];
    tt_report_rule(out, title, '-');
    if (d->n == 0) {
        snprintf(label, sizeof label, "%s (ms):", name);
        fprintf(out, "%-40s %-10s\n", label, "n/a (no complete sample)");
        return;
    }
    snprintf(label, sizeof label, "Mean %s (ms):", name);
    line_float(out, label, d->mean / 1e6);
    snprintf(label, sizeof label, "Median %s (ms):", name);
    line_float(out, label, d->median / 1e6);
    for (size_t i = 0; i < s->n_pct; i++) {
        snprintf(label, sizeof label, "P%g %s (ms):", s->pct_at[i], name);
        line_float(out, label, d->pct[i] / 1e6);
    }
}

static void ms_cell(FILE *out, bool has, double ns)
{
    if (has) fprintf(out, " %10.3f", ns / 1e6);
    else fprintf(out, " %10s", "-");
}

static void request_table(FILE *out, const tt_analysis *a)
{
    fprintf(out, "\n%-4s %-24s %-6s %-14s %10s %10s %10s %7s %7s  %s\n", "#", "request", "status", "dialect",
            "TTFT ms", "TPOT ms", "E2EL ms", "events", "tokens", "notes");
    size_t shown = 0;
    for (size_t i = 0; i < a->n_reqs && shown < MAX_LISTED; i++, shown++) {
        const tt_request *r = &a->reqs[i];
        const tt_req_metrics *m = &a->metrics[i];
        char ep[64], name[192], why[128];
        if (r->request_id[0]) snprintf(name, sizeof name, "%s", r->request_id);
        else snprintf(name, sizeof name, "%s#%u", tt_endpoint_format(&r->client, ep, sizeof ep), r->ordinal);
        fprintf(out, "%-4zu %-24s %-6d %-14s", i, name, r->status, tt_dialect_name(r->dialect));
        ms_cell(out, m->has_ttft, (double)m->ttft_ns);
        ms_cell(out, m->has_tpot, m->tpot_ns);
        ms_cell(out, m->has_e2el, (double)m->e2el_ns);
        fprintf(out, " %7u %7" PRId64 "  ", m->token_events, m->output_tokens);
        if (!tt_request_complete(r)) {
            fprintf(out, "incomplete: %s", tt_incomplete_reasons(r, why, sizeof why));
            if (r->gap_bytes) fprintf(out, " (%" PRIu64 " bytes lost)", r->gap_bytes);
        } else if (!r->terminal_seen && r->framing != TT_FRAMING_NONE) {
            fputs("no terminal event", out);
        }
        if (r->usage_completion_tokens >= 0 && (uint64_t)r->usage_completion_tokens != r->token_events)
            fprintf(out, "%susage %" PRId64 " != %u token events", tt_request_complete(r) ? "" : "; ",
                    r->usage_completion_tokens, r->token_events);
        putc('\n', out);
    }
    if (a->n_reqs > shown) fprintf(out, "(%zu more requests: --json lists every one)\n", a->n_reqs - shown);
}

void tt_report_text(FILE *out, const tt_analysis *a)
{
    const tt_summary *s = &a->summary;
    fprintf(out, "tokentap %s %s\n", a->command ? a->command : "analyze", a->input);
    fprintf(out, "vantage: %s   clock: %s", tt_vantage_name(a->vantage), tt_clock_name(a->clock));
    if (a->has_mono_offset) fprintf(out, " (wall - %" PRId64 " ns)", a->mono_offset_ns);
    if (a->pcap)
        fprintf(out, "   packets: %" PRIu64 "   connections: %" PRIu64, a->pcap->packets,
                tt_tracker_connections(a->tracker));
    putc('\n', out);
    if (a->source_error) fprintf(out, "warning: %s\n", a->source_error);
    if (a->reasm && a->reasm->gaps)
        fprintf(out, "warning: %" PRIu64 " gaps, %" PRIu64 " bytes never captured\n", a->reasm->gaps,
                a->reasm->gap_bytes);

    tt_report_rule(out, " Serving Benchmark Result ", '=');
    line_count(out, "Requests seen:", s->requests);
    line_count(out, "Successful requests (complete):", s->complete);
    line_count(out, "Incomplete requests:", s->incomplete);
    line_count(out, "Error responses:", s->http_errors);
    line_float(out, "Benchmark duration (s):", s->duration_s);
    line_count(out, "Total token events:", s->token_events);
    line_count(out, "Total generated tokens:", s->output_tokens);
    line_float(out, "Request throughput (req/s):", s->request_throughput);
    line_float(out, "Output token throughput (tok/s):", s->output_throughput);
    distribution(out, s, &s->ttft, "Time to First Token", "TTFT");
    distribution(out, s, &s->tpot, "Time per Output Token (excl. 1st token)", "TPOT");
    distribution(out, s, &s->itl, "Inter-token Latency", "ITL");
    distribution(out, s, &s->e2el, "End-to-end Latency", "E2EL");
    tt_report_rule(out, "", '=');
    if (a->n_reqs) request_table(out, a);
    for (size_t i = 0; i < a->n_notes; i++) {
        char c[64], sv[64];
        fprintf(out, "connection %s -> %s%s: %s\n", tt_endpoint_format(&a->notes[i].client, c, sizeof c),
                tt_endpoint_format(&a->notes[i].server, sv, sizeof sv), a->notes[i].analysed ? "" : " not analysed",
                a->notes[i].reason);
    }
    tt_lint_write_text(out, a->lint, &(tt_lint_view){.reqs = a->reqs, .with_text = a->with_text});
}
