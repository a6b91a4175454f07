/* ready_bridge.c - ready instants onto another source's connections (ready_bridge.h). */
#include "source/ready_bridge.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define BRIDGE_BUCKETS 1024u

typedef struct bridge_conn {
    struct bridge_conn *next;
    const tt_conn_info *info; /* the target's, valid until its RELEASE */
} bridge_conn;

struct tt_ready_bridge {
    tt_chunk_fn fn;
    void *ctx;
    bridge_conn *buckets[BRIDGE_BUCKETS];
    uint64_t forwarded, dropped;
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
}

void tt_ready_bridge_chunk(void *ctx, const tt_chunk *c)
{
    tt_ready_bridge *b = ctx;
    if (c->kind != TT_CHUNK_READY) return;
    /* The newest connection on the 4-tuple first: a reused tuple's old
     * connection is released before the new one's first chunk. */
    for (bridge_conn *n = b->buckets[bucket_of(c->conn)]; n; n = n->next) {
        if (!tt_endpoint_equal(&n->info->client, &c->conn->client) || !tt_endpoint_equal(&n->info->server, &c->conn->server))
            continue;
        tt_chunk fwd = *c;
        fwd.conn = n->info;
        b->forwarded++;
        b->fn(b->ctx, &fwd);
        return;
    }
    b->dropped++;
}

void tt_ready_bridge_counts(const tt_ready_bridge *b, uint64_t *forwarded, uint64_t *dropped)
{
    *forwarded = b ? b->forwarded : 0;
    *dropped = b ? b->dropped : 0;
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
