/* clock_bounds.c - bounds on two recordings' clock offset from the
 * requests both saw (clock_bounds.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clocks/clock_bounds.h"

static const tt_analysis *vantage_of(const tt_analysis *const *as, size_t n, tt_vantage v)
{
    for (size_t i = 0; i < n; i++)
        if (as[i]->vantage == v) return as[i];
    return NULL;
}

/* How two requests are matched, strongest first. */
typedef enum match_key { KEY_ID = 0, KEY_SEQUENCE, KEY_ORDINAL, KEY_COUNT } match_key;

/* A request and its place in its vantage's list (capture order). */
typedef struct keyed {
    const tt_request *r;
    size_t pos;
} keyed;

static int endpoint_cmp(const tt_endpoint *a, const tt_endpoint *b)
{
    if (a->family != b->family) return a->family < b->family ? -1 : 1;
    if (a->port != b->port) return a->port < b->port ? -1 : 1;
    return memcmp(a->addr, b->addr, a->family == 6 ? 16 : 4);
}

static int key_cmp(match_key k, const tt_request *a, const tt_request *b)
{
    if (k == KEY_ID) return strcmp(a->request_id, b->request_id);
    int c = endpoint_cmp(&a->client, &b->client);
    if (!c) c = endpoint_cmp(&a->server, &b->server);
    if (c) return c;
    if (k == KEY_SEQUENCE) return a->req_seq < b->req_seq ? -1 : a->req_seq > b->req_seq;
    return a->ordinal < b->ordinal ? -1 : a->ordinal > b->ordinal;
}

/* Whether an unmatched request r can be matched by k. */
static bool has_key(match_key k, const tt_request *r)
{
    if (k == KEY_ID) return r->request_id[0] != 0;
    if (r->request_id[0]) return false; /* an id is matched by its id only */
    return k != KEY_SEQUENCE || r->req_seq_known;
}

