#include "join/decompose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const uint16_t part_segs[TT_PART_COUNT] = {
    [TT_PART_SEND_LAG] = 1u << TT_SEG_SEND_LAG,
    [TT_PART_UPLINK] = (1u << TT_SEG_UP_CLIENT_WIRE) | (1u << TT_SEG_UP_WIRE_WIRE) | (1u << TT_SEG_UP_WIRE_SERVER),
    [TT_PART_SERVER_QUEUE] = 1u << TT_SEG_SERVER_QUEUE,
    [TT_PART_SERVER] = 1u << TT_SEG_SERVER,
    [TT_PART_DOWNLINK] =
        (1u << TT_SEG_DOWN_SERVER_WIRE) | (1u << TT_SEG_DOWN_WIRE_WIRE) | (1u << TT_SEG_DOWN_WIRE_CLIENT),
    [TT_PART_CLIENT_QUEUE] = 1u << TT_SEG_CLIENT_QUEUE,
    [TT_PART_CLIENT_LAG] = 1u << TT_SEG_CLIENT_LAG,
    [TT_PART_TLS] = TT_SEGS_TLS,
};

const char *tt_part_name(tt_part p, bool e2el)
{
    switch (p) {
    case TT_PART_SEND_LAG: return "send_lag";
    case TT_PART_UPLINK: return "uplink";
    case TT_PART_SERVER_QUEUE: return "server_queue";
    case TT_PART_SERVER: return e2el ? "server_e2el" : "server_ttft";
    case TT_PART_DOWNLINK: return "downlink";
    case TT_PART_CLIENT_QUEUE: return "client_queue";
    case TT_PART_CLIENT_LAG: return "client_lag";
    case TT_PART_TLS: return "tls";
    default: return "?";
    }
}

const char *tt_seg_name(int seg, bool e2el)
{
    switch (seg) {
    case TT_SEG_SEND_LAG: return "send_lag";
    case TT_SEG_TLS_CLIENT_SEND: return "tls.client_send";
    case TT_SEG_TLS_SERVER_RECV: return "tls.server_recv";
    case TT_SEG_TLS_SERVER_SEND: return "tls.server_send";
    case TT_SEG_TLS_CLIENT_RECV: return "tls.client_recv";
    case TT_SEG_UP_CLIENT_WIRE: return "uplink.client_to_wire";
    case TT_SEG_UP_WIRE_WIRE: return "uplink.wire_to_wire";
    case TT_SEG_UP_WIRE_SERVER: return "uplink.wire_to_server";
    case TT_SEG_SERVER_QUEUE: return "server_queue";
    case TT_SEG_SERVER: return e2el ? "server_e2el" : "server_ttft";
    case TT_SEG_DOWN_SERVER_WIRE: return "downlink.server_to_wire";
    case TT_SEG_DOWN_WIRE_WIRE: return "downlink.wire_to_wire";
    case TT_SEG_DOWN_WIRE_CLIENT: return "downlink.wire_to_client";
    case TT_SEG_CLIENT_QUEUE: return "client_queue";
    case TT_SEG_CLIENT_LAG: return "client_lag";
    default: return "?";
    }
}

const char *tt_reference_name(tt_reference r)
{
    switch (r) {
    case TT_REF_REPORTED: return "reported";
    case TT_REF_CLIENT: return "client";
    case TT_REF_WIRE: return "wire";
    case TT_REF_SERVER: return "server";
    case TT_REF_CLIENT_TLS: return "client_tls";
    case TT_REF_SERVER_TLS: return "server_tls";
    default: return "none";
    }
}

const char *tt_disagreement_name(int k)
{
    static const char *const names[TT_DIS_COUNT_BITS] = {
        "output-tokens", "ttft-at-non-token-event", "failed-but-completed", "completed-but-failed", "text-length",
    };
    return k >= 0 && k < TT_DIS_COUNT_BITS ? names[k] : "?";
}

