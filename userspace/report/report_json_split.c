/* report_json_split.c - the JSON of the decomposition: one request's split
 * and the summary of parts over requests (report_json_split.h). */
#include "report/report_json_split.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "clocks/clock_set.h"
#include "report/report.h"

static void overhead_stat(tt_jw *w, const char *key, const tt_overhead_stat *o)
{
    tt_jw_object_begin(w, key);
    tt_jw_uint(w, "n", o->n);
    if (o->n) {
        tt_jw_double(w, "mean", o->mean);
        tt_jw_double(w, "median", o->median);
        tt_jw_double(w, "p99", o->p99);
    } else {
        tt_jw_null(w, "mean");
        tt_jw_null(w, "median");
        tt_jw_null(w, "p99");
    }
    tt_jw_object_end(w);
}

static void run_names(tt_jw *w, const tt_split *s, const tt_run *run, bool e2el)
{
    const char *names[TT_SEG_COUNT];
    size_t n = tt_run_names(s, run, e2el, names);
    bool pretty = w->pretty;
    w->pretty = false;
    tt_jw_array_begin(w, "parts");
    for (size_t k = 0; k < n; k++) tt_jw_str(w, NULL, names[k]);
    tt_jw_array_end(w);
    w->pretty = pretty;
}

/* The segments of the uplink and of the downlink, in chain order, with
 * their names in uplink_split_ns / downlink_split_ns. */
typedef struct half_segs {
    const char *key;
    int seg[3];
    const char *name[3];
} half_segs;

static const half_segs uplink_segs = {"uplink_split_ns",
                                      {TT_SEG_UP_CLIENT_WIRE, TT_SEG_UP_WIRE_WIRE, TT_SEG_UP_WIRE_SERVER},
                                      {"client_to_wire", "wire_to_wire", "wire_to_server"}};
static const half_segs downlink_segs = {"downlink_split_ns",
                                        {TT_SEG_DOWN_SERVER_WIRE, TT_SEG_DOWN_WIRE_WIRE, TT_SEG_DOWN_WIRE_CLIENT},
                                        {"server_to_wire", "wire_to_wire", "wire_to_client"}};

/* A part's segments by name (the one between two wires only in a chain of
 * two); null when no wire saw the request or the reference does not cover
 * them all. */
static void split_half(tt_jw *w, const half_segs *h, const tt_split *s, bool wire_seen)
{
    uint16_t in = 0;
    for (int k = 0; k < 3; k++) in |= (uint16_t)(s->chain & (1u << h->seg[k]));
    if (!wire_seen || (s->scope & in) != in) {
        tt_jw_null(w, h->key);
        return;
    }
    tt_jw_object_begin(w, h->key);
    for (int k = 0; k < 3; k++)
        if (in & (1u << h->seg[k])) tt_jw_int_or_null(w, h->name[k], s->has_seg[h->seg[k]], s->seg_ns[h->seg[k]]);
    tt_jw_object_end(w);
}

/* The TLS libraries' four segments, by their names in tls_split_ns. */
static const struct { int seg; const char *name; } tls_segs[] = {
    {TT_SEG_TLS_CLIENT_SEND, "client_send"},
    {TT_SEG_TLS_SERVER_RECV, "server_recv"},
    {TT_SEG_TLS_SERVER_SEND, "server_send"},
    {TT_SEG_TLS_CLIENT_RECV, "client_recv"},
};

/* tls_split_ns of one request; null when it was not seen above TLS (a
 * stretch the reference does not cover is null). */
static void split_tls(tt_jw *w, const tt_split *s)
{
    if (!(s->chain & TT_SEGS_TLS)) {
        tt_jw_null(w, "tls_split_ns");
        return;
    }
    tt_jw_object_begin(w, "tls_split_ns");
    for (size_t k = 0; k < sizeof tls_segs / sizeof *tls_segs; k++) {
        int seg = tls_segs[k].seg;
        if (s->scope & (1u << seg)) tt_jw_int_or_null(w, tls_segs[k].name, s->has_seg[seg], s->seg_ns[seg]);
        else tt_jw_null(w, tls_segs[k].name);
    }
    tt_jw_object_end(w);
}

