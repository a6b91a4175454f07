#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/json_writer.h"
#include "report/report.h"
#include "clocks/clock_set.h"
#include "report/report_multi.h"
#include "report/report_json_split.h"
#include "core/version.h"
#include "lint/lint.h"
#include "report/release_digest.h"

static void tristate(tt_jw *w, const char *key, tt_tristate v)
{
    if (v == TT_UNKNOWN) tt_jw_null(w, key);
    else tt_jw_bool(w, key, v == TT_TRUE);
}

static void distribution(tt_jw *w, const char *key, const tt_summary *s, const tt_distribution *d)
{
    tt_jw_object_begin(w, key);
    tt_jw_uint(w, "n", d->n);
    if (d->n) {
        tt_jw_double(w, "mean", d->mean);
        tt_jw_double(w, "median", d->median);
        tt_jw_double(w, "stddev", d->stddev);
        tt_jw_double(w, "min", d->min);
        tt_jw_double(w, "max", d->max);
        for (size_t i = 0; i < s->n_pct; i++) {
            char k[32];
            snprintf(k, sizeof k, "p%g", s->pct_at[i]);
            tt_jw_double(w, k, d->pct[i]);
        }
    }
    tt_jw_object_end(w);
}

static void vantage_block(tt_jw *w, const tt_analysis *a, const tt_request *r, const tt_req_metrics *m)
{
    tt_jw_object_begin(w, tt_vantage_name(a->vantage));
    if (m->has_ttft) tt_jw_int(w, "ttft_ns", m->ttft_ns);
    else tt_jw_null(w, "ttft_ns");
    if (m->has_e2el) tt_jw_int(w, "e2el_ns", m->e2el_ns);
    else tt_jw_null(w, "e2el_ns");
    if (m->has_tpot) tt_jw_double(w, "tpot_ns", m->tpot_ns);
    else tt_jw_null(w, "tpot_ns");
    if (m->has_e2el) {
        tt_jw_array_begin(w, "itl_ns");
        bool pretty = w->pretty;
        w->pretty = false;
        for (uint32_t k = 0; k < m->n_itl; k++) tt_jw_int(w, NULL, m->itl_ns[k]);
        tt_jw_array_end(w);
        w->pretty = pretty;
    } else {
        tt_jw_null(w, "itl_ns");
    }
    tt_jw_uint(w, "token_events", m->token_events);
    tt_jw_int(w, "output_tokens", m->output_tokens);
    if (m->usage_completion_tokens >= 0) tt_jw_int(w, "usage_completion_tokens", m->usage_completion_tokens);
    else tt_jw_null(w, "usage_completion_tokens");
    if (r->usage_prompt_tokens >= 0) tt_jw_int(w, "usage_prompt_tokens", r->usage_prompt_tokens);
    else tt_jw_null(w, "usage_prompt_tokens");
    tt_jw_instant(w, "req_first_mono_ns", r->req_first_ns);
    tt_jw_instant(w, "req_ready_mono_ns", r->req_ready_ns);
    tt_jw_instant(w, "req_last_mono_ns", r->req_last_ns);
    tt_jw_instant(w, "resp_first_mono_ns", r->resp_first_ns);
    tt_jw_instant(w, "resp_headers_mono_ns", r->resp_headers_ns);
    tt_jw_instant(w, "first_event_mono_ns", r->first_event_ns);
    tt_jw_instant(w, "first_token_mono_ns", r->first_token_ns);
    tt_jw_instant(w, "last_token_mono_ns", r->last_token_ns);
    tt_jw_instant(w, "terminal_mono_ns", r->terminal_ns);
    tt_jw_instant(w, "resp_last_mono_ns", r->resp_last_ns);
    tt_jw_uint(w, "events", r->n_events);
    tt_jw_object_begin(w, "events_by_kind");
    for (int k = 0; k < TT_EV_COUNT; k++)
        if (r->kind_counts[k]) tt_jw_uint(w, tt_event_kind_name((tt_event_kind)k), r->kind_counts[k]);
    tt_jw_object_end(w);
    tt_jw_uint(w, "comment_lines", r->comments);
    tt_jw_uint(w, "text_bytes", r->text_bytes);
    tt_jw_uint(w, "reasoning_bytes", r->reasoning_bytes);
    tt_jw_object_end(w);
}

