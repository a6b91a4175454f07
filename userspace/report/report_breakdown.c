/* report_breakdown.c - the text report over several vantages and the
 * benchmark's record: the vllm-style blocks side by side, where the time
 * went, and where the two sides disagree. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lint/lint.h"
#include "clocks/clock_set.h"
#include "report/report_multi.h"

#define MAX_COLUMNS (TT_VANTAGE_COUNT + 1)
#define MAX_DISAGREEMENTS_LISTED 10
#define MAX_FINDINGS_LISTED 10

_Static_assert(TT_LINT_COUNT <= 32, "a request's finding ids are kept as bits of a uint32_t");

/* The order vantages are named in, as in the side-by-side columns. */
static const tt_vantage column_order[] = {TT_VANTAGE_CLIENT_TLS, TT_VANTAGE_CLIENT, TT_VANTAGE_CLIENT_WIRE,
                                          TT_VANTAGE_WIRE,       TT_VANTAGE_SERVER, TT_VANTAGE_SERVER_TLS};
#define N_COLUMN_VANTAGES (sizeof column_order / sizeof *column_order)

typedef struct column {
    const char *name;
    size_t ok, failed;
    uint64_t tokens;
    double duration_s;
    const tt_distribution *ttft, *tpot, *itl, *e2el;
} column;

static void row_counts(FILE *out, const char *label, const column *c, size_t n, int what)
{
    fprintf(out, "%-34s", label);
    for (size_t k = 0; k < n; k++) {
        uint64_t v = what == 0 ? c[k].ok : what == 1 ? c[k].failed : c[k].tokens;
        fprintf(out, " %10" PRIu64, v);
    }
    putc('\n', out);
}

static void cell_ms(FILE *out, double ns, bool has)
{
    if (has && isfinite(ns)) fprintf(out, " %10.2f", ns / 1e6);
    else fprintf(out, " %10s", "-");
}

static void block(FILE *out, const tt_breakdown *b, const column *c, size_t n, int which, const char *title,
                  const char *name)
{
    char label[64];
    tt_report_rule(out, title, '-');
    for (int stat = 0; stat < 2 + (int)b->n_pct; stat++) {
        if (stat == 0) snprintf(label, sizeof label, "Mean %s (ms):", name);
        else if (stat == 1) snprintf(label, sizeof label, "Median %s (ms):", name);
        else snprintf(label, sizeof label, "P%g %s (ms):", b->pct_at[stat - 2], name);
        fprintf(out, "%-34s", label);
        for (size_t k = 0; k < n; k++) {
            const tt_distribution *d = which == 0 ? c[k].ttft : which == 1 ? c[k].tpot : which == 2 ? c[k].itl : c[k].e2el;
            double v = stat == 0 ? d->mean : stat == 1 ? d->median : d->pct[stat - 2];
            cell_ms(out, v, d->n > 0);
        }
        putc('\n', out);
    }
}

static void side_by_side(FILE *out, const tt_breakdown *b)
{
    column c[MAX_COLUMNS];
    size_t n = 0;
    if (b->has_reported)
        c[n++] = (column){.name = "reported", .ok = b->reported_ok, .failed = b->reported_failed,
                          .tokens = b->reported_output_tokens, .ttft = &b->reported_ttft, .tpot = &b->reported_tpot,
                          .itl = &b->reported_itl, .e2el = &b->reported_e2el};
    for (size_t k = 0; k < N_COLUMN_VANTAGES; k++) {
        const tt_analysis *a = b->join.by_vantage[column_order[k]];
        if (!a) continue;
        const tt_summary *s = &a->summary;
        c[n++] = (column){.name = tt_vantage_name(column_order[k]), .ok = s->complete, .failed = s->incomplete + s->http_errors,
                          .tokens = s->output_tokens, .ttft = &s->ttft, .tpot = &s->tpot, .itl = &s->itl,
                          .e2el = &s->e2el};
    }
    tt_report_rule(out, " Serving Benchmark Result ", '=');
    fprintf(out, "%-34s", "");
    for (size_t k = 0; k < n; k++) fprintf(out, " %10s", c[k].name);
    putc('\n', out);
    row_counts(out, "Successful requests:", c, n, 0);
    row_counts(out, "Failed or incomplete requests:", c, n, 1);
    row_counts(out, "Total generated tokens:", c, n, 2);
    block(out, b, c, n, 0, "Time to First Token", "TTFT");
    block(out, b, c, n, 1, "Time per Output Token (excl. 1st token)", "TPOT");
    block(out, b, c, n, 2, "Inter-token Latency", "ITL");
    block(out, b, c, n, 3, "End-to-end Latency", "E2EL");
    tt_report_rule(out, "", '=');
}

