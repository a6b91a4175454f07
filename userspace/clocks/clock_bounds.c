/* clock_bounds.c - bounds on two recordings' clock offset from the
 * requests both saw (clock_bounds.h). */
#include <string.h>

#include "clocks/clock_bounds.h"

static const tt_analysis *vantage_of(const tt_analysis *const *as, size_t n, tt_vantage v)
{
    for (size_t i = 0; i < n; i++)
        if (as[i]->vantage == v) return as[i];
    return NULL;
}

static bool same_endpoint(const tt_endpoint *a, const tt_endpoint *b)
{
    size_t len = a->family == 6 ? 16 : 4;
    return a->family == b->family && a->port == b->port && !memcmp(a->addr, b->addr, len);
}

/* The request at the other recording's vantage matching r: the same
 * x-request-id (the k-th with that id meets the k-th), else the same
 * connection and ordinal. */
static const tt_request *match(const tt_analysis *other, const tt_request *r, const tt_analysis *own, bool *by_id)
{
    if (r->request_id[0]) {
        size_t k = 0;
        for (size_t i = 0; i < own->n_reqs && &own->reqs[i] != r; i++) k += !strcmp(own->reqs[i].request_id, r->request_id);
        for (size_t i = 0; i < other->n_reqs; i++) {
            if (strcmp(other->reqs[i].request_id, r->request_id)) continue;
            if (k-- == 0) {
                *by_id = true;
                return &other->reqs[i];
            }
        }
        return NULL;
    }
    for (size_t i = 0; i < other->n_reqs; i++) {
        const tt_request *o = &other->reqs[i];
        if (!o->request_id[0] && o->ordinal == r->ordinal && same_endpoint(&o->client, &r->client) &&
            same_endpoint(&o->server, &r->server)) {
            *by_id = false;
            return o;
        }
    }
    return NULL;
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
        for (size_t i = 0; i < cl->n_reqs; i++) {
            bool by_id = false;
            const tt_request *srv = match(sv, &cl->reqs[i], cl, &by_id);
            if (!srv) continue;
            if (by_id) m->by_id++;
            else m->by_connection++;
            if (add_request(ca, &cl->reqs[i], srv, client_in_s, m) < 0) return -1;
        }
    }
    return 0;
}
