/* audit_report.c - the audit's report card as text (the terminal) and as
 * the JSON document `tokentap.audit/1` (docs/formats.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "audit/audit.h"
#include "core/version.h"
#include "report/json_writer.h"

static size_t cells_out(const tt_audit_card *card)
{
    size_t n = 0;
    for (size_t i = 0; i < card->n_cells; i++) n += !card->cells[i].within_tolerance;
    return n;
}

static void text_count(FILE *out, const char *label, int64_t rep, int64_t tru)
{
    if (rep < 0) fprintf(out, "%s ? reported (the file has none) / %lld true", label, (long long)tru);
    else fprintf(out, "%s %lld reported / %lld true%s", label, (long long)rep, (long long)tru, rep != tru ? " (!)" : "");
}

static void text_stat(FILE *out, const char *name, const tt_audit_stat *s)
{
    if (!s->n) fprintf(out, "    %-26s %10s %10s %10s\n", name, "-", "-", "-");
    else fprintf(out, "    %-26s %+10.3f %+10.3f %+10.3f\n", name, s->mean / 1e6, s->median / 1e6, s->p99 / 1e6);
}

static void text_overhead(FILE *out, const char *name, const tt_audit_overhead *o, const char *why_none)
{
    if (!o->n) fprintf(out, "    %-26s n/a (%s)\n", name, why_none);
    else fprintf(out, "    %-26s %10s %10.3f %10.3f\n", name, "", o->median / 1e6, o->p99 / 1e6);
}

static void text_cell(FILE *out, const tt_audit_cell *c)
{
    fprintf(out, "\n== %s, concurrency %u: %s\n", c->profile, c->concurrency,
            c->within_tolerance ? "within tolerance" : "MIS-MEASURED");
    if (c->cmd_problem[0]) fprintf(out, "  problem: %s\n", c->cmd_problem);
    fprintf(out, "  requests: %u asked, %zu sent, %zu completed at the server, %zu reported ok, %zu failed although "
                 "delivered, %zu ok although undelivered\n",
            c->requests_asked, c->requests_sent, c->server_completed, c->reported_ok, c->failed_but_delivered,
            c->ok_but_undelivered);
    if (!c->graded) return;
    fprintf(out, "  result file: %s, %zu records, %zu matched to a request\n", c->result_format, c->records,
            c->records_matched);
    fprintf(out, "  ");
    text_count(out, "output tokens:", c->tokens_reported, c->tokens_true);
    fprintf(out, "; ");
    text_count(out, "ITL samples:", c->itl_samples_reported, c->itl_samples_true);
    fprintf(out, "\n  %-28s %10s %10s %10s\n", "error, reported - true (ms)", "mean", "median", "p99");
    text_stat(out, "TTFT", &c->err_ttft);
    text_stat(out, "ITL", &c->err_itl);
    text_stat(out, "TPOT", &c->err_tpot);
    text_stat(out, "E2EL", &c->err_e2el);
    fprintf(out, "  %-28s %10s %10s %10s\n", "overhead (ms)", "", "median", "p99");
    const char *none = c->reported_ok ? "no client vantage" : "no request the tool counted successful";
    text_overhead(out, "send lag", &c->send_lag, none);
    text_overhead(out, "client queue", &c->client_queue,
                  c->reported_ok ? "no kernel ready instant at the tool's socket (root and the server vantage needed)"
                                 : none);
    text_overhead(out, "client lag", &c->client_lag, none);
    text_overhead(out, "downlink (network + queue)", &c->downlink, none);
    if (c->n_causes) fprintf(out, "  causes:\n");
    for (size_t k = 0; k < c->n_causes; k++) {
        const tt_audit_cause *x = &c->causes[k];
        fprintf(out, "    - %s%s%s", x->finding[0] ? "[" : "", x->finding, x->finding[0] ? "] " : "");
        if (x->requests) fprintf(out, "%zu requests: ", x->requests);
        fprintf(out, "%s\n", x->symptom);
    }
}

/* Client overhead against concurrency: one row per profile. */
static void text_growth(FILE *out, const tt_audit_card *card)
{
    bool any = false;
    for (size_t i = 0; i < card->n_cells; i++) any |= card->cells[i].client_lag.n > 0;
    if (!any) return;
    fprintf(out, "\nclient overhead against concurrency (median ms: client lag / send lag)\n");
    for (size_t i = 0; i < card->n_cells; i++) {
        const char *p = card->cells[i].profile;
        bool first = true;
        for (size_t k = 0; k < i; k++) first &= strcmp(card->cells[k].profile, p) != 0;
        if (!first) continue;
        fprintf(out, "  %-10s", p);
        for (size_t k = i; k < card->n_cells; k++) {
            const tt_audit_cell *c = &card->cells[k];
            if (strcmp(c->profile, p)) continue;
            fprintf(out, "  c=%u ", c->concurrency);
            if (c->client_lag.n) fprintf(out, "%.3f", c->client_lag.median / 1e6);
            else fprintf(out, "-");
            if (c->send_lag.n) fprintf(out, " / %.3f", c->send_lag.median / 1e6);
            else fprintf(out, " / -");
        }
        fprintf(out, "\n");
    }
}