static const uint8_t part_of_seg[TT_SEG_COUNT] = {
    [TT_SEG_SEND_LAG] = TT_PART_SEND_LAG,         [TT_SEG_TLS_CLIENT_SEND] = TT_PART_TLS,
    [TT_SEG_UP_CLIENT_WIRE] = TT_PART_UPLINK,     [TT_SEG_UP_WIRE_WIRE] = TT_PART_UPLINK,
    [TT_SEG_UP_WIRE_SERVER] = TT_PART_UPLINK,     [TT_SEG_SERVER_QUEUE] = TT_PART_SERVER_QUEUE,
    [TT_SEG_TLS_SERVER_RECV] = TT_PART_TLS,       [TT_SEG_SERVER] = TT_PART_SERVER,
    [TT_SEG_TLS_SERVER_SEND] = TT_PART_TLS,       [TT_SEG_DOWN_SERVER_WIRE] = TT_PART_DOWNLINK,
    [TT_SEG_DOWN_WIRE_WIRE] = TT_PART_DOWNLINK,   [TT_SEG_DOWN_WIRE_CLIENT] = TT_PART_DOWNLINK,
    [TT_SEG_CLIENT_QUEUE] = TT_PART_CLIENT_QUEUE, [TT_SEG_TLS_CLIENT_RECV] = TT_PART_TLS,
    [TT_SEG_CLIENT_LAG] = TT_PART_CLIENT_LAG};

size_t tt_run_names(const tt_split *s, const tt_run *run, bool e2el, const char *names[TT_SEG_COUNT])
{
    size_t n = 0;
    int last_part = -1;
    for (int k = 0; k < TT_SEG_COUNT; k++) {
        if (!(run->segs & (1u << k))) continue;
        int part = part_of_seg[k];
        uint16_t whole = part_segs[part] & s->scope;
        if ((run->segs & whole) == whole) {
            if (part != last_part) names[n++] = tt_part_name((tt_part)part, e2el);
        } else {
            names[n++] = tt_seg_name(k, e2el);
        }
        last_part = part;
    }
    return n;
}

static uint16_t seg_range(int from_pt, int to_pt)
{
    uint16_t m = 0;
    for (int k = from_pt; k < to_pt; k++) m |= (uint16_t)(1u << k);
    return m;
}

void tt_split_compute(tt_split *s, tt_reference ref, int64_t total_ns, const int64_t points[TT_PT_COUNT])
{
    tt_split_compute_chain(s, ref, total_ns, points, TT_SEGS_ONE_WIRE);
}