static void stat_row(FILE *out, const char *label, const tt_overhead_stat *o)
{
    if (!o->n) {
        fprintf(out, "%-28s %6s %10s %10s %10s\n", label, "0", "-", "-", "-");
        return;
    }
    fprintf(out, "%-28s %6zu %10.3f %10.3f %10.3f\n", label, o->n, o->mean / 1e6, o->median / 1e6, o->p99 / 1e6);
}

/* A socket-queue part: where no request had the kernel's ready instant,
 * the row says the part is unknown rather than showing a bare dash. */
static void queue_row(FILE *out, const char *label, const tt_overhead_stat *o)
{
    if (o->n) stat_row(out, label, o);
    else fprintf(out, "%-28s %6s %s\n", label, "0", "unknown (no kernel ready instant at that socket)");
}

#define MAX_MERGED_KINDS 8

/* Runs covering several parts, grouped by what they cover, with their stats. */
static void merged_runs(FILE *out, const tt_breakdown *b, bool e2el)
{
    uint16_t kinds[MAX_MERGED_KINDS];
    size_t n_kinds = 0;
    for (size_t i = 0; i < b->join.n; i++) {
        const tt_split *s = e2el ? &b->per[i].e2el : &b->per[i].ttft;
        for (size_t r = 0; r < s->n_runs; r++) {
            const char *names[TT_SEG_COUNT];
            if (tt_run_names(s, &s->runs[r], e2el, names) < 2) continue;
            size_t k = 0;
            while (k < n_kinds && kinds[k] != s->runs[r].segs) k++;
            if (k == n_kinds && n_kinds < MAX_MERGED_KINDS) kinds[n_kinds++] = s->runs[r].segs;
        }
    }
    double *v = malloc((b->join.n + 1) * sizeof *v);
    if (!v) return;
    for (size_t k = 0; k < n_kinds; k++) {
        size_t n = 0;
        const tt_split *example = NULL;
        const tt_run *example_run = NULL;
        for (size_t i = 0; i < b->join.n; i++) {
            const tt_split *s = e2el ? &b->per[i].e2el : &b->per[i].ttft;
            for (size_t r = 0; r < s->n_runs; r++)
                if (s->runs[r].segs == kinds[k]) {
                    v[n++] = (double)s->runs[r].ns;
                    example = s;
                    example_run = &s->runs[r];
                }
        }
        const char *names[TT_SEG_COUNT];
        size_t n_names = tt_run_names(example, example_run, e2el, names);
        char label[256] = "  ";
        size_t len = 2;
        for (size_t q = 0; q < n_names; q++) {
            int w = snprintf(label + len, sizeof label - len, "%s%s", q ? " + " : "", names[q]);
            if (w > 0 && (size_t)w < sizeof label - len) len += (size_t)w;
        }
        static const double p99 = 99;
        tt_distribution d;
        tt_distribution_of(v, n, &p99, 1, &d);
        tt_overhead_stat o = {.n = d.n, .mean = d.mean, .median = d.median, .p99 = d.pct[0]};
        fprintf(out, "%s\n", label);
        stat_row(out, "", &o);
    }
    free(v);
}

/* The largest clock uncertainty over the requests of a part between the
 * client and the server (docs/clocks.md); 0 when they share a recording
 * or there is one recording, NAN when a clock's is unknown. */
static double worst_uncertainty(const tt_breakdown *b)
{
    if (!b->clocks) return 0;
    double worst = 0;
    for (size_t i = 0; i < b->join.n; i++) {
        const tt_request *cl = tt_join_request(&b->join, &b->join.reqs[i], TT_VANTAGE_CLIENT);
        if (!cl || cl->req_first_ns == TT_NS_NONE) continue;
        double u = tt_clock_set_uncertainty(b->clocks, TT_VANTAGE_CLIENT, TT_VANTAGE_SERVER, (int64_t)cl->req_first_ns);
        if (!isfinite(u)) return NAN;
        if (u > worst) worst = u;
    }
    return worst;
}

