/* live_join.c - pairs of one request's server and client views (live_join.h). */
#include "export/live_join.h"

#include <stdlib.h>

typedef struct waiting {
    tt_vantage vantage;
    uint64_t key, since_ns;
    tt_request req; /* events, text and body cleared */
} waiting;

struct tt_ljoin {
    waiting *w;        /* a ring: oldest at head */
    size_t cap, head, n;
    uint64_t max_wait_ns;
    tt_ljoin_pair_fn on_pair;
    void *ctx;
    uint64_t paired, expired;
};

tt_ljoin *tt_ljoin_new(size_t capacity, uint64_t max_wait_ns, tt_ljoin_pair_fn on_pair, void *ctx)
{
    tt_ljoin *j = calloc(1, sizeof *j);
    if (!j || !capacity || !(j->w = calloc(capacity, sizeof *j->w))) {
        free(j);
        return NULL;
    }
    j->cap = capacity;
    j->max_wait_ns = max_wait_ns;
    j->on_pair = on_pair;
    j->ctx = ctx;
    return j;
}

void tt_ljoin_free(tt_ljoin *j)
{
    if (!j) return;
    free(j->w);
    free(j);
}

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t mix_endpoint(uint64_t h, const tt_endpoint *e)
{
    h = mix(h, &e->family, sizeof e->family);
    h = mix(h, e->addr, sizeof e->addr);
    return mix(h, &e->port, sizeof e->port);
}

/* The connection's endpoints and the request's first sequence number. */
static uint64_t key_of(const tt_request *r)
{
    uint64_t h = mix_endpoint(mix_endpoint(0xcbf29ce484222325ull, &r->client), &r->server);
    return mix(h, &r->req_seq, sizeof r->req_seq);
}

static bool same_request(const tt_request *a, const tt_request *b)
{
    return a->req_seq == b->req_seq && tt_endpoint_equal(&a->client, &b->client) &&
           tt_endpoint_equal(&a->server, &b->server);
}

static waiting *at(tt_ljoin *j, size_t i) { return &j->w[(j->head + i) % j->cap]; }

static void drop_oldest(tt_ljoin *j)
{
    j->head = (j->head + 1) % j->cap;
    j->n--;
}

/* Remove entry i (0: the oldest) by moving the newer ones down one place. */
static void remove_at(tt_ljoin *j, size_t i)
{
    for (size_t k = i; k + 1 < j->n; k++) *at(j, k) = *at(j, k + 1);
    j->n--;
}

void tt_ljoin_offer(tt_ljoin *j, tt_vantage v, const tt_request *r, uint64_t now_ns)
{
    if ((v != TT_VANTAGE_SERVER && v != TT_VANTAGE_CLIENT) || !r->req_seq_known) return;
    while (j->n && now_ns - at(j, 0)->since_ns > j->max_wait_ns) {
        drop_oldest(j);
        j->expired++;
    }
    uint64_t key = key_of(r);
    for (size_t i = j->n; i-- > 0;) {
        waiting *w = at(j, i);
        if (w->key != key || w->vantage == v || !same_request(&w->req, r)) continue;
        j->paired++;
        if (v == TT_VANTAGE_SERVER) j->on_pair(j->ctx, r, &w->req);
        else j->on_pair(j->ctx, &w->req, r);
        remove_at(j, i);
        return;
    }
    if (j->n == j->cap) {
        drop_oldest(j);
        j->expired++;
    }
    waiting *w = at(j, j->n++);
    w->vantage = v;
    w->key = key;
    w->since_ns = now_ns;
    w->req = *r;
    w->req.events = NULL;
    w->req.n_events = w->req.cap_events = 0;
    w->req.text = NULL;
    w->req.text_len = w->req.text_cap = 0;
    w->req.body = NULL;
    w->req.body_len = w->req.body_cap = 0;
}

void tt_ljoin_stats_get(const tt_ljoin *j, tt_ljoin_stats *st)
{
    st->paired = j->paired;
    st->expired = j->expired;
    st->waiting = j->n;
}

void tt_ljoin_links(const tt_request *server, const tt_request *client, int64_t *uplink_ns, int64_t *downlink_ns)
{
    *uplink_ns = *downlink_ns = -1;
    if (server->req_ready_ns != TT_NS_NONE && client->req_first_ns != TT_NS_NONE &&
        server->req_ready_ns >= client->req_first_ns)
        *uplink_ns = (int64_t)(server->req_ready_ns - client->req_first_ns);
    if (client->first_token_ready_ns != TT_NS_NONE && server->first_token_ns != TT_NS_NONE &&
        client->first_token_ready_ns >= server->first_token_ns)
        *downlink_ns = (int64_t)(client->first_token_ready_ns - server->first_token_ns);
}
