#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/json_writer.h"
#include "report/report.h"
#include "report/report_multi.h"
#include "core/version.h"

static void instant(tt_jw *w, const char *key, uint64_t ns)
{
    if (ns == TT_NS_NONE) tt_jw_null(w, key);
    else tt_jw_uint(w, key, ns);
}

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
    instant(w, "req_first_mono_ns", r->req_first_ns);
    instant(w, "req_last_mono_ns", r->req_last_ns);
    instant(w, "resp_first_mono_ns", r->resp_first_ns);
    instant(w, "resp_headers_mono_ns", r->resp_headers_ns);
    instant(w, "first_event_mono_ns", r->first_event_ns);
    instant(w, "first_token_mono_ns", r->first_token_ns);
    instant(w, "last_token_mono_ns", r->last_token_ns);
    instant(w, "terminal_mono_ns", r->terminal_ns);
    instant(w, "resp_last_mono_ns", r->resp_last_ns);
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

/* One request as seen at n vantages: the common fields from the first, a
 * vantage block from each. */
static void one_request_at(tt_jw *w, const tt_analysis *const *as, const size_t *idx, size_t n, int joined)
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
    tt_jw_bool(w, "terminal_seen", r->terminal_seen);
    tt_jw_str_or_null(w, "finish_reason", r->finish_reason);
    tt_jw_str_or_null(w, "error", r->error_message);
    request_fields(w, &r->fields);
    tt_jw_object_begin(w, "vantages");
    for (size_t k = 0; k < n; k++) vantage_block(w, as[k], &as[k]->reqs[idx[k]], &as[k]->metrics[idx[k]]);
    tt_jw_object_end(w);
    if (a->with_text) tt_jw_strn(w, "text", r->text ? r->text : "", r->text_len);
    tt_jw_object_end(w);
}

static void one_request(tt_jw *w, const tt_analysis *a, size_t i)
{
    one_request_at(w, &a, &i, 1, -1);
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
    tt_jw_array_begin(w, "connections_not_analysed");
    for (size_t i = 0; i < a->n_notes; i++) {
        char ep[64];
        tt_jw_object_begin(w, NULL);
        tt_jw_str(w, "client", tt_endpoint_format(&a->notes[i].client, ep, sizeof ep));
        tt_jw_str(w, "server", tt_endpoint_format(&a->notes[i].server, ep, sizeof ep));
        tt_jw_str(w, "reason", a->notes[i].reason);
        tt_jw_object_end(w);
    }
    tt_jw_array_end(w);
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
    for (size_t i = 0; i < a->n_reqs; i++) one_request(&w, a, i);
    tt_jw_array_end(&w);
    tt_jw_object_end(&w);
    tt_jw_end(&w);
}

/* ---- several vantages of one recording ---- */

typedef struct join_key {
    const char *id;
    uint32_t occurrence; /* k-th request with this id at its vantage */
    uint32_t vantage;    /* index into as[] */
    size_t req;
} join_key;

static int join_key_cmp(const void *pa, const void *pb)
{
    const join_key *a = pa, *b = pb;
    int c = strcmp(a->id, b->id);
    if (c) return c;
    if (a->occurrence != b->occurrence) return a->occurrence < b->occurrence ? -1 : 1;
    if (a->vantage != b->vantage) return a->vantage < b->vantage ? -1 : 1;
    return a->req < b->req ? -1 : a->req > b->req;
}

static int by_id_then_index(const void *pa, const void *pb)
{
    const join_key *a = pa, *b = pb;
    if (a->vantage != b->vantage) return a->vantage < b->vantage ? -1 : 1;
    int c = strcmp(a->id, b->id);
    if (c) return c;
    return a->req < b->req ? -1 : a->req > b->req;
}

void tt_report_json_multi(FILE *out, const char *input, const tt_analysis *const *as, size_t n)
{
    size_t total = 0, with_id = 0;
    for (size_t k = 0; k < n; k++) total += as[k]->n_reqs;
    join_key *keys = calloc(total ? total : 1, sizeof *keys);
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
    tt_jw_object_begin(&w, "per_vantage");
    for (size_t k = 0; k < n; k++) {
        tt_jw_object_begin(&w, tt_vantage_name(as[k]->vantage));
        tt_jw_str(&w, "input", as[k]->input);
        source_fields(&w, as[k]);
        summary(&w, as[k]);
        notes(&w, as[k]);
        tt_jw_object_end(&w);
    }
    tt_jw_object_end(&w);
    if (!keys) {
        tt_jw_str(&w, "error", "out of memory joining requests");
        tt_jw_object_end(&w);
        tt_jw_end(&w);
        return;
    }
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < as[k]->n_reqs; i++)
            if (as[k]->reqs[i].request_id[0])
                keys[with_id++] = (join_key){.id = as[k]->reqs[i].request_id, .vantage = (uint32_t)k, .req = i};
    /* number the repeats of each id per vantage, then group by (id, repeat) */
    qsort(keys, with_id, sizeof *keys, by_id_then_index);
    for (size_t j = 1; j < with_id; j++)
        if (keys[j].vantage == keys[j - 1].vantage && !strcmp(keys[j].id, keys[j - 1].id))
            keys[j].occurrence = keys[j - 1].occurrence + 1;
    qsort(keys, with_id, sizeof *keys, join_key_cmp);
    size_t groups = 0, unjoined = total - with_id;
    for (size_t j = 0; j < with_id; groups++) {
        size_t e = j + 1;
        while (e < with_id && !strcmp(keys[e].id, keys[j].id) && keys[e].occurrence == keys[j].occurrence) e++;
        j = e;
    }
    tt_jw_object_begin(&w, "join");
    tt_jw_str(&w, "key", "x-request-id");
    tt_jw_uint(&w, "joined_requests", groups);
    tt_jw_uint(&w, "requests_without_id", unjoined);
    if (unjoined) tt_jw_str(&w, "note", "requests without x-request-id are listed once per vantage, not joined");
    else tt_jw_null(&w, "note");
    tt_jw_object_end(&w);
    tt_jw_array_begin(&w, "requests");
    const tt_analysis *grp_as[TT_VANTAGE_COUNT];
    size_t grp_idx[TT_VANTAGE_COUNT];
    for (size_t j = 0; j < with_id;) {
        size_t m = 0, e = j;
        while (e < with_id && !strcmp(keys[e].id, keys[j].id) && keys[e].occurrence == keys[j].occurrence) {
            if (m < TT_VANTAGE_COUNT && (m == 0 || grp_as[m - 1] != as[keys[e].vantage])) {
                grp_as[m] = as[keys[e].vantage];
                grp_idx[m++] = keys[e].req;
            }
            e++;
        }
        one_request_at(&w, grp_as, grp_idx, m, m > 1);
        j = e;
    }
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < as[k]->n_reqs; i++)
            if (!as[k]->reqs[i].request_id[0]) one_request_at(&w, &as[k], &i, 1, 0);
    tt_jw_array_end(&w);
    tt_jw_object_end(&w);
    tt_jw_end(&w);
    free(keys);
}