void tt_split_compute_chain(tt_split *s, tt_reference ref, int64_t total_ns, const int64_t in_points[TT_PT_COUNT],
                            uint16_t chain_segs)
{
    memset(s, 0, sizeof *s);
    /* one wire: the client wire's instants are not in the chain */
    int64_t points[TT_PT_COUNT];
    memcpy(points, in_points, sizeof points);
    if (!(chain_segs & (1u << TT_SEG_UP_WIRE_WIRE))) points[TT_PT_CLIENT_WIRE_REQ] = TT_DECOMP_NONE;
    if (!(chain_segs & (1u << TT_SEG_DOWN_WIRE_WIRE))) points[TT_PT_CLIENT_WIRE_MARK] = TT_DECOMP_NONE;
    if (!(chain_segs & TT_SEGS_TLS))
        points[TT_PT_CLIENT_TLS_REQ] = points[TT_PT_SERVER_TLS_REQ] = points[TT_PT_SERVER_TLS_MARK] =
            points[TT_PT_CLIENT_TLS_MARK] = TT_DECOMP_NONE;
    int lo, hi;
    switch (ref) {
    case TT_REF_REPORTED: lo = TT_PT_REPORTED_START, hi = TT_PT_REPORTED_MARK; break;
    case TT_REF_CLIENT: lo = TT_PT_CLIENT_REQ, hi = TT_PT_CLIENT_MARK; break;
    case TT_REF_WIRE: lo = TT_PT_WIRE_REQ, hi = TT_PT_WIRE_MARK; break;
    case TT_REF_SERVER: lo = TT_PT_SERVER_REQ, hi = TT_PT_SERVER_MARK; break;
    case TT_REF_CLIENT_TLS: lo = TT_PT_CLIENT_TLS_REQ, hi = TT_PT_CLIENT_TLS_MARK; break;
    case TT_REF_SERVER_TLS: lo = TT_PT_SERVER_TLS_REQ, hi = TT_PT_SERVER_TLS_MARK; break;
    default: return;
    }
    bool ends_seen = points[lo] != TT_DECOMP_NONE && points[hi] != TT_DECOMP_NONE;
    if (ref != TT_REF_REPORTED && !ends_seen) return;
    s->reference = ref;
    s->chain = chain_segs;
    s->scope = seg_range(lo, hi) & chain_segs;
    int seen[TT_PT_COUNT], n_seen = 0;
    int inner_lo = ends_seen ? lo : lo + 1, inner_hi = ends_seen ? hi : hi - 1;
    for (int k = inner_lo; k <= inner_hi; k++)
        if (points[k] != TT_DECOMP_NONE) {
            seen[n_seen++] = k;
            s->seen |= (uint16_t)(1u << k);
        }
    if (ends_seen) total_ns = points[hi] - points[lo];
    s->total_ns = total_ns;
    if (!ends_seen) {
        /* reported without a start: what lies outside the innermost seen
         * instants is one stretch (send lag and client lag together) */
        if (n_seen < 2) {
            s->runs[s->n_runs++] = (tt_run){.segs = s->scope, .ns = total_ns, .from_ns = TT_DECOMP_NONE};
        } else {
            int64_t inner = points[seen[n_seen - 1]] - points[seen[0]];
            uint16_t outer = (uint16_t)((seg_range(lo, seen[0]) | seg_range(seen[n_seen - 1], hi)) & chain_segs);
            s->runs[s->n_runs++] = (tt_run){.segs = outer, .ns = total_ns - inner, .from_ns = TT_DECOMP_NONE};
        }
    }
    for (int k = 1; k < n_seen; k++)
        s->runs[s->n_runs++] = (tt_run){.segs = seg_range(seen[k - 1], seen[k]) & chain_segs,
                                        .ns = points[seen[k]] - points[seen[k - 1]],
                                        .from_ns = points[seen[k - 1]]};
    for (int p = 0; p < TT_PART_COUNT; p++) {
        uint16_t m = part_segs[p] & chain_segs;
        if (!m || (m & s->scope) != m) continue; /* not in this chain, or not all inside the reference */
        bool alone = true;
        int64_t sum = 0;
        for (size_t r = 0; r < s->n_runs && alone; r++) {
            if (!(s->runs[r].segs & m)) continue;
            if (s->runs[r].segs & ~m) alone = false;
            else sum += s->runs[r].ns;
        }
        s->has_part[p] = alone;
        s->part_ns[p] = alone ? sum : 0;
    }
    for (size_t r = 0; r < s->n_runs; r++)
        for (int k = 0; k < TT_SEG_COUNT; k++)
            if (s->runs[r].segs == (1u << k)) {
                s->has_seg[k] = true;
                s->seg_ns[k] = s->runs[r].ns;
            }
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

void tt_distribution_of(double *v, size_t n, const double *pct, size_t n_pct, tt_distribution *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (!n) return;
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    d->mean = sum / (double)n;
    for (size_t i = 0; i < n; i++) sq += (v[i] - d->mean) * (v[i] - d->mean);
    d->stddev = sqrt(sq / (double)n);
    d->min = v[0];
    d->max = v[n - 1];
    d->median = tt_percentile_sorted(v, n, 50);
    for (size_t i = 0; i < n_pct && i < TT_MAX_PERCENTILES; i++) d->pct[i] = tt_percentile_sorted(v, n, pct[i]);
}

/* ---- per request ---- */

static const tt_request *near_request(const tt_join *j, const tt_joined *g, tt_vantage *which)
{
    static const tt_vantage order[] = {TT_VANTAGE_CLIENT_TLS, TT_VANTAGE_CLIENT, TT_VANTAGE_CLIENT_WIRE,
                                       TT_VANTAGE_WIRE,       TT_VANTAGE_SERVER, TT_VANTAGE_SERVER_TLS};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        const tt_request *r = tt_join_request(j, g, order[k]);
        if (r) {
            *which = order[k];
            return r;
        }
    }
    return NULL;
}

static const tt_request *wire_side_request(const tt_join *j, const tt_joined *g, tt_vantage *which)
{
    static const tt_vantage order[] = {TT_VANTAGE_WIRE,   TT_VANTAGE_CLIENT_WIRE, TT_VANTAGE_CLIENT,
                                       TT_VANTAGE_SERVER, TT_VANTAGE_CLIENT_TLS,  TT_VANTAGE_SERVER_TLS};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        const tt_request *r = tt_join_request(j, g, order[k]);
        if (r) {
            *which = order[k];
            return r;
        }
    }
    return NULL;
}

static bool reported_value(const tt_bench_request *b, bool e2el, int64_t *v)
{
    if (!b || !b->success) return false;
    int64_t x = e2el ? b->e2el_ns : b->ttft_ns;
    if (x == TT_BENCH_NONE) return false;
    *v = x;
    return true;
}

