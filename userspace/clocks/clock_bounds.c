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

/* By x-request-id; without one, by connection (client, server) and ordinal. */
static int key_cmp(const tt_request *a, const tt_request *b)
{
    if (a->request_id[0] || b->request_id[0]) return strcmp(a->request_id, b->request_id);
    int c = endpoint_cmp(&a->client, &b->client);
    if (!c) c = endpoint_cmp(&a->server, &b->server);
    if (!c && a->ordinal != b->ordinal) c = a->ordinal < b->ordinal ? -1 : 1;
    return c;
}

static int keyed_cmp(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    int c = key_cmp(a->r, b->r);
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* a's requests that have an x-request-id (with_id) or have none, sorted by
 * key, then capture order. NULL with *n 0 when there are none; NULL with
 * *n SIZE_MAX when out of memory. */
static keyed *sorted_requests(const tt_analysis *a, bool with_id, size_t *n)
{
    *n = 0;
    keyed *v = a->n_reqs ? malloc(a->n_reqs * sizeof *v) : NULL;
    if (a->n_reqs && !v) {
        *n = SIZE_MAX;
        return NULL;
    }
    for (size_t i = 0; i < a->n_reqs; i++)
        if ((a->reqs[i].request_id[0] != 0) == with_id) v[(*n)++] = (keyed){&a->reqs[i], i};
    if (*n) qsort(v, *n, sizeof *v, keyed_cmp);
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
                 tt_clock_match *m)
{
    if (!seen(from_ns) || !seen(to_ns)) return 0;
    int rc = from_client == client_in_s ? tt_clock_align_s_to_r(ca, (int64_t)from_ns, (int64_t)to_ns)
                                        : tt_clock_align_r_to_s(ca, (int64_t)from_ns, (int64_t)to_ns);
    if (rc == 0) m->bounds++;
    return rc;
}

/* The bounds of one request: client (in one recording) and server (in the other). */
static int add_request(tt_clock_align *ca, const tt_request *client, const tt_request *server, bool client_in_s,
                       tt_clock_match *m)
{
    if (cross(ca, client_in_s, true, client->req_first_ns, server->req_first_ns, m) < 0 ||
        cross(ca, client_in_s, true, client->req_last_ns, server->req_last_ns, m) < 0)
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
        if (cross(ca, client_in_s, false, se->dispatch_ns, ce->dispatch_ns, m) < 0) return -1;
        ci++;
        si++;
    }
    return 0;
}

int tt_clock_bounds_add(tt_clock_align *ca, const tt_analysis *const *r_as, size_t r_n,
                        const tt_analysis *const *s_as, size_t s_n, tt_clock_match *m)
{
    memset(m, 0, sizeof *m);
    /* the client side in one recording, the server side in the other, both ways round */
    for (int way = 0; way < 2; way++) {
        bool client_in_s = way == 1;
        const tt_analysis *cl = client_in_s ? vantage_of(s_as, s_n, TT_VANTAGE_CLIENT) : vantage_of(r_as, r_n, TT_VANTAGE_CLIENT);
        const tt_analysis *sv = client_in_s ? vantage_of(r_as, r_n, TT_VANTAGE_SERVER) : vantage_of(s_as, s_n, TT_VANTAGE_SERVER);
        if (!cl || !sv) continue;
        /* The k-th request with a key at the client meets the k-th with
         * that key at the server: the same x-request-id, else the same
         * connection and ordinal (a 4-tuple reused later is another
         * connection: the k-th meets the k-th in capture order). */
        for (int with_id = 1; with_id >= 0; with_id--) {
            size_t nc, ns;
            keyed *kc = sorted_requests(cl, with_id, &nc), *ks = sorted_requests(sv, with_id, &ns);
            if (nc == SIZE_MAX || ns == SIZE_MAX) {
                free(kc);
                free(ks);
                return -1;
            }
            int rc = 0;
            for (size_t i = 0, j = 0; i < nc && j < ns && rc == 0;) {
                int c = key_cmp(kc[i].r, ks[j].r);
                if (c < 0) {
                    i++;
                } else if (c > 0) {
                    j++;
                } else {
                    size_t gi = i, gj = j;
                    while (gi < nc && !key_cmp(kc[gi].r, kc[i].r)) gi++;
                    while (gj < ns && !key_cmp(ks[gj].r, ks[j].r)) gj++;
                    for (; i < gi && j < gj && rc == 0; i++, j++) {
                        if (with_id) m->by_id++;
                        else m->by_connection++;
                        rc = add_request(ca, kc[i].r, ks[j].r, client_in_s, m);
                    }
                    i = gi;
                    j = gj;
                }
            }
            free(kc);
            free(ks);
            if (rc < 0) return -1;
        }
    }
    return 0;
}
