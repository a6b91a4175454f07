/* ready_bridge.c - ready instants onto another source's connections (ready_bridge.h). */
#include "source/ready_bridge.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define BRIDGE_BUCKETS 1024u
/* Marks held for a connection the target has not shown yet: at most this
 * many, and none older than HOLD_NS behind the newest mark. */
#define HOLD_MAX 1024u
#define HOLD_NS 1000000000ull
/* A held mark goes to a connection first seen at most this long after it. */
#define HELD_BEFORE_NS 100000000ull

typedef struct bridge_conn {
    struct bridge_conn *next;
    const tt_conn_info *info; /* the target's, valid until its RELEASE */
} bridge_conn;

/* A mark of a connection the target did not know when it came: the
 * chunk, and the connection's endpoints (the eBPF source's tt_conn_info
 * may be gone by the time it is forwarded). */
typedef struct held_mark {
    tt_chunk chunk;
    tt_endpoint client, server;
} held_mark;

struct tt_ready_bridge {
    tt_chunk_fn fn;
    void *ctx;
    bridge_conn *buckets[BRIDGE_BUCKETS];
    uint64_t forwarded, dropped;
    held_mark held[HOLD_MAX]; /* a ring, oldest at held_first, in arrival order */
    unsigned held_first, held_n;
    bool learned_new; /* a connection was learned since the last tt_ready_bridge_release_held */
};

static unsigned bucket_of(const tt_conn_info *c)
{
    uint64_t h = (uint64_t)c->client.port << 16 ^ c->server.port;
    for (int i = 0; i < 16; i++) h = (h ^ c->client.addr[i] ^ (uint64_t)c->server.addr[i] << 8) * 0x100000001B3ull;
    return (unsigned)(h >> 32) % BRIDGE_BUCKETS;
}

tt_ready_bridge *tt_ready_bridge_new(tt_chunk_fn fn, void *ctx)
{
    tt_ready_bridge *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->fn = fn;
    b->ctx = ctx;
    return b;
}

void tt_ready_bridge_learn(tt_ready_bridge *b, const tt_chunk *c)
{
    if (!b || !c->conn) return;
    bridge_conn **pp = &b->buckets[bucket_of(c->conn)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->info == c->conn) break;
    if (c->kind == TT_CHUNK_RELEASE) {
        if (*pp) {
            bridge_conn *gone = *pp;
            *pp = gone->next;
            free(gone);
        }
        return;
    }
    if (*pp) return;
    bridge_conn *n = malloc(sizeof *n);
    if (!n) return; /* its marks will be dropped, counted */
    n->info = c->conn;
    n->next = b->buckets[bucket_of(c->conn)];
    b->buckets[bucket_of(c->conn)] = n;
    b->learned_new = true;
}

/* The target's connection with these endpoints, or NULL. The newest on
 * the 4-tuple comes first: a reused tuple's old connection is released
 * before the new one's first chunk. */
static const tt_conn_info *target_of(const tt_ready_bridge *b, const tt_endpoint *client, const tt_endpoint *server)
{
    tt_conn_info key = {.client = *client, .server = *server};
    for (bridge_conn *n = b->buckets[bucket_of(&key)]; n; n = n->next)
        if (tt_endpoint_equal(&n->info->client, client) && tt_endpoint_equal(&n->info->server, server))
            return n->info;
    return NULL;
}

static void forward(tt_ready_bridge *b, const tt_chunk *c, const tt_conn_info *to)
{
    tt_chunk fwd = *c;
    fwd.conn = to;
    b->forwarded++;
    b->fn(b->ctx, &fwd);
}

/* Hold a mark that found no connection; the oldest held go (dropped,
 * counted) when there are too many or they are HOLD_NS behind it. */
static void hold(tt_ready_bridge *b, const tt_chunk *c)
{
    while (b->held_n && (b->held_n == HOLD_MAX || b->held[b->held_first].chunk.mono_ns + HOLD_NS < c->mono_ns)) {
        b->held_first = (b->held_first + 1) % HOLD_MAX;
        b->held_n--;
        b->dropped++;
    }
    held_mark *h = &b->held[(b->held_first + b->held_n++) % HOLD_MAX];
    h->chunk = *c;
    h->chunk.conn = NULL;
    h->chunk.data = NULL;
    h->client = c->conn->client;
    h->server = c->conn->server;
}

void tt_ready_bridge_release_held(tt_ready_bridge *b)
{
    if (!b || !b->learned_new) return;
    b->learned_new = false;
    unsigned kept = 0;
    for (unsigned i = 0; i < b->held_n; i++) {
        held_mark h = b->held[(b->held_first + i) % HOLD_MAX];
        const tt_conn_info *to = target_of(b, &h.client, &h.server);
        /* not a mark of an earlier connection on a tuple used again: a
         * connection's own first marks come at most a little before its
         * first record (a receive's is stamped at its return) */
        if (to && to->first_seen_ns > h.chunk.mono_ns + HELD_BEFORE_NS) to = NULL;
        if (to) forward(b, &h.chunk, to);
        else b->held[(b->held_first + kept++) % HOLD_MAX] = h;
    }
    b->held_n = kept;
}

void tt_ready_bridge_chunk(void *ctx, const tt_chunk *c)
{
    tt_ready_bridge *b = ctx;
    if (c->kind != TT_CHUNK_READY) return;
    const tt_conn_info *to = target_of(b, &c->conn->client, &c->conn->server);
    if (to) forward(b, c, to);
    else hold(b, c);
}

void tt_ready_bridge_counts(const tt_ready_bridge *b, uint64_t *forwarded, uint64_t *dropped)
{
    *forwarded = b ? b->forwarded : 0;
    *dropped = b ? b->dropped + b->held_n : 0;
}

void tt_ready_bridge_free(tt_ready_bridge *b)
{
    if (!b) return;
    for (unsigned i = 0; i < BRIDGE_BUCKETS; i++)
        for (bridge_conn *n = b->buckets[i], *nx; n; n = nx) {
            nx = n->next;
            free(n);
        }
    free(b);
}