static void request_fields(tt_jw *w, const tt_request_fields *f)
{
    tt_jw_object_begin(w, "request");
    tt_jw_str_or_null(w, "model", f->model);
    tristate(w, "stream", f->stream);
    if (f->max_tokens >= 0) tt_jw_int(w, "max_tokens", f->max_tokens);
    else tt_jw_null(w, "max_tokens");
    tt_jw_str_or_null(w, "max_tokens_field", f->max_tokens_field);
    if (f->min_tokens >= 0) tt_jw_int(w, "min_tokens", f->min_tokens);
    else tt_jw_null(w, "min_tokens");
    tristate(w, "ignore_eos", f->ignore_eos);
    tristate(w, "include_usage", f->include_usage);
    tt_jw_bool(w, "body_json_ok", f->body_json_ok);
    tt_jw_object_end(w);
}

/* What the multi-vantage document adds to a request object (written last). */
typedef void request_extra_fn(tt_jw *w, const void *ctx);

/* One request as seen at n vantages: the common fields from the first, a
 * vantage block from each, then extra (when not NULL). */
static void one_request_at(tt_jw *w, const tt_analysis *const *as, const size_t *idx, size_t n, int joined,
                           request_extra_fn *extra, const void *extra_ctx)
{
    const tt_analysis *a = as[0];
    const tt_request *r = &a->reqs[idx[0]];
    char ep[64];
    tt_jw_object_begin(w, NULL);
    tt_jw_str_or_null(w, "request_id", r->request_id);
    tt_jw_str_or_null(w, "correlation_id", r->correlation_id);
    tt_jw_str_or_null(w, "response_id", r->response_id);
    if (joined >= 0) tt_jw_bool(w, "joined", joined);
    tt_jw_object_begin(w, "connection");
    tt_jw_str(w, "client", tt_endpoint_format(&r->client, ep, sizeof ep));
    tt_jw_str(w, "server", tt_endpoint_format(&r->server, ep, sizeof ep));
    tt_jw_uint(w, "ordinal", r->ordinal);
    if (r->stream_id) tt_jw_uint(w, "stream_id", r->stream_id);
    else tt_jw_null(w, "stream_id");
    tt_jw_object_end(w);
    tt_jw_str_or_null(w, "method", r->method);
    tt_jw_str_or_null(w, "path", r->path);
    if (r->status) tt_jw_int(w, "status", r->status);
    else tt_jw_null(w, "status");
    tt_jw_str_or_null(w, "content_type", r->content_type);
    tt_jw_str(w, "dialect", tt_dialect_name(r->dialect));
    tt_jw_str(w, "framing", tt_framing_name(r->framing));
    tt_jw_bool(w, "complete", tt_request_complete(r));
    char why[160];
    tt_jw_str_or_null(w, "incomplete_reasons", tt_incomplete_reasons(r, why, sizeof why));
    tt_jw_uint(w, "gap_bytes", r->gap_bytes);
    tt_jw_str_or_null(w, "http_error", r->http_error);
    if (r->grpc_status >= 0) tt_jw_int(w, "grpc_status", r->grpc_status);
    else tt_jw_null(w, "grpc_status");
    tt_jw_str_or_null(w, "grpc_message", r->grpc_message);
    tt_jw_bool(w, "terminal_seen", r->terminal_seen);
    tt_jw_str_or_null(w, "finish_reason", r->finish_reason);
    tt_jw_str_or_null(w, "error", r->error_message);
    request_fields(w, &r->fields);
    tt_jw_object_begin(w, "vantages");
    for (size_t k = 0; k < n; k++) vantage_block(w, as[k], &as[k]->reqs[idx[k]], &as[k]->metrics[idx[k]]);
    tt_jw_object_end(w);
    if (a->with_text) tt_jw_strn(w, "text", r->text ? r->text : "", r->text_len);
    if (extra) extra(w, extra_ctx);
    tt_jw_object_end(w);
}