/* The instants a TLS vantage adds for one request: its own (the request's
 * first plaintext byte, the mark's) and, where the socket vantage could
 * not read the ciphertext, the socket's from the TLS records (ready_ns at
 * a TLS vantage: when each byte's ciphertext crossed the socket), each
 * only in the order the chain needs. Returns whether it saw the request. */
static bool tls_points(const tt_join *j, const tt_joined *g, bool server, bool e2el, int64_t pts[TT_PT_COUNT])
{
    tt_vantage v = server ? TT_VANTAGE_SERVER_TLS : TT_VANTAGE_CLIENT_TLS;
    const tt_request *r = tt_join_request(j, g, v);
    const tt_req_metrics *m = tt_join_metrics(j, g, v);
    if (!r || !(e2el ? m->has_e2el : m->has_ttft)) return false;
    uint64_t mark = e2el ? r->last_token_ns : r->first_token_ns;
    uint64_t mark_socket = e2el ? r->last_token_ready_ns : r->first_token_ready_ns;
    int req_pt = server ? TT_PT_SERVER_TLS_REQ : TT_PT_CLIENT_TLS_REQ;
    int mark_pt = server ? TT_PT_SERVER_TLS_MARK : TT_PT_CLIENT_TLS_MARK;
    int sock_req_pt = server ? TT_PT_SERVER_REQ : TT_PT_CLIENT_REQ;
    int sock_mark_pt = server ? TT_PT_SERVER_MARK : TT_PT_CLIENT_MARK;
    pts[req_pt] = (int64_t)r->req_first_ns;
    pts[mark_pt] = (int64_t)mark;
    /* the server reads its request's ciphertext before the plaintext comes
     * out, and writes its mark's after it goes in; the client the reverse */
    uint64_t req_socket = r->req_ready_ns;
    bool req_in_order = server ? req_socket <= r->req_first_ns : req_socket >= r->req_first_ns;
    bool mark_in_order = server ? mark_socket >= mark : mark_socket <= mark;
    if (pts[sock_req_pt] == TT_DECOMP_NONE && req_socket != TT_NS_NONE && req_in_order)
        pts[sock_req_pt] = (int64_t)req_socket;
    if (pts[sock_mark_pt] == TT_DECOMP_NONE && mark_socket != TT_NS_NONE && mark_in_order)
        pts[sock_mark_pt] = (int64_t)mark_socket;
    return true;
}