int tt_audit_write_text(FILE *out, const tt_audit_card *card)
{
    fprintf(out, "tokentap audit: %s\n", card->command);
    fprintf(out, "schedule: TTFT %g ms, ITL %g ms, %u tokens when the request sets no limit; tolerance: a median "
                 "error within max(%g ms, %g%% of the true median), counts exact\n",
            card->ttft_ms, card->itl_ms, card->tokens, card->tolerance_ms, card->tolerance_pct);
    fprintf(out, "truth: serve's log of every token write; request start at the client socket (the probe)%s\n",
            card->root_vantages ? "; eBPF server vantage taken" : "");
    if (card->note[0]) fprintf(out, "%s\n", card->note);
    size_t bad = cells_out(card);
    if (!card->mis_measured) fprintf(out, "verdict: ok (%zu runs within tolerance)\n", card->n_cells);
    else fprintf(out, "verdict: MIS-MEASURED (%zu of %zu runs out of tolerance)\n", bad, card->n_cells);
    for (size_t i = 0; i < card->n_cells; i++) text_cell(out, &card->cells[i]);
    text_growth(out, card);
    return ferror(out) ? -1 : 0;
}

static void json_stat(tt_jw *w, const char *key, const tt_audit_stat *s)
{
    if (!s->n) {
        tt_jw_null(w, key);
        return;
    }
    tt_jw_object_begin(w, key);
    tt_jw_uint(w, "n", s->n);
    tt_jw_double(w, "mean", s->mean);
    tt_jw_double(w, "median", s->median);
    tt_jw_double(w, "p99", s->p99);
    tt_jw_object_end(w);
}

static void json_overhead(tt_jw *w, const char *key, const tt_audit_overhead *o)
{
    if (!o->n) {
        tt_jw_null(w, key);
        return;
    }
    tt_jw_object_begin(w, key);
    tt_jw_uint(w, "n", o->n);
    tt_jw_double(w, "median", o->median);
    tt_jw_double(w, "p99", o->p99);
    tt_jw_object_end(w);
}

static void json_count(tt_jw *w, const char *key, int64_t v)
{
    if (v < 0) tt_jw_null(w, key);
    else tt_jw_int(w, key, v);
}