static void one_request(tt_jw *w, const tt_analysis *a, size_t i)
{
    one_request_at(w, &a, &i, 1, -1, NULL, NULL);
}

void tt_report_json_request(tt_jw *w, const tt_request *r, const tt_req_metrics *m, tt_vantage vantage,
                            bool with_text)
{
    tt_analysis a = {.vantage = vantage, .with_text = with_text, .reqs = r, .metrics = m, .n_reqs = 1};
    one_request(w, &a, 0);
}

static void source_fields(tt_jw *w, const tt_analysis *a);

static void header(tt_jw *w, const tt_analysis *a)
{
    tt_jw_object_begin(w, "tokentap");
    tt_jw_str(w, "version", TT_VERSION);
    tt_jw_str(w, "schema", "tokentap.analyze/1");
    tt_jw_object_end(w);
    tt_jw_str(w, "input", a->input);
    source_fields(w, a);
}

static void source_fields(tt_jw *w, const tt_analysis *a)
{
    tt_jw_str(w, "vantage", tt_vantage_name(a->vantage));
    tt_jw_object_begin(w, "clock");
    tt_jw_str(w, "domain", tt_clock_name(a->clock));
    if (a->has_mono_offset) tt_jw_int(w, "wall_to_mono_offset_ns", a->mono_offset_ns);
    else tt_jw_null(w, "wall_to_mono_offset_ns");
    tt_jw_object_end(w);
    tt_jw_object_begin(w, "source");
    tt_jw_str(w, "kind", a->pcap ? "pcap" : "none");
    if (a->pcap) {
        tt_jw_int(w, "linktype", a->pcap->linktype);
        tt_jw_uint(w, "packets", a->pcap->packets);
        tt_jw_uint(w, "tcp_segments", a->pcap->tcp_segments);
        tt_jw_uint(w, "non_tcp", a->pcap->non_tcp + a->pcap->non_ip);
        tt_jw_uint(w, "malformed", a->pcap->malformed);
        tt_jw_uint(w, "snapped", a->pcap->snapped);
    }
    if (a->reasm) {
        tt_jw_uint(w, "connections", a->reasm->connections);
        tt_jw_uint(w, "gaps", a->reasm->gaps);
        tt_jw_uint(w, "gap_bytes", a->reasm->gap_bytes);
        tt_jw_uint(w, "retransmitted_bytes", a->reasm->retransmitted_bytes);
        tt_jw_uint(w, "out_of_order_segments", a->reasm->out_of_order_segments);
    }
    if (a->has_drops) {
        tt_jw_uint(w, "dropped_records", a->dropped_records);
        tt_jw_uint(w, "dropped_bytes", a->dropped_bytes);
    }
    tt_jw_str_or_null(w, "error", a->source_error);
    tt_jw_object_end(w);
}

static void summary(tt_jw *w, const tt_analysis *a)
{
    const tt_summary *s = &a->summary;
    tt_jw_object_begin(w, "summary");
    tt_jw_uint(w, "requests", s->requests);
    tt_jw_uint(w, "complete", s->complete);
    tt_jw_uint(w, "incomplete", s->incomplete);
    tt_jw_uint(w, "streaming", s->streaming);
    tt_jw_uint(w, "error_responses", s->http_errors);
    tt_jw_uint(w, "token_events", s->token_events);
    tt_jw_uint(w, "output_tokens", s->output_tokens);
    tt_jw_double(w, "duration_s", s->duration_s);
    tt_jw_double(w, "request_throughput", s->request_throughput);
    tt_jw_double(w, "output_throughput", s->output_throughput);
    tt_jw_array_begin(w, "percentiles");
    for (size_t i = 0; i < s->n_pct; i++) tt_jw_double(w, NULL, s->pct_at[i]);
    tt_jw_array_end(w);
    distribution(w, "ttft_ns", s, &s->ttft);
    distribution(w, "tpot_ns", s, &s->tpot);
    distribution(w, "itl_ns", s, &s->itl);
    distribution(w, "e2el_ns", s, &s->e2el);
    tt_jw_object_end(w);
}