/* "  +- U us (clocks)" after a part that crosses hosts (u from worst_uncertainty). */
static void clock_note(FILE *out, double u)
{
    if (u == 0) return;
    if (isfinite(u)) fprintf(out, "%-28s %6s +- %.1f us (the clocks of two recordings, at worst)\n", "", "", u / 1e3);
    else fprintf(out, "%-28s %6s +- ? (wall-clock placement: no interval)\n", "", "");
}

/* The rows of the uplink or the downlink: the part, then its segments
 * (seg[0..2], in the segment enum's order: from the sender to the first
 * wire, between the wires, from the last wire to the receiver), named
 * from the points at[0..3] (sender, sender's wire, receiver's wire,
 * receiver). With one wire the middle segment does not exist and the
 * wires are "wire"; its rows come only when a segment was measured. */
static void link_rows(FILE *out, const char *name, const tt_overhead_stat *part, const tt_overhead_stat *seg,
                      const char *const at[4], bool two_wires, double clock_u)
{
    char row[64];
    stat_row(out, name, part);
    clock_note(out, clock_u);
    if (two_wires) {
        /* only the stretch between the hosts' wires crosses clocks */
        for (int k = 0; k < 3; k++) {
            snprintf(row, sizeof row, "  %s -> %s", at[k], at[k + 1]);
            stat_row(out, row, &seg[k]);
            if (k == 1) clock_note(out, clock_u);
        }
    } else if (seg[0].n || seg[2].n) {
        snprintf(row, sizeof row, "  %s -> wire", at[0]);
        stat_row(out, row, &seg[0]);
        snprintf(row, sizeof row, "  wire -> %s", at[3]);
        stat_row(out, row, &seg[2]);
    }
}

static void overhead_table(FILE *out, const tt_breakdown *b, bool e2el, double clock_u)
{
    const tt_overhead_stat *parts = e2el ? b->e2el_part : b->ttft_part;
    const tt_overhead_stat *segs = e2el ? b->e2el_seg : b->ttft_seg;
    char title[80];
    snprintf(title, sizeof title, " %s breakdown (ms), against %s ", e2el ? "E2EL" : "TTFT",
             tt_reference_name(b->reference));
    putc('\n', out);
    tt_report_rule(out, title, '-');
    fprintf(out, "%-28s %6s %10s %10s %10s\n", "part", "n", "mean", "median", "p99");
    stat_row(out, "send lag", &parts[TT_PART_SEND_LAG]);
    bool two_wires = b->join.by_vantage[TT_VANTAGE_CLIENT_WIRE] != NULL;
    static const char *const up[] = {"client", "client wire", "server wire", "server"};
    link_rows(out, "uplink", &parts[TT_PART_UPLINK], &segs[TT_SEG_UP_CLIENT_WIRE], up, two_wires, clock_u);
    queue_row(out, "server queue", &parts[TT_PART_SERVER_QUEUE]);
    stat_row(out, e2el ? "server E2EL" : "server TTFT", &parts[TT_PART_SERVER]);
    static const char *const down[] = {"server", "server wire", "client wire", "client"};
    link_rows(out, "downlink", &parts[TT_PART_DOWNLINK], &segs[TT_SEG_DOWN_SERVER_WIRE], down, two_wires, clock_u);
    queue_row(out, "client queue", &parts[TT_PART_CLIENT_QUEUE]);
    stat_row(out, "client lag", &parts[TT_PART_CLIENT_LAG]);
    /* the TLS libraries, when a request was seen above TLS */
    static const struct { int seg; const char *name; } tls_rows[] = {
        {TT_SEG_TLS_CLIENT_SEND, "  client: write -> socket"},
        {TT_SEG_TLS_SERVER_RECV, "  server: socket -> read"},
        {TT_SEG_TLS_SERVER_SEND, "  server: write -> socket"},
        {TT_SEG_TLS_CLIENT_RECV, "  client: socket -> read"},
    };
    bool any_tls = parts[TT_PART_TLS].n > 0;
    for (size_t k = 0; k < sizeof tls_rows / sizeof *tls_rows; k++) any_tls |= segs[tls_rows[k].seg].n > 0;
    if (any_tls) {
        stat_row(out, "tls (both libraries)", &parts[TT_PART_TLS]);
        for (size_t k = 0; k < sizeof tls_rows / sizeof *tls_rows; k++)
            if (segs[tls_rows[k].seg].n) stat_row(out, tls_rows[k].name, &segs[tls_rows[k].seg]);
    }
    size_t merged = e2el ? b->e2el_merged : b->ttft_merged;
    if (merged) {
        fprintf(out, "%zu request%s had parts that could not be told apart (a vantage or the benchmark's start "
                     "missing); those together:\n",
                merged, merged == 1 ? "" : "s");
        merged_runs(out, b, e2el);
    }
}

