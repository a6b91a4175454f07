/* chunk_conn.c - one socket connection's events -> tt_chunk (see chunk_conn.h). */
#include "source/chunk_conn.h"

#include <string.h>

void tt_chunk_sinks_route(tt_chunk_sinks *sinks, tt_vantage v, tt_chunk_fn fn, void *ctx)
{
    sinks->fn[v] = fn;
    sinks->ctx[v] = ctx;
}

uint64_t tt_chunk_sinks_next_conn_id(tt_chunk_sinks *sinks) { return ++sinks->conn_ids_given; }

void tt_chunk_endpoint_from(tt_endpoint *ep, const uint8_t addr[16], uint16_t port, bool ipv6)
{
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(ep, 0, sizeof *ep);
    ep->port = port;
    if (ipv6 && memcmp(addr, v4_mapped, sizeof v4_mapped) != 0) {
        ep->family = 6;
        memcpy(ep->addr, addr, 16);
    } else {
        ep->family = 4;
        memcpy(ep->addr, ipv6 ? addr + 12 : addr, 4);
    }
}

void tt_chunk_conn_orient(tt_chunk_conn *c, const tt_endpoint *local, const tt_endpoint *remote,
                          bool local_is_server, bool guessed)
{
    c->local_is_server = local_is_server;
    c->info.client = local_is_server ? *remote : *local;
    c->info.server = local_is_server ? *local : *remote;
    c->info.orientation_guessed = guessed;
}

tt_vantage tt_chunk_conn_vantage(const tt_chunk_conn *c)
{
    if (c->tls) return c->local_is_server ? TT_VANTAGE_SERVER_TLS : TT_VANTAGE_CLIENT_TLS;
    return c->local_is_server ? TT_VANTAGE_SERVER : TT_VANTAGE_CLIENT;
}

tt_direction tt_chunk_conn_send_dir(const tt_chunk_conn *c) { return c->local_is_server ? TT_DIR_S2C : TT_DIR_C2S; }

tt_direction tt_chunk_conn_recv_dir(const tt_chunk_conn *c) { return c->local_is_server ? TT_DIR_C2S : TT_DIR_S2C; }

void tt_chunk_conn_emit(tt_chunk_sinks *sinks, tt_chunk_conn *c, tt_direction dir, tt_chunk_kind kind,
                        uint64_t ns, const uint8_t *data, size_t len)
{
    tt_vantage v = tt_chunk_conn_vantage(c);
    if (kind == TT_CHUNK_GAP) {
        sinks->gaps++;
        sinks->gap_bytes += len;
        sinks->vantage_gaps[v]++;
        sinks->vantage_gap_bytes[v] += len;
    } else if (kind == TT_CHUNK_DATA) {
        sinks->data_bytes += len;
    }
    if (sinks->fn[v]) {
        tt_chunk ch = {
            .conn = &c->info,
            .vantage = v,
            .dir = dir,
            .kind = kind,
            .mono_ns = ns,
            .offset = c->offset[dir],
            .data = kind == TT_CHUNK_DATA ? data : NULL,
            .len = len,
        };
        sinks->fn[v](sinks->ctx[v], &ch);
    }
    if (kind == TT_CHUNK_DATA || kind == TT_CHUNK_GAP) c->offset[dir] += len;
}

void tt_chunk_conn_ready(tt_chunk_sinks *sinks, tt_chunk_conn *c, tt_direction dir, uint64_t ns, uint64_t from_off,
                         uint64_t end_off)
{
    sinks->ready_marks++;
    tt_chunk_conn_mark(sinks, c, dir, ns, from_off, end_off);
}

void tt_chunk_conn_mark(tt_chunk_sinks *sinks, tt_chunk_conn *c, tt_direction dir, uint64_t ns, uint64_t from_off,
                        uint64_t end_off)
{
    tt_vantage v = tt_chunk_conn_vantage(c);
    if (!sinks->fn[v] || end_off < from_off) return;
    tt_chunk ch = {
        .conn = &c->info,
        .vantage = v,
        .dir = dir,
        .kind = TT_CHUNK_READY,
        .mono_ns = ns,
        .offset = from_off,
        .len = (size_t)(end_off - from_off),
    };
    sinks->fn[v](sinks->ctx[v], &ch);
}

void tt_chunk_conn_fin(tt_chunk_sinks *sinks, tt_chunk_conn *c, tt_direction dir, uint64_t ns)
{
    if (c->ended[dir]) return;
    tt_chunk_conn_emit(sinks, c, dir, TT_CHUNK_FIN, ns, NULL, 0);
    c->ended[dir] = true;
}

void tt_chunk_conn_end(tt_chunk_sinks *sinks, tt_chunk_conn *c, uint64_t ns)
{
    for (int d = TT_DIR_C2S; d <= TT_DIR_S2C; d++)
        if (!c->ended[d]) tt_chunk_conn_emit(sinks, c, (tt_direction)d, TT_CHUNK_END, ns, NULL, 0);
    tt_chunk_conn_emit(sinks, c, TT_DIR_C2S, TT_CHUNK_RELEASE, ns, NULL, 0);
}