static void notes(tt_jw *w, const tt_analysis *a)
{
    for (int analysed = 0; analysed < 2; analysed++) {
        tt_jw_array_begin(w, analysed ? "connection_notes" : "connections_not_analysed");
        for (size_t i = 0; i < a->n_notes; i++) {
            if (a->notes[i].analysed != (analysed == 1)) continue;
            char ep[64];
            tt_jw_object_begin(w, NULL);
            tt_jw_str(w, "client", tt_endpoint_format(&a->notes[i].client, ep, sizeof ep));
            tt_jw_str(w, "server", tt_endpoint_format(&a->notes[i].server, ep, sizeof ep));
            tt_jw_str(w, analysed ? "note" : "reason", a->notes[i].reason);
            tt_jw_object_end(w);
        }
        tt_jw_array_end(w);
    }
}

void tt_report_json(FILE *out, const tt_analysis *a)
{
    tt_jw w;
    tt_jw_init(&w, out, true);
    tt_jw_object_begin(&w, NULL);
    header(&w, a);
    summary(&w, a);
    notes(&w, a);
    tt_jw_array_begin(&w, "requests");
    for (size_t i = 0; i < a->n_reqs; i++) {
        const tt_request *r = &a->reqs[i];
        if (!r->events_released || !a->released) one_request(&w, a, i);
        else if (tt_release_digest_copy_json(a->released, r->consumer_tag, &w) < 0) break; /* the caller tells */
    }
    tt_jw_array_end(&w);
    tt_lint_write_json(&w, "findings", a->lint, &(tt_lint_view){.reqs = a->reqs, .with_text = a->with_text});
    tt_jw_object_end(&w);
    tt_jw_end(&w);
}

/* ---- several vantages of one recording, joined, and the benchmark's own record ---- */

typedef struct multi_ctx {
    const tt_breakdown *b;
    const tt_joined *g;
    const tt_request_breakdown *pb;
} multi_ctx;

static void request_extra(tt_jw *w, const void *ctx)
{
    const multi_ctx *c = ctx;
    const tt_breakdown *b = c->b;
    const tt_joined *g = c->g;
    const tt_request_breakdown *pb = c->pb;
    const tt_bench_request *br = tt_join_bench(&b->join, g);
    tt_jw_object_begin(w, "join");
    tt_jw_object_begin(w, "keys");
    for (int v = 0; v < TT_VANTAGE_COUNT; v++)
        if (g->at[v] != TT_JOIN_ABSENT) {
            const char *k = tt_join_key_name(g->how[v]);
            if (k) tt_jw_str(w, tt_vantage_name((tt_vantage)v), k);
            else tt_jw_str(w, tt_vantage_name((tt_vantage)v), "first");
        }
    tt_jw_object_end(w);
    if (br) {
        tt_jw_object_begin(w, "benchmark");
        tt_jw_uint(w, "index", br->index);
        tt_jw_str(w, "key", tt_join_key_name(g->bench_how));
        tt_jw_int_or_null(w, "start_delta_ns", g->bench_start_delta_ns != TT_BENCH_NONE, g->bench_start_delta_ns);
        tt_jw_object_end(w);
    } else {
        tt_jw_null(w, "benchmark");
    }
    tt_jw_object_end(w);
    if (br) {
        tt_jw_object_begin(w, "reported");
        tt_jw_uint(w, "index", br->index);
        tt_jw_str_or_null(w, "request_id", br->request_id);
        tt_jw_bool(w, "success", br->success);
        tt_jw_str_or_null(w, "error", br->error);
        tt_jw_int_or_null(w, "ttft_ns", br->ttft_ns != TT_BENCH_NONE, br->ttft_ns);
        tt_jw_int_or_null(w, "e2el_ns", br->e2el_ns != TT_BENCH_NONE, br->e2el_ns);
        tt_jw_int_or_null(w, "output_tokens", br->output_tokens >= 0, br->output_tokens);
        tt_jw_uint(w, "itl_n", br->n_itl);
        tt_jw_int_or_null(w, "start_mono_ns", pb->reported_start_ns != TT_DECOMP_NONE, pb->reported_start_ns);
        tt_jw_int_or_null(w, "text_len", br->text_len >= 0, br->text_len);
        tt_jw_object_end(w);
    } else {
        tt_jw_null(w, "reported");
    }
    if (pb->ttft.reference == TT_REF_NONE && pb->e2el.reference == TT_REF_NONE) {
        tt_jw_null(w, "decomposition");
    } else {
        tt_jw_object_begin(w, "decomposition");
        if (pb->ttft.reference != TT_REF_NONE) tt_json_split_fields(w, &pb->ttft, g, false);
        else tt_jw_null(w, "ttft_ns");
        if (pb->e2el.reference != TT_REF_NONE) {
            tt_jw_object_begin(w, "e2el");
            tt_json_split_fields(w, &pb->e2el, g, true);
            tt_jw_object_end(w);
        } else {
            tt_jw_null(w, "e2el");
        }
        tt_json_itl_fields(w, &pb->itl, br);
        if (b->clocks) tt_json_clock_uncertainty(w, b, g, pb);
        tt_jw_object_end(w);
    }
    tt_vantage dv = pb->dis.vantage;
    const tt_request *dr = tt_join_request(&b->join, g, dv);
    if (!dr) {
        for (int v = 0; v < TT_VANTAGE_COUNT && !dr; v++) dr = tt_join_request(&b->join, g, (tt_vantage)v);
    }
    /* completed-but-failed reads the wire side's request */
    const tt_request *wr = tt_join_request(&b->join, g, TT_VANTAGE_WIRE);
    tt_json_disagreements(w, &pb->dis, br, wr ? wr : dr);
}