static void split_request(const tt_join *j, const tt_joined *g, const tt_bench_request *b, int64_t start,
                          bool e2el, tt_split *s)
{
    int64_t pts[TT_PT_COUNT];
    for (int k = 0; k < TT_PT_COUNT; k++) pts[k] = TT_DECOMP_NONE;
    enum { AT_CLIENT, AT_CLIENT_WIRE, AT_WIRE, AT_SERVER, AT_COUNT };
    static const struct { tt_vantage v; int req, mark; } at[AT_COUNT] = {
        [AT_CLIENT] = {TT_VANTAGE_CLIENT, TT_PT_CLIENT_REQ, TT_PT_CLIENT_MARK},
        [AT_CLIENT_WIRE] = {TT_VANTAGE_CLIENT_WIRE, TT_PT_CLIENT_WIRE_REQ, TT_PT_CLIENT_WIRE_MARK},
        [AT_WIRE] = {TT_VANTAGE_WIRE, TT_PT_WIRE_REQ, TT_PT_WIRE_MARK},
        [AT_SERVER] = {TT_VANTAGE_SERVER, TT_PT_SERVER_REQ, TT_PT_SERVER_MARK},
    };
    int64_t own_total[AT_COUNT] = {0};
    bool own[AT_COUNT] = {false};
    for (size_t k = 0; k < AT_COUNT; k++) {
        const tt_request *r = tt_join_request(j, g, at[k].v);
        const tt_req_metrics *m = tt_join_metrics(j, g, at[k].v);
        if (!r || !(e2el ? m->has_e2el : m->has_ttft)) continue;
        pts[at[k].req] = (int64_t)r->req_first_ns;
        pts[at[k].mark] = (int64_t)(e2el ? r->last_token_ns : r->first_token_ns);
        own[k] = true;
        /* the kernel's ready instants, where known and in order with the
         * read they precede (the server's request, the client's mark) */
        if (at[k].v == TT_VANTAGE_SERVER && r->req_ready_ns != TT_NS_NONE && r->req_ready_ns <= r->req_first_ns)
            pts[TT_PT_SERVER_READY] = (int64_t)r->req_ready_ns;
        uint64_t ready = e2el ? r->last_token_ready_ns : r->first_token_ready_ns;
        uint64_t mark = e2el ? r->last_token_ns : r->first_token_ns;
        if (at[k].v == TT_VANTAGE_CLIENT && ready != TT_NS_NONE && ready <= mark)
            pts[TT_PT_CLIENT_READY] = (int64_t)ready;
        own_total[k] = e2el ? m->e2el_ns : m->ttft_ns;
    }
    bool client_tls = tls_points(j, g, false, e2el, pts), server_tls = tls_points(j, g, true, e2el, pts);
    uint16_t chain = j->by_vantage[TT_VANTAGE_CLIENT_WIRE] ? TT_SEGS_TWO_WIRES : TT_SEGS_ONE_WIRE;
    if (client_tls || server_tls) chain |= TT_SEGS_TLS;
    int64_t total;
    if (reported_value(b, e2el, &total)) {
        if (start != TT_DECOMP_NONE) {
            pts[TT_PT_REPORTED_START] = start;
            pts[TT_PT_REPORTED_MARK] = start + total;
        }
        tt_split_compute_chain(s, TT_REF_REPORTED, total, pts, chain);
    } else if (client_tls) {
        tt_split_compute_chain(s, TT_REF_CLIENT_TLS, pts[TT_PT_CLIENT_TLS_MARK] - pts[TT_PT_CLIENT_TLS_REQ], pts, chain);
    } else if (own[AT_CLIENT]) {
        tt_split_compute_chain(s, TT_REF_CLIENT, own_total[AT_CLIENT], pts, chain);
    } else if (own[AT_WIRE]) {
        tt_split_compute_chain(s, TT_REF_WIRE, own_total[AT_WIRE], pts, chain);
    } else if (own[AT_SERVER] || (pts[TT_PT_SERVER_REQ] != TT_DECOMP_NONE && pts[TT_PT_SERVER_MARK] != TT_DECOMP_NONE)) {
        /* the server's socket; above TLS its instants come from the TLS records */
        int64_t own_server = own[AT_SERVER] ? own_total[AT_SERVER] : pts[TT_PT_SERVER_MARK] - pts[TT_PT_SERVER_REQ];
        tt_split_compute_chain(s, TT_REF_SERVER, own_server, pts, chain);
    } else if (server_tls) {
        tt_split_compute_chain(s, TT_REF_SERVER_TLS, pts[TT_PT_SERVER_TLS_MARK] - pts[TT_PT_SERVER_TLS_REQ], pts, chain);
    } else {
        memset(s, 0, sizeof *s);
    }
}

static bool metrics_whole(const tt_join *j, const tt_joined *g, tt_vantage v)
{
    const tt_req_metrics *m = tt_join_metrics(j, g, v);
    return m && m->has_e2el;
}

/* Events per read at `near`: token events whose completing chunk is the same. */
static void count_reads(const tt_request *r, tt_itl_split *s)
{
    uint32_t run = 0, last_chunk = 0;
    for (uint32_t i = 0; i < r->n_events; i++) {
        const tt_event_rec *e = &r->events[i];
        if (e->kind != TT_EV_TOKEN) continue;
        if (run && e->last_chunk == last_chunk) {
            run++;
            s->shared_read_events += run == 2 ? 2 : 1;
        } else {
            s->reads++;
            run = 1;
            last_chunk = e->last_chunk;
        }
        if (run > s->max_events_per_read) s->max_events_per_read = run;
    }
}