/* The vantages whose instants sit inside a split: the point of their
 * request start, and a segment beside each of their two instants that is
 * in the chain exactly when the vantage is (the client wire's only with
 * two wires, the TLS vantages' only above TLS). */
static const struct { int req_pt, near_req_seg, near_mark_seg; const char *name; } split_pairs[] = {
    {TT_PT_CLIENT_TLS_REQ, TT_SEG_TLS_CLIENT_SEND, TT_SEG_TLS_CLIENT_RECV, "client_tls"},
    {TT_PT_CLIENT_REQ, TT_SEG_UP_CLIENT_WIRE, TT_SEG_CLIENT_QUEUE, "client"},
    {TT_PT_CLIENT_WIRE_REQ, TT_SEG_UP_WIRE_WIRE, TT_SEG_DOWN_WIRE_WIRE, "client_wire"},
    {TT_PT_WIRE_REQ, TT_SEG_UP_WIRE_SERVER, TT_SEG_DOWN_SERVER_WIRE, "wire"},
    {TT_PT_SERVER_REQ, TT_SEG_SERVER_QUEUE, TT_SEG_DOWN_SERVER_WIRE, "server"},
    {TT_PT_SERVER_TLS_REQ, TT_SEG_TLS_SERVER_RECV, TT_SEG_TLS_SERVER_SEND, "server_tls"},
};

void tt_json_split_fields(tt_jw *w, const tt_split *s, const tt_joined *g, bool e2el)
{
    char key[48];
    tt_jw_str(w, "reference", tt_reference_name(s->reference));
    tt_jw_int(w, e2el ? "e2el_ns" : "ttft_ns", s->total_ns);
    for (int p = 0; p < TT_PART_COUNT; p++) {
        snprintf(key, sizeof key, "%s_ns", tt_part_name((tt_part)p, e2el));
        tt_jw_int_or_null(w, key, s->has_part[p], s->part_ns[p]);
    }
    bool wire_seen = g->at[TT_VANTAGE_WIRE] != TT_JOIN_ABSENT || g->at[TT_VANTAGE_CLIENT_WIRE] != TT_JOIN_ABSENT;
    split_half(w, &uplink_segs, s, wire_seen);
    split_half(w, &downlink_segs, s, wire_seen);
    split_tls(w, s);
    tt_jw_array_begin(w, "missing");
    for (size_t k = 0; k < sizeof split_pairs / sizeof *split_pairs; k++) {
        bool in_scope = s->scope & (1u << split_pairs[k].near_req_seg) && s->scope & (1u << split_pairs[k].near_mark_seg);
        if (in_scope && split_pairs[k].req_pt != 0 && !(s->seen & (1u << split_pairs[k].req_pt)))
            tt_jw_str(w, NULL, split_pairs[k].name);
    }
    if (s->reference == TT_REF_REPORTED && !(s->seen & 1u)) tt_jw_str(w, NULL, "reported_start");
    tt_jw_array_end(w);
    tt_jw_array_begin(w, "runs");
    for (size_t r = 0; r < s->n_runs; r++) {
        tt_jw_object_begin(w, NULL);
        bool pretty = w->pretty;
        run_names(w, s, &s->runs[r], e2el);
        tt_jw_int(w, "ns", s->runs[r].ns);
        tt_jw_object_end(w);
        w->pretty = pretty;
    }
    tt_jw_array_end(w);
}