static void distribution_pct(tt_jw *w, const char *key, const tt_breakdown *b, const tt_distribution *d)
{
    tt_summary s = {.n_pct = b->n_pct};
    memcpy(s.pct_at, b->pct_at, sizeof s.pct_at);
    distribution(w, key, &s, d);
}

static void breakdown_summary(tt_jw *w, const tt_breakdown *b)
{
    size_t with_bench = 0;
    for (size_t i = 0; i < b->join.n; i++) with_bench += b->join.reqs[i].bench != TT_JOIN_ABSENT;
    tt_jw_object_begin(w, "summary");
    tt_jw_uint(w, "requests", b->join.n);
    tt_jw_uint(w, "joined", b->join.multi_vantage);
    tt_jw_uint(w, "with_benchmark_record", with_bench);
    tt_jw_object_begin(w, "overhead");
    tt_jw_str(w, "reference", tt_reference_name(b->reference));
    tt_json_overhead(w, b, false);
    tt_jw_object_begin(w, "e2el");
    tt_json_overhead(w, b, true);
    tt_jw_object_end(w);
    tt_jw_object_begin(w, "itl");
    tt_jw_str(w, "far", tt_vantage_name(b->itl_far));
    distribution_pct(w, "near_minus_far_ns", b, &b->itl_near_minus_far);
    if (b->has_reported) {
        distribution_pct(w, "reported_ns", b, &b->itl_reported_matched);
        distribution_pct(w, "far_ns", b, &b->itl_far_matched);
        const tt_distribution *r = &b->itl_reported_matched, *f = &b->itl_far_matched;
        tt_jw_object_begin(w, "reported_minus_far_ns");
        if (r->n && f->n) {
            tt_jw_double(w, "mean", r->mean - f->mean);
            tt_jw_double(w, "median", r->median - f->median);
            for (size_t i = 0; i < b->n_pct; i++) {
                char k[32];
                snprintf(k, sizeof k, "p%g", b->pct_at[i]);
                tt_jw_double(w, k, r->pct[i] - f->pct[i]);
            }
        }
        tt_jw_object_end(w);
    }
    tt_jw_uint(w, "token_events", b->itl_token_events);
    tt_jw_uint(w, "shared_read_events", b->itl_shared_read_events);
    tt_jw_object_end(w);
    tt_jw_object_end(w);
    tt_jw_object_begin(w, "disagreements");
    for (int k = 0; k < TT_DIS_COUNT_BITS; k++) tt_jw_uint(w, tt_disagreement_name(k), b->dis_count[k]);
    tt_jw_object_end(w);
    tt_jw_object_end(w);
}