static void json_cell(tt_jw *w, const tt_audit_cell *c)
{
    tt_jw_object_begin(w, NULL);
    tt_jw_str(w, "profile", c->profile);
    tt_jw_uint(w, "concurrency", c->concurrency);
    tt_jw_uint(w, "requests_asked", c->requests_asked);
    tt_jw_bool(w, "within_tolerance", c->within_tolerance);
    tt_jw_int(w, "cmd_status", c->cmd_status);
    tt_jw_str_or_null(w, "cmd_problem", c->cmd_problem);
    tt_jw_str_or_null(w, "result_format", c->result_format);
    tt_jw_bool(w, "graded", c->graded);
    tt_jw_uint(w, "requests_sent", c->requests_sent);
    tt_jw_uint(w, "server_completed", c->server_completed);
    tt_jw_uint(w, "records", c->records);
    tt_jw_uint(w, "records_matched", c->records_matched);
    tt_jw_uint(w, "reported_ok", c->reported_ok);
    tt_jw_uint(w, "failed_but_delivered", c->failed_but_delivered);
    tt_jw_uint(w, "ok_but_undelivered", c->ok_but_undelivered);
    json_count(w, "tokens_reported", c->graded ? c->tokens_reported : -1);
    json_count(w, "tokens_true", c->graded ? c->tokens_true : -1);
    json_count(w, "itl_samples_reported", c->graded ? c->itl_samples_reported : -1);
    json_count(w, "itl_samples_true", c->graded ? c->itl_samples_true : -1);
    tt_jw_object_begin(w, "errors");
    json_stat(w, "ttft_ns", &c->err_ttft);
    json_stat(w, "itl_ns", &c->err_itl);
    json_stat(w, "tpot_ns", &c->err_tpot);
    json_stat(w, "e2el_ns", &c->err_e2el);
    tt_jw_object_end(w);
    tt_jw_object_begin(w, "overhead");
    json_overhead(w, "send_lag_ns", &c->send_lag);
    json_overhead(w, "client_queue_ns", &c->client_queue);
    json_overhead(w, "client_lag_ns", &c->client_lag);
    json_overhead(w, "downlink_ns", &c->downlink);
    tt_jw_object_end(w);
    tt_jw_array_begin(w, "causes");
    for (size_t k = 0; k < c->n_causes; k++) {
        tt_jw_object_begin(w, NULL);
        tt_jw_str_or_null(w, "finding", c->causes[k].finding);
        tt_jw_str(w, "symptom", c->causes[k].symptom);
        tt_jw_uint(w, "requests", c->causes[k].requests);
        tt_jw_object_end(w);
    }
    tt_jw_array_end(w);
    tt_jw_object_end(w);
}

int tt_audit_write_json(FILE *out, const tt_audit_card *card)
{
    tt_jw w;
    tt_jw_init(&w, out, true);
    tt_jw_object_begin(&w, NULL);
    tt_jw_object_begin(&w, "tokentap");
    tt_jw_str(&w, "version", TT_VERSION);
    tt_jw_str(&w, "schema", "tokentap.audit/1");
    tt_jw_object_end(&w);
    tt_jw_str(&w, "command", card->command);
    tt_jw_object_begin(&w, "schedule");
    tt_jw_double(&w, "ttft_ms", card->ttft_ms);
    tt_jw_double(&w, "itl_ms", card->itl_ms);
    tt_jw_uint(&w, "tokens", card->tokens);
    tt_jw_object_end(&w);
    tt_jw_object_begin(&w, "tolerance");
    tt_jw_double(&w, "ms", card->tolerance_ms);
    tt_jw_double(&w, "pct", card->tolerance_pct);
    tt_jw_object_end(&w);
    tt_jw_bool(&w, "server_vantage", card->root_vantages);
    tt_jw_str_or_null(&w, "note", card->note);
    tt_jw_str(&w, "verdict", card->mis_measured ? "mis-measured" : "ok");
    tt_jw_array_begin(&w, "cells");
    for (size_t i = 0; i < card->n_cells; i++) json_cell(&w, &card->cells[i]);
    tt_jw_array_end(&w);
    tt_jw_object_end(&w);
    tt_jw_end(&w);
    return ferror(out) ? -1 : 0;
}