static void itl_section(FILE *out, const tt_breakdown *b)
{
    putc('\n', out);
    tt_report_rule(out, " Inter-token latency distortion (ms) ", '-');
    const tt_distribution *d = &b->itl_near_minus_far;
    if (d->n)
        fprintf(out, "%-34s n %zu, mean %.3f, median %.3f, max %.3f\n", "client ITL minus server ITL:", d->n,
                d->mean / 1e6, d->median / 1e6, d->max / 1e6);
    if (b->itl_token_events)
        fprintf(out, "%-34s %" PRIu64 " of %" PRIu64 " (%.1f%%)\n", "token events sharing a read:",
                b->itl_shared_read_events, b->itl_token_events,
                100.0 * (double)b->itl_shared_read_events / (double)b->itl_token_events);
    const tt_distribution *r = &b->itl_reported_matched, *f = &b->itl_far_matched;
    if (b->has_reported && r->n && f->n) {
        fprintf(out, "%-34s %10s %10s %10s\n", "", "reported", tt_vantage_name(b->itl_far), "difference");
        fprintf(out, "%-34s %10.3f %10.3f %10.3f\n", "Mean ITL (ms):", r->mean / 1e6, f->mean / 1e6,
                (r->mean - f->mean) / 1e6);
        fprintf(out, "%-34s %10.3f %10.3f %10.3f\n", "Median ITL (ms):", r->median / 1e6, f->median / 1e6,
                (r->median - f->median) / 1e6);
        for (size_t i = 0; i < b->n_pct; i++) {
            char label[48];
            snprintf(label, sizeof label, "P%g ITL (ms):", b->pct_at[i]);
            fprintf(out, "%-34s %10.3f %10.3f %10.3f\n", label, r->pct[i] / 1e6, f->pct[i] / 1e6,
                    (r->pct[i] - f->pct[i]) / 1e6);
        }
        fprintf(out, "%-34s %10zu %10zu\n", "ITL samples:", r->n, f->n);
    }
}

static const char *request_name(const tt_breakdown *b, const tt_joined *g, char *buf, size_t cap)
{
    for (int v = 0; v < TT_VANTAGE_COUNT; v++) {
        const tt_request *r = tt_join_request(&b->join, g, (tt_vantage)v);
        if (r && r->request_id[0]) {
            snprintf(buf, cap, "%s", r->request_id);
            return buf;
        }
    }
    for (int v = 0; v < TT_VANTAGE_COUNT; v++) {
        const tt_request *r = tt_join_request(&b->join, g, (tt_vantage)v);
        if (r) {
            char ep[64];
            snprintf(buf, cap, "%s#%u", tt_endpoint_format(&r->client, ep, sizeof ep), r->ordinal);
            return buf;
        }
    }
    snprintf(buf, cap, "?");
    return buf;
}

static void disagreement_line(FILE *out, const tt_breakdown *b, size_t i, uint32_t bit)
{
    const tt_disagreement *d = &b->per[i].dis;
    const tt_bench_request *br = tt_join_bench(&b->join, &b->join.reqs[i]);
    char name[160];
    fprintf(out, "  %-28s ", request_name(b, &b->join.reqs[i], name, sizeof name));
    switch (bit) {
    case TT_DIS_TOKENS:
        if (d->reported_tokens >= 0) fprintf(out, "reported %" PRId64 ", ", d->reported_tokens);
        if (d->usage_tokens >= 0) fprintf(out, "usage %" PRId64 ", ", d->usage_tokens);
        fprintf(out, "%" PRId64 " token events at the %s\n", d->token_events, tt_vantage_name(d->vantage));
        break;
    case TT_DIS_TTFT_NON_TOKEN:
        fprintf(out, "first token stamped %.3f ms before the first token event reached the %s",
                (double)d->ttft_early_ns / 1e6, tt_vantage_name(d->vantage));
        if (d->ttft_event_kind >= 0) fprintf(out, " (at a %s event)", tt_event_kind_name((tt_event_kind)d->ttft_event_kind));
        putc('\n', out);
        break;
    case TT_DIS_FAILED_BUT_COMPLETED:
        fprintf(out, "counted failed (%s), completed on the wire\n", br && br->error ? "error given" : "no error text");
        break;
    case TT_DIS_COMPLETED_BUT_FAILED:
        fprintf(out, "counted successful, failed or cut on the wire\n");
        break;
    case TT_DIS_TEXT_LENGTH:
        fprintf(out, "reported %" PRId64 " bytes of text, %" PRId64 " at the %s\n", d->reported_text_len,
                d->text_bytes, tt_vantage_name(d->vantage));
        break;
    }
}