static void benchmark_block(tt_jw *w, const tt_breakdown *b)
{
    const tt_bench_result *br = b->join.bench;
    if (!br) {
        tt_jw_null(w, "benchmark");
        return;
    }
    tt_jw_object_begin(w, "benchmark");
    tt_jw_str_or_null(w, "path", br->path);
    tt_jw_str(w, "format", tt_bench_format_name(br->format));
    tt_jw_uint(w, "records", br->n_reqs);
    tt_jw_uint(w, "successful", b->reported_ok);
    tt_jw_uint(w, "failed", b->reported_failed);
    size_t matched = br->n_reqs - b->join.bench_unmatched;
    tt_jw_uint(w, "matched", matched);
    tt_jw_uint(w, "unmatched", b->join.bench_unmatched);
    tt_jw_object_begin(w, "by_key");
    for (int k = TT_JOIN_ID; k < TT_JOIN_KEY_COUNT; k++)
        if (k != TT_JOIN_SEQUENCE && k != TT_JOIN_CONNECTION && k != TT_JOIN_RESPONSE_ID)
            tt_jw_uint(w, tt_join_key_name((tt_join_key)k), b->join.bench_by_key[k]);
    tt_jw_object_end(w);
    tt_jw_bool(w, "starts_on_capture_clock", b->join.bench_starts_usable);
    tt_jw_str_or_null(w, "note", b->join.bench_note);
    tt_jw_object_begin(w, "summary");
    tt_jw_uint(w, "output_tokens", b->reported_output_tokens);
    distribution_pct(w, "ttft_ns", b, &b->reported_ttft);
    distribution_pct(w, "tpot_ns", b, &b->reported_tpot);
    distribution_pct(w, "itl_ns", b, &b->reported_itl);
    distribution_pct(w, "e2el_ns", b, &b->reported_e2el);
    tt_jw_object_end(w);
    tt_jw_object_end(w);
}

/* The vantages of as[0..n) that saw group g, into grp_as and grp_idx (their
 * request indices); returns how many (0: the group is not written). */
static size_t group_members(const tt_joined *g, const tt_analysis *const *as, size_t n, const tt_analysis **grp_as,
                            size_t *grp_idx)
{
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (g->at[as[k]->vantage] != TT_JOIN_ABSENT) {
            grp_as[m] = as[k];
            grp_idx[m++] = g->at[as[k]->vantage];
        }
    return m;
}

/* "findings": every vantage's findings in as[] order, each naming its
 * vantage and its request's index in the document's "requests". */
static void joined_findings(tt_jw *w, const tt_breakdown *b, const tt_analysis *const *as, size_t n)
{
    tt_jw_array_begin(w, "findings");
    for (size_t k = 0; k < n; k++) {
        const tt_analysis *a = as[k];
        size_t *joined = malloc((a->n_reqs + 1) * sizeof *joined);
        if (joined) {
            for (size_t i = 0; i < a->n_reqs; i++) joined[i] = SIZE_MAX;
            const tt_analysis *grp_as[TT_VANTAGE_COUNT];
            size_t grp_idx[TT_VANTAGE_COUNT], written = 0;
            for (size_t i = 0; i < b->join.n; i++) {
                const tt_joined *g = &b->join.reqs[i];
                if (!group_members(g, as, n, grp_as, grp_idx)) continue;
                if (g->at[a->vantage] < a->n_reqs) joined[g->at[a->vantage]] = written;
                written++;
            }
        }
        tt_lint_view v = {.reqs = a->reqs, .with_text = a->with_text, .vantage = tt_vantage_name(a->vantage),
                          .joined = joined};
        tt_lint_write_json_items(w, a->lint, &v);
        free(joined);
    }
    tt_jw_array_end(w);
}