void tt_json_itl_fields(tt_jw *w, const tt_itl_split *s, const tt_bench_request *br)
{
    tt_jw_object_begin(w, "itl");
    if (s->reads || s->valid) {
        tt_jw_str(w, "near", tt_vantage_name(s->near));
        if (s->far != s->near) tt_jw_str(w, "far", tt_vantage_name(s->far));
        else tt_jw_null(w, "far");
    } else {
        tt_jw_null(w, "near");
        tt_jw_null(w, "far");
    }
    tt_jw_uint(w, "n", s->n);
    if (s->valid) {
        tt_jw_array_begin(w, "near_minus_far_ns");
        bool pretty = w->pretty;
        w->pretty = false;
        for (uint32_t k = 0; k < s->n; k++) tt_jw_int(w, NULL, s->near_minus_far_ns[k]);
        tt_jw_array_end(w);
        w->pretty = pretty;
    } else {
        tt_jw_null(w, "near_minus_far_ns");
    }
    tt_jw_uint(w, "reads", s->reads);
    tt_jw_uint(w, "shared_read_events", s->shared_read_events);
    tt_jw_uint(w, "max_events_per_read", s->max_events_per_read);
    if (br && br->success) tt_jw_uint(w, "reported_n", br->n_itl);
    else tt_jw_null(w, "reported_n");
    tt_jw_object_end(w);
}

void tt_json_disagreements(tt_jw *w, const tt_disagreement *d, const tt_bench_request *br, const tt_request *r)
{
    tt_jw_array_begin(w, "disagreements");
    for (int k = 0; k < TT_DIS_COUNT_BITS; k++) {
        if (!(d->mask & (1u << k))) continue;
        tt_jw_object_begin(w, NULL);
        tt_jw_str(w, "kind", tt_disagreement_name(k));
        tt_jw_str(w, "vantage", tt_vantage_name(d->vantage));
        switch (1u << k) {
        case TT_DIS_TOKENS:
            tt_jw_int_or_null(w, "reported", d->reported_tokens >= 0, d->reported_tokens);
            tt_jw_int_or_null(w, "usage", d->usage_tokens >= 0, d->usage_tokens);
            tt_jw_int(w, "token_events", d->token_events);
            break;
        case TT_DIS_TTFT_NON_TOKEN:
            if (d->ttft_event_kind >= 0) tt_jw_str(w, "event_kind", tt_event_kind_name((tt_event_kind)d->ttft_event_kind));
            else tt_jw_null(w, "event_kind");
            tt_jw_int(w, "early_ns", d->ttft_early_ns);
            break;
        case TT_DIS_FAILED_BUT_COMPLETED:
            tt_jw_str_or_null(w, "reported_error", br ? br->error : NULL);
            break;
        case TT_DIS_COMPLETED_BUT_FAILED: {
            char why[160];
            tt_jw_str_or_null(w, "incomplete_reasons", tt_incomplete_reasons(r, why, sizeof why));
            tt_jw_int_or_null(w, "status", r->status != 0, r->status);
            tt_jw_str_or_null(w, "error", r->error_message);
            break;
        }
        case TT_DIS_TEXT_LENGTH:
            tt_jw_int(w, "reported", d->reported_text_len);
            tt_jw_int(w, "text_bytes", d->text_bytes);
            break;
        }
        tt_jw_object_end(w);
    }
    tt_jw_array_end(w);
}

/* The parts whose two ends came from different recordings carry the
 * clocks' uncertainty at that instant (docs/clocks.md); null when a clock's
 * is unknown (wall-clock), absent when the part stays on one host. */
/* "<half>_split_uncertainty_ns": the uncertainty of each segment of the
 * TTFT split measured alone whose two ends came from different
 * recordings, at instant at; nothing when none did. */