static int split_itl(const tt_join *j, const tt_joined *g, tt_itl_split *s)
{
    memset(s, 0, sizeof *s);
    tt_vantage near, far;
    if (metrics_whole(j, g, TT_VANTAGE_CLIENT)) near = TT_VANTAGE_CLIENT;
    else if (metrics_whole(j, g, TT_VANTAGE_CLIENT_WIRE)) near = TT_VANTAGE_CLIENT_WIRE;
    else if (metrics_whole(j, g, TT_VANTAGE_WIRE)) near = TT_VANTAGE_WIRE;
    else if (metrics_whole(j, g, TT_VANTAGE_CLIENT_TLS)) near = TT_VANTAGE_CLIENT_TLS; /* above TLS, the only one */
    else return 0;
    if (metrics_whole(j, g, TT_VANTAGE_SERVER)) far = TT_VANTAGE_SERVER;
    else if (near != TT_VANTAGE_WIRE && metrics_whole(j, g, TT_VANTAGE_WIRE)) far = TT_VANTAGE_WIRE;
    else if (metrics_whole(j, g, TT_VANTAGE_SERVER_TLS)) far = TT_VANTAGE_SERVER_TLS;
    else far = near;
    s->near = near;
    s->far = far;
    count_reads(tt_join_request(j, g, near), s);
    if (far == near) return 0;
    const tt_req_metrics *mn = tt_join_metrics(j, g, near), *mf = tt_join_metrics(j, g, far);
    if (mn->n_itl != mf->n_itl || mn->token_events != mf->token_events) return 0;
    s->valid = true;
    s->n = mn->n_itl;
    if (!s->n) return 0;
    s->near_minus_far_ns = malloc(s->n * sizeof *s->near_minus_far_ns);
    if (!s->near_minus_far_ns) return -1;
    for (uint32_t k = 0; k < s->n; k++) s->near_minus_far_ns[k] = mn->itl_ns[k] - mf->itl_ns[k];
    return 0;
}

static bool status_ok(const tt_request *r)
{
    return r->status >= 200 && r->status < 300;
}

static void find_disagreements(const tt_join *j, const tt_joined *g, const tt_bench_request *b,
                               const tt_request_breakdown *pb, tt_disagreement *d)
{
    memset(d, 0, sizeof *d);
    d->ttft_event_kind = -1;
    d->reported_tokens = -1;
    d->usage_tokens = -1;
    d->reported_text_len = -1;
    tt_vantage nv = TT_VANTAGE_CLIENT;
    const tt_request *r = near_request(j, g, &nv);
    if (!r) return;
    d->vantage = nv;
    d->usage_tokens = r->usage_completion_tokens;
    d->token_events = r->token_events;
    if (b && b->success && b->output_tokens >= 0) d->reported_tokens = b->output_tokens;
    bool whole = tt_request_complete(r);
    if (whole) {
        int64_t known[3], nk = 0;
        if (d->reported_tokens >= 0) known[nk++] = d->reported_tokens;
        if (d->usage_tokens >= 0) known[nk++] = d->usage_tokens;
        known[nk++] = d->token_events;
        for (int k = 1; k < nk; k++)
            if (known[k] != known[0]) d->mask |= TT_DIS_TOKENS;
    }
    if (!b) return;

    const tt_req_metrics *m = tt_join_metrics(j, g, nv);
    int64_t rep_ttft;
    if (nv != TT_VANTAGE_SERVER && m->has_ttft && reported_value(b, false, &rep_ttft)) {
        int64_t rep_mark = pb->reported_start_ns != TT_DECOMP_NONE ? pb->reported_start_ns + rep_ttft : TT_DECOMP_NONE;
        int64_t early = rep_mark != TT_DECOMP_NONE ? (int64_t)r->first_token_ns - rep_mark : m->ttft_ns - rep_ttft;
        if (early > 0) {
            d->mask |= TT_DIS_TTFT_NON_TOKEN;
            d->ttft_early_ns = early;
            for (uint32_t i = 0; i < r->n_events; i++) {
                const tt_event_rec *e = &r->events[i];
                if (e->kind == TT_EV_TOKEN) break;
                if (rep_mark == TT_DECOMP_NONE || (int64_t)e->dispatch_ns <= rep_mark) d->ttft_event_kind = e->kind;
                if (rep_mark == TT_DECOMP_NONE) break;
            }
        }
    }

    tt_vantage wv = TT_VANTAGE_WIRE;
    const tt_request *w = wire_side_request(j, g, &wv);
    bool completed = tt_request_complete(w) && status_ok(w) && !w->error_message[0] &&
                     (w->terminal_seen || w->token_events > 0 || w->framing == TT_FRAMING_NONE);
    bool failed = !tt_request_complete(w) || w->status == 0 || w->status >= 400 || w->error_message[0];
    if (!b->success && completed) d->mask |= TT_DIS_FAILED_BUT_COMPLETED;
    if (b->success && failed) d->mask |= TT_DIS_COMPLETED_BUT_FAILED;

    if (b->success && b->text_len >= 0 && whole) {
        d->reported_text_len = b->text_len;
        d->text_bytes = (int64_t)r->text_bytes;
        int64_t with_reasoning = (int64_t)(r->text_bytes + r->reasoning_bytes);
        if (b->text_len != d->text_bytes && b->text_len != with_reasoning) d->mask |= TT_DIS_TEXT_LENGTH;
    }
}