static void disagreements(FILE *out, const tt_breakdown *b)
{
    static const char *const titles[TT_DIS_COUNT_BITS] = {
        "output tokens differ (reported, usage, token events)",
        "TTFT taken before the first token event (role, usage or keep-alive event)",
        "counted failed by the benchmark, completed on the wire",
        "counted successful by the benchmark, failed or cut on the wire",
        "generated text length differs",
    };
    size_t total = 0;
    for (int k = 0; k < TT_DIS_COUNT_BITS; k++) total += b->dis_count[k];
    putc('\n', out);
    tt_report_rule(out, " Disagreements ", '-');
    if (b->join.bench && b->join.bench_unmatched)
        fprintf(out, "%zu benchmark record%s met no captured request%s%s\n", b->join.bench_unmatched,
                b->join.bench_unmatched == 1 ? "" : "s", b->join.bench_note ? ": " : "",
                b->join.bench_note ? b->join.bench_note : "");
    if (!total) {
        fprintf(out, "none\n");
        return;
    }
    for (int k = 0; k < TT_DIS_COUNT_BITS; k++) {
        if (!b->dis_count[k]) continue;
        fprintf(out, "%s: %zu request%s\n", titles[k], b->dis_count[k], b->dis_count[k] == 1 ? "" : "s");
        size_t shown = 0;
        for (size_t i = 0; i < b->join.n && shown < MAX_DISAGREEMENTS_LISTED; i++)
            if (b->per[i].dis.mask & (1u << k)) {
                disagreement_line(out, b, i, 1u << k);
                shown++;
            }
        if (b->dis_count[k] > shown) fprintf(out, "  (%zu more: --json lists every one)\n", b->dis_count[k] - shown);
    }
}

/* The finding id of group g at vantage v, or NULL when v did not see g or filed no such finding. */
static const tt_lint_finding *finding_at(const tt_breakdown *b, const tt_joined *g, tt_vantage v, tt_lint_id id)
{
    const tt_analysis *a = b->join.by_vantage[v];
    if (!a || g->at[v] == TT_JOIN_ABSENT) return NULL;
    size_t n;
    const tt_lint_finding *f = tt_lint_findings_of(a->lint, g->at[v], &n);
    for (size_t i = 0; i < n; i++)
        if (f[i].id == id) return &f[i];
    return NULL;
}

/* The finding ids filed for group g at any vantage, as bits. */
static uint32_t finding_ids(const tt_breakdown *b, const tt_joined *g)
{
    uint32_t ids = 0;
    for (size_t k = 0; k < N_COLUMN_VANTAGES; k++) {
        tt_vantage v = column_order[k];
        const tt_analysis *a = b->join.by_vantage[v];
        if (!a || g->at[v] == TT_JOIN_ABSENT) continue;
        size_t n;
        const tt_lint_finding *f = tt_lint_findings_of(a->lint, g->at[v], &n);
        for (size_t i = 0; i < n; i++) ids |= 1u << f[i].id;
    }
    return ids;
}

static void finding_line(FILE *out, const tt_breakdown *b, const tt_joined *g, tt_lint_id id)
{
    char name[160];
    const char *detail = NULL, *detail_sep = " ";
    fprintf(out, "  %-28s", request_name(b, g, name, sizeof name));
    for (size_t k = 0; k < N_COLUMN_VANTAGES; k++) {
        const tt_lint_finding *f = finding_at(b, g, column_order[k], id);
        if (!f) continue;
        fprintf(out, "%s%s x%u", detail_sep, tt_vantage_name(column_order[k]), f->count);
        detail_sep = ", ";
        if (!detail && f->detail[0]) detail = f->detail;
    }
    if (detail) fprintf(out, "  (%s)", detail);
    putc('\n', out);
}