static void split_uncertainty(tt_jw *w, const tt_breakdown *b, const tt_split *s, bool uplink, uint64_t at)
{
    bool two = s->chain & (1u << TT_SEG_UP_WIRE_WIRE);
    tt_vantage near_wire = two ? TT_VANTAGE_CLIENT_WIRE : TT_VANTAGE_WIRE;
    /* each segment's ends, in chain order */
    const tt_vantage up[3][2] = {{TT_VANTAGE_CLIENT, near_wire},
                                 {TT_VANTAGE_CLIENT_WIRE, TT_VANTAGE_WIRE},
                                 {TT_VANTAGE_WIRE, TT_VANTAGE_SERVER}};
    const tt_vantage down[3][2] = {{TT_VANTAGE_SERVER, TT_VANTAGE_WIRE},
                                   {TT_VANTAGE_WIRE, TT_VANTAGE_CLIENT_WIRE},
                                   {near_wire, TT_VANTAGE_CLIENT}};
    const half_segs *h = uplink ? &uplink_segs : &downlink_segs;
    char key[48];
    snprintf(key, sizeof key, "%s_split_uncertainty_ns", uplink ? "uplink" : "downlink");
    bool open = false;
    for (int k = 0; k < 3; k++) {
        int seg = h->seg[k];
        if (!(s->chain & (1u << seg)) || !s->has_seg[seg]) continue;
        const tt_vantage *ends = uplink ? up[k] : down[k];
        double u = tt_clock_set_uncertainty(b->clocks, ends[0], ends[1], (int64_t)at);
        if (u == 0) continue;
        if (!open) tt_jw_object_begin(w, key);
        open = true;
        if (isfinite(u)) tt_jw_int(w, h->name[k], (int64_t)ceil(u));
        else tt_jw_null(w, h->name[k]);
    }
    if (open) tt_jw_object_end(w);
}

void tt_json_clock_uncertainty(tt_jw *w, const tt_breakdown *b, const tt_joined *g,
                                     const tt_request_breakdown *pb)
{
    if (pb->ttft.reference != TT_REF_NONE && g->start_ns != TT_NS_NONE) {
        split_uncertainty(w, b, &pb->ttft, true, g->start_ns);
        split_uncertainty(w, b, &pb->ttft, false, g->start_ns);
    }
    const tt_request *cl = tt_join_request(&b->join, g, TT_VANTAGE_CLIENT);
    if (!cl || !tt_join_request(&b->join, g, TT_VANTAGE_SERVER)) return;
    const struct { const char *key; uint64_t at; } parts[] = {
        {"uplink_uncertainty_ns", cl->req_first_ns}, {"downlink_uncertainty_ns", cl->first_token_ns}};
    for (size_t k = 0; k < 2; k++) {
        if (b->clocks->recording_of[TT_VANTAGE_CLIENT] == b->clocks->recording_of[TT_VANTAGE_SERVER]) break;
        if (parts[k].at == TT_NS_NONE) {
            tt_jw_null(w, parts[k].key);
            continue;
        }
        double u = tt_clock_set_uncertainty(b->clocks, TT_VANTAGE_CLIENT, TT_VANTAGE_SERVER, (int64_t)parts[k].at);
        if (isfinite(u)) tt_jw_int(w, parts[k].key, (int64_t)ceil(u));
        else tt_jw_null(w, parts[k].key);
    }
}

void tt_json_overhead(tt_jw *w, const tt_breakdown *b, bool e2el)
{
    char key[48];
    const tt_overhead_stat *parts = e2el ? b->e2el_part : b->ttft_part;
    const tt_overhead_stat *segs = e2el ? b->e2el_seg : b->ttft_seg;
    for (int p = 0; p < TT_PART_COUNT; p++) {
        snprintf(key, sizeof key, "%s_ns", tt_part_name((tt_part)p, e2el));
        overhead_stat(w, key, &parts[p]);
    }
    bool two_wires = b->join.by_vantage[TT_VANTAGE_CLIENT_WIRE] != NULL;
    const half_segs *halves[] = {&uplink_segs, &downlink_segs};
    for (size_t h = 0; h < 2; h++) {
        tt_jw_object_begin(w, halves[h]->key);
        for (int k = 0; k < 3; k++)
            if (k != 1 || two_wires) overhead_stat(w, halves[h]->name[k], &segs[halves[h]->seg[k]]);
        tt_jw_object_end(w);
    }
    tt_jw_object_begin(w, "tls_split_ns");
    for (size_t k = 0; k < sizeof tls_segs / sizeof *tls_segs; k++)
        overhead_stat(w, tls_segs[k].name, &segs[tls_segs[k].seg]);
    tt_jw_object_end(w);
    tt_jw_uint(w, "requests_with_merged_parts", e2el ? b->e2el_merged : b->ttft_merged);
}