/* ---- over requests ---- */

typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec;

static int dvec_push(dvec *d, double x)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        double *v = realloc(d->v, cap * sizeof *v);
        if (!v) return -1;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = x;
    return 0;
}

static void overhead_of(dvec *d, tt_overhead_stat *o)
{
    static const double p99 = 99;
    tt_distribution dist;
    tt_distribution_of(d->v, d->n, &p99, 1, &dist);
    *o = (tt_overhead_stat){.n = dist.n, .mean = dist.mean, .median = dist.median, .p99 = dist.pct[0]};
    d->n = 0;
}

static int summarise_splits(tt_breakdown *b, bool e2el, dvec *tmp)
{
    tt_overhead_stat *parts = e2el ? b->e2el_part : b->ttft_part;
    tt_overhead_stat *segs = e2el ? b->e2el_seg : b->ttft_seg;
    size_t *merged = e2el ? &b->e2el_merged : &b->ttft_merged;
    for (size_t i = 0; i < b->join.n; i++) {
        const tt_split *s = e2el ? &b->per[i].e2el : &b->per[i].ttft;
        if (s->reference == TT_REF_NONE) continue;
        for (int p = 0; p < TT_PART_COUNT; p++)
            if ((part_segs[p] & s->chain) && (part_segs[p] & s->chain & s->scope) == (part_segs[p] & s->chain) &&
                !s->has_part[p]) {
                (*merged)++;
                break;
            }
    }
    for (int p = 0; p < TT_PART_COUNT; p++) {
        for (size_t i = 0; i < b->join.n; i++) {
            const tt_split *s = e2el ? &b->per[i].e2el : &b->per[i].ttft;
            if (s->reference != TT_REF_NONE && s->has_part[p] && dvec_push(tmp, (double)s->part_ns[p]) < 0) return -1;
        }
        overhead_of(tmp, &parts[p]);
    }
    for (int k = 0; k < TT_SEG_COUNT; k++) {
        for (size_t i = 0; i < b->join.n; i++) {
            const tt_split *s = e2el ? &b->per[i].e2el : &b->per[i].ttft;
            if (s->reference != TT_REF_NONE && s->has_seg[k] && dvec_push(tmp, (double)s->seg_ns[k]) < 0) return -1;
        }
        overhead_of(tmp, &segs[k]);
    }
    return 0;
}

static int summarise_reported(tt_breakdown *b, dvec *tmp)
{
    const tt_bench_result *br = b->join.bench;
    dvec ttft = {0}, tpot = {0}, itl = {0}, e2el = {0};
    int rc = -1;
    for (size_t i = 0; i < br->n_reqs; i++) {
        const tt_bench_request *r = &br->reqs[i];
        if (!r->success) {
            b->reported_failed++;
            continue;
        }
        b->reported_ok++;
        if (r->output_tokens > 0) b->reported_output_tokens += (uint64_t)r->output_tokens;
        if (r->ttft_ns != TT_BENCH_NONE && dvec_push(&ttft, (double)r->ttft_ns) < 0) goto out;
        if (r->e2el_ns != TT_BENCH_NONE && dvec_push(&e2el, (double)r->e2el_ns) < 0) goto out;
        if (r->ttft_ns != TT_BENCH_NONE && r->e2el_ns != TT_BENCH_NONE && r->output_tokens > 1 &&
            dvec_push(&tpot, (double)(r->e2el_ns - r->ttft_ns) / (double)(r->output_tokens - 1)) < 0)
            goto out;
        for (size_t k = 0; k < r->n_itl; k++)
            if (dvec_push(&itl, (double)r->itl_ns[k]) < 0) goto out;
    }
    tt_distribution_of(ttft.v, ttft.n, b->pct_at, b->n_pct, &b->reported_ttft);
    tt_distribution_of(tpot.v, tpot.n, b->pct_at, b->n_pct, &b->reported_tpot);
    tt_distribution_of(itl.v, itl.n, b->pct_at, b->n_pct, &b->reported_itl);
    tt_distribution_of(e2el.v, e2el.n, b->pct_at, b->n_pct, &b->reported_e2el);
    rc = 0;
out:
    free(ttft.v);
    free(tpot.v);
    free(itl.v);
    free(e2el.v);
    (void)tmp;
    return rc;
}