void tt_report_json_breakdown(FILE *out, const char *input, const tt_breakdown *b)
{
    const tt_analysis *as[TT_VANTAGE_COUNT];
    size_t n = 0;
    static const tt_vantage order[] = {TT_VANTAGE_SERVER,     TT_VANTAGE_CLIENT,     TT_VANTAGE_WIRE,
                                       TT_VANTAGE_CLIENT_WIRE, TT_VANTAGE_SERVER_TLS, TT_VANTAGE_CLIENT_TLS};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++)
        if (b->join.by_vantage[order[k]]) as[n++] = b->join.by_vantage[order[k]];
    tt_jw w;
    tt_jw_init(&w, out, true);
    tt_jw_object_begin(&w, NULL);
    tt_jw_object_begin(&w, "tokentap");
    tt_jw_str(&w, "version", TT_VERSION);
    tt_jw_str(&w, "schema", "tokentap.analyze/1");
    tt_jw_object_end(&w);
    tt_jw_str(&w, "input", input);
    tt_jw_str(&w, "vantage", "multi");
    tt_jw_array_begin(&w, "vantage_list");
    for (size_t k = 0; k < n; k++) tt_jw_str(&w, NULL, tt_vantage_name(as[k]->vantage));
    tt_jw_array_end(&w);
    if (b->clocks) tt_clock_set_json(&w, b->clocks);
    tt_jw_object_begin(&w, "per_vantage");
    for (size_t k = 0; k < n; k++) {
        tt_jw_object_begin(&w, tt_vantage_name(as[k]->vantage));
        tt_jw_str(&w, "input", as[k]->input);
        source_fields(&w, as[k]);
        summary(&w, as[k]);
        notes(&w, as[k]);
        tt_lint_write_json_summary(&w, "findings_summary", as[k]->lint);
        tt_jw_object_end(&w);
    }
    tt_jw_object_end(&w);
    size_t without_id = 0;
    for (size_t i = 0; i < b->join.n; i++) {
        bool has_id = false;
        for (int v = 0; v < TT_VANTAGE_COUNT && !has_id; v++) {
            const tt_request *r = tt_join_request(&b->join, &b->join.reqs[i], (tt_vantage)v);
            has_id = r && r->request_id[0];
        }
        without_id += !has_id;
    }
    tt_jw_object_begin(&w, "join");
    tt_jw_str(&w, "key", "x-request-id, else connection and TCP sequence number, else connection and ordinal, else response id");
    tt_jw_uint(&w, "joined_requests", b->join.multi_vantage);
    tt_jw_uint(&w, "single_vantage_requests", b->join.n - b->join.multi_vantage);
    tt_jw_uint(&w, "requests_without_id", without_id);
    tt_jw_object_begin(&w, "by_key");
    for (int k = TT_JOIN_ID; k <= TT_JOIN_RESPONSE_ID; k++)
        tt_jw_uint(&w, tt_join_key_name((tt_join_key)k), b->join.by_key[k]);
    tt_jw_object_end(&w);
    if (n > 1 && b->join.n > b->join.multi_vantage)
        tt_jw_str(&w, "note", "some requests were seen at one vantage only");
    else tt_jw_null(&w, "note");
    tt_jw_object_end(&w);
    benchmark_block(&w, b);
    breakdown_summary(&w, b);
    tt_jw_array_begin(&w, "requests");
    for (size_t i = 0; i < b->join.n; i++) {
        const tt_joined *g = &b->join.reqs[i];
        const tt_analysis *grp_as[TT_VANTAGE_COUNT];
        size_t grp_idx[TT_VANTAGE_COUNT];
        size_t m = group_members(g, as, n, grp_as, grp_idx);
        if (!m) continue;
        multi_ctx ctx = {.b = b, .g = g, .pb = &b->per[i]};
        one_request_at(&w, grp_as, grp_idx, m, m > 1, request_extra, &ctx);
    }
    tt_jw_array_end(&w);
    joined_findings(&w, b, as, n);
    tt_jw_object_end(&w);
    tt_jw_end(&w);
}

void tt_report_json_multi(FILE *out, const char *input, const tt_analysis *const *as, size_t n)
{
    tt_breakdown b;
    if (tt_breakdown_build(&b, as, n, NULL, NULL) < 0) {
        tt_jw w;
        tt_jw_init(&w, out, true);
        tt_jw_object_begin(&w, NULL);
        tt_jw_str(&w, "input", input);
        tt_jw_str(&w, "error", "out of memory joining requests");
        tt_jw_object_end(&w);
        tt_jw_end(&w);
        return;
    }
    tt_report_json_breakdown(out, input, &b);
    tt_breakdown_free(&b);
}