/* qsort_r's comparison: by the key *pk, then capture order. */
static int keyed_cmp(const void *pa, const void *pb, void *pk)
{
    const keyed *a = pa, *b = pb;
    int c = key_cmp(*(const match_key *)pk, a->r, b->r);
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* a's requests not yet matched (matched[i] false) that have key k, sorted
 * by it, then capture order. NULL with *n 0 when there are none; NULL
 * with *n SIZE_MAX when out of memory. */
static keyed *sorted_requests(const tt_analysis *a, const bool *matched, match_key k, size_t *n)
{
    *n = 0;
    keyed *v = a->n_reqs ? malloc(a->n_reqs * sizeof *v) : NULL;
    if (a->n_reqs && !v) {
        *n = SIZE_MAX;
        return NULL;
    }
    for (size_t i = 0; i < a->n_reqs; i++)
        if (!matched[i] && has_key(k, &a->reqs[i])) v[(*n)++] = (keyed){&a->reqs[i], i};
    if (*n) qsort_r(v, *n, sizeof *v, keyed_cmp, &k);
    return v;
}

static bool seen(uint64_t ns)
{
    return ns != TT_NS_NONE && ns != 0;
}

/* A byte sent at from_ns and read at to_ns, seen at both (TT_NS_NONE or 0
 * at either: nothing): from the client's host when from_client, else
 * from the server's; into ca the way round R and S are. */
static int cross(tt_clock_align *ca, bool client_in_s, bool from_client, uint64_t from_ns, uint64_t to_ns,
                 size_t *bounds)
{
    if (!seen(from_ns) || !seen(to_ns)) return 0;
    int rc = from_client == client_in_s ? tt_clock_align_s_to_r(ca, (int64_t)from_ns, (int64_t)to_ns)
                                        : tt_clock_align_r_to_s(ca, (int64_t)from_ns, (int64_t)to_ns);
    if (rc == 0) (*bounds)++;
    return rc;
}

/* The bounds of one request: client (in one recording) and server (in the other). */
static int add_request(tt_clock_align *ca, const tt_request *client, const tt_request *server, bool client_in_s,
                       size_t *bounds)
{
    if (cross(ca, client_in_s, true, client->req_first_ns, server->req_first_ns, bounds) < 0 ||
        cross(ca, client_in_s, true, client->req_last_ns, server->req_last_ns, bounds) < 0)
        return -1;
    /* the k-th token event written at the server, read at the client */
    uint32_t ci = 0, si = 0;
    while (ci < client->n_events && si < server->n_events) {
        const tt_event_rec *ce = &client->events[ci], *se = &server->events[si];
        if (ce->kind != TT_EV_TOKEN) {
            ci++;
            continue;
        }
        if (se->kind != TT_EV_TOKEN) {
            si++;
            continue;
        }
        if (cross(ca, client_in_s, false, se->dispatch_ns, ce->dispatch_ns, bounds) < 0) return -1;
        ci++;
        si++;
    }
    return 0;
}

/* Match cl's requests (a client side) with sv's (a server side in the
 * other recording), key by key, and add each matched pair's bounds. */
static int match_pair(tt_clock_align *ca, const tt_analysis *cl, const tt_analysis *sv, tt_clock_pair *p)
{
    bool *cm = calloc(cl->n_reqs + 1, sizeof *cm), *sm = calloc(sv->n_reqs + 1, sizeof *sm);
    int rc = cm && sm ? 0 : -1;
    for (match_key k = KEY_ID; k < KEY_COUNT && rc == 0; k++) {
        size_t nc, ns;
        keyed *kc = sorted_requests(cl, cm, k, &nc), *ks = sorted_requests(sv, sm, k, &ns);
        if (nc == SIZE_MAX || ns == SIZE_MAX) rc = -1;
        /* The k-th request with a key on the client's side meets the k-th
         * with that key on the server's (a 4-tuple reused later is another
         * connection: capture order tells them apart). */
        for (size_t i = 0, j = 0; rc == 0 && i < nc && j < ns;) {
            int c = key_cmp(k, kc[i].r, ks[j].r);
            if (c < 0) {
                i++;
            } else if (c > 0) {
                j++;
            } else {
                size_t gi = i, gj = j;
                while (gi < nc && !key_cmp(k, kc[gi].r, kc[i].r)) gi++;
                while (gj < ns && !key_cmp(k, ks[gj].r, ks[j].r)) gj++;
                for (; i < gi && j < gj && rc == 0; i++, j++) {
                    cm[kc[i].pos] = sm[ks[j].pos] = true;
                    if (k == KEY_ID) p->by_id++;
                    else if (k == KEY_SEQUENCE) p->by_sequence++;
                    else p->by_connection++;
                    rc = add_request(ca, kc[i].r, ks[j].r, p->client_in_s, &p->bounds);
                }
                i = gi;
                j = gj;
            }
        }
        free(kc);
        free(ks);
    }
    free(cm);
    free(sm);
    return rc;
}

/* The client side (want_client) or the server side of a recording's
 * vantages: its socket vantage of that side, and its wire when it holds no
 * socket vantage of the other side. */
static size_t side_of(const tt_analysis *const *as, size_t n, bool want_client, const tt_analysis **out)
{
    tt_vantage mine = want_client ? TT_VANTAGE_CLIENT : TT_VANTAGE_SERVER;
    tt_vantage other = want_client ? TT_VANTAGE_SERVER : TT_VANTAGE_CLIENT;
    const tt_analysis *own = vantage_of(as, n, mine), *peer = vantage_of(as, n, other);
    const tt_analysis *wire = vantage_of(as, n, TT_VANTAGE_WIRE);
    size_t k = 0;
    if (own && own->n_reqs) out[k++] = own;
    if (own && own->n_reqs && wire && wire->n_reqs && !(peer && peer->n_reqs)) out[k++] = wire;
    return k;
}

int tt_clock_bounds_add(tt_clock_align *ca, const tt_analysis *const *r_as, size_t r_n,
                        const tt_analysis *const *s_as, size_t s_n, tt_clock_match *m)
{
    memset(m, 0, sizeof *m);
    /* the client side in one recording, the server side in the other, both ways round */
    for (int way = 0; way < 2; way++) {
        bool client_in_s = way == 1;
        const tt_analysis *cls[2], *svs[2];
        size_t ncl = client_in_s ? side_of(s_as, s_n, true, cls) : side_of(r_as, r_n, true, cls);
        size_t nsv = client_in_s ? side_of(r_as, r_n, false, svs) : side_of(s_as, s_n, false, svs);
        for (size_t i = 0; i < ncl; i++)
            for (size_t j = 0; j < nsv && m->n_pairs < TT_CLOCK_MAX_PAIRS; j++) {
                tt_clock_pair *p = &m->pairs[m->n_pairs++];
                *p = (tt_clock_pair){.client_side = cls[i]->vantage, .server_side = svs[j]->vantage,
                                     .client_in_s = client_in_s};
                if (match_pair(ca, cls[i], svs[j], p) < 0) return -1;
                m->bounds += p->bounds;
                size_t matched = p->by_id + p->by_sequence + p->by_connection;
                if (matched > m->requests) {
                    m->requests = matched;
                    m->best = m->n_pairs - 1;
                }
            }
    }
    return 0;
}