static int summarise_itl(tt_breakdown *b)
{
    dvec rep = {0}, far = {0}, diff = {0};
    int rc = -1;
    b->itl_far = b->join.by_vantage[TT_VANTAGE_SERVER] ? TT_VANTAGE_SERVER : TT_VANTAGE_WIRE;
    for (size_t i = 0; i < b->join.n; i++) {
        const tt_joined *g = &b->join.reqs[i];
        const tt_itl_split *s = &b->per[i].itl;
        b->itl_shared_read_events += s->shared_read_events;
        if (s->reads) b->itl_token_events += tt_join_request(&b->join, g, s->near)->token_events;
        for (uint32_t k = 0; k < s->n && s->valid; k++)
            if (dvec_push(&diff, (double)s->near_minus_far_ns[k]) < 0) goto out;
        const tt_bench_request *br = tt_join_bench(&b->join, g);
        const tt_req_metrics *mf = tt_join_metrics(&b->join, g, b->itl_far);
        if (!br || !br->success || !mf || !mf->has_e2el) continue;
        for (size_t k = 0; k < br->n_itl; k++)
            if (dvec_push(&rep, (double)br->itl_ns[k]) < 0) goto out;
        for (uint32_t k = 0; k < mf->n_itl; k++)
            if (dvec_push(&far, (double)mf->itl_ns[k]) < 0) goto out;
    }
    tt_distribution_of(rep.v, rep.n, b->pct_at, b->n_pct, &b->itl_reported_matched);
    tt_distribution_of(far.v, far.n, b->pct_at, b->n_pct, &b->itl_far_matched);
    tt_distribution_of(diff.v, diff.n, b->pct_at, b->n_pct, &b->itl_near_minus_far);
    rc = 0;
out:
    free(rep.v);
    free(far.v);
    free(diff.v);
    return rc;
}

int tt_breakdown_build(tt_breakdown *b, const tt_analysis *const *as, size_t n, const tt_bench_result *bench,
                       const tt_join_options *opt)
{
    memset(b, 0, sizeof *b);
    if (n) {
        b->n_pct = as[0]->summary.n_pct;
        memcpy(b->pct_at, as[0]->summary.pct_at, sizeof b->pct_at);
    }
    if (tt_join_build(&b->join, as, n, bench, opt) < 0) return -1;
    b->per = calloc(b->join.n + 1, sizeof *b->per);
    if (!b->per) goto fail;
    size_t refs[TT_REF_COUNT] = {0};
    for (size_t i = 0; i < b->join.n; i++) {
        const tt_joined *g = &b->join.reqs[i];
        tt_request_breakdown *pb = &b->per[i];
        const tt_bench_request *br = tt_join_bench(&b->join, g);
        int64_t start = TT_DECOMP_NONE, t;
        if (br && tt_join_bench_start(&b->join, br, &t)) start = t;
        pb->has_reported = br != NULL;
        pb->reported_start_ns = start;
        split_request(&b->join, g, br, start, false, &pb->ttft);
        split_request(&b->join, g, br, start, true, &pb->e2el);
        if (split_itl(&b->join, g, &pb->itl) < 0) goto fail;
        find_disagreements(&b->join, g, br, pb, &pb->dis);
        for (int k = 0; k < TT_DIS_COUNT_BITS; k++) b->dis_count[k] += (pb->dis.mask >> k) & 1u;
        refs[pb->ttft.reference]++;
    }
    b->reference = TT_REF_NONE;
    size_t most = 0;
    for (int r = TT_REF_REPORTED; r < TT_REF_COUNT; r++)
        if (refs[r] > most) {
            most = refs[r];
            b->reference = (tt_reference)r;
        }
    dvec tmp = {0};
    int rc = summarise_splits(b, false, &tmp);
    if (rc == 0) rc = summarise_splits(b, true, &tmp);
    free(tmp.v);
    if (rc < 0) goto fail;
    if (bench) {
        b->has_reported = true;
        if (summarise_reported(b, NULL) < 0) goto fail;
    }
    if (summarise_itl(b) < 0) goto fail;
    return 0;
fail:
    tt_breakdown_free(b);
    return -1;
}

void tt_breakdown_free(tt_breakdown *b)
{
    if (b->per)
        for (size_t i = 0; i < b->join.n; i++) free(b->per[i].itl.near_minus_far_ns);
    free(b->per);
    tt_join_free(&b->join);
    memset(b, 0, sizeof *b);
}