/* Each finding once per joined request, with the vantages that filed it
 * and how often it occurred there. */
static void findings(FILE *out, const tt_breakdown *b)
{
    putc('\n', out);
    tt_report_rule(out, " Findings ", '-');
    uint32_t *ids = calloc(b->join.n + 1, sizeof *ids);
    if (!ids) {
        fputs("(out of memory listing the findings)\n", out);
        return;
    }
    size_t requests[TT_LINT_COUNT] = {0}, by_severity[3] = {0}, total = 0;
    for (size_t i = 0; i < b->join.n; i++) {
        ids[i] = finding_ids(b, &b->join.reqs[i]);
        for (int id = 0; id < TT_LINT_COUNT; id++)
            if (ids[i] & (1u << id)) {
                requests[id]++;
                by_severity[tt_lint_entry_of((tt_lint_id)id)->severity]++;
                total++;
            }
    }
    if (!total) {
        fputs("none\n", out);
        free(ids);
        return;
    }
    fprintf(out, "%zu findings, each once per request with the vantages that saw it: %zu error, %zu warn, %zu info\n",
            total, by_severity[TT_LINT_ERROR], by_severity[TT_LINT_WARN], by_severity[TT_LINT_INFO]);
    for (int id = 0; id < TT_LINT_COUNT; id++) {
        if (!requests[id]) continue;
        const tt_lint_entry *e = tt_lint_entry_of((tt_lint_id)id);
        fprintf(out, "[%s] %s: %zu request%s\n", tt_lint_severity_name(e->severity), e->name, requests[id],
                requests[id] == 1 ? "" : "s");
        size_t shown = 0;
        for (size_t i = 0; i < b->join.n && shown < MAX_FINDINGS_LISTED; i++)
            if (ids[i] & (1u << id)) {
                finding_line(out, b, &b->join.reqs[i], (tt_lint_id)id);
                shown++;
            }
        if (requests[id] > shown) fprintf(out, "  (%zu more: --json lists every one)\n", requests[id] - shown);
    }
    fputs("(tokentap lint shows each finding's bytes and what it does to known clients)\n", out);
    free(ids);
}

void tt_report_breakdown_text(FILE *out, const char *input, const tt_breakdown *b)
{
    fprintf(out, "tokentap breakdown %s\nvantages:", input);
    for (size_t k = 0; k < N_COLUMN_VANTAGES; k++)
        if (b->join.by_vantage[column_order[k]]) fprintf(out, " %s", tt_vantage_name(column_order[k]));
    fprintf(out, "   requests: %zu (%zu seen at more than one vantage)\n", b->join.n, b->join.multi_vantage);
    if (b->join.bench) {
        const tt_bench_result *br = b->join.bench;
        fprintf(out, "benchmark: %s (%s), %zu records, %zu matched", br->path ? br->path : "?",
                tt_bench_format_name(br->format), br->n_reqs, br->n_reqs - b->join.bench_unmatched);
        const char *sep = ": ";
        for (int k = TT_JOIN_ID; k < TT_JOIN_KEY_COUNT; k++)
            if (b->join.bench_by_key[k]) {
                fprintf(out, "%s%zu by %s", sep, b->join.bench_by_key[k], tt_join_key_name((tt_join_key)k));
                sep = ", ";
            }
        putc('\n', out);
    }
    if (b->clocks) tt_clock_set_text(out, b->clocks);
    side_by_side(out, b);
    double clock_u = worst_uncertainty(b);
    overhead_table(out, b, false, clock_u);
    overhead_table(out, b, true, clock_u);
    itl_section(out, b);
    disagreements(out, b);
    findings(out, b);
}

void tt_report_vantages(FILE *out, const char *input, const tt_analysis *const *as, size_t n,
                        const tt_breakdown *b, bool json, bool events)
{
    if (b && json) {
        tt_report_json_breakdown(out, input, b);
        return;
    }
    if (b) tt_report_breakdown_text(out, input, b);
    for (size_t k = 0; k < n; k++) {
        if (b || (k && !json)) fputc('\n', out);
        tt_report_write(out, as[k], b ? false : json, b ? false : events);
    }
}
