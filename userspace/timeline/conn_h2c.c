/* conn_h2c.c - h2c upgrade from HTTP/1.1 (RFC 7540 3.2) on one connection.
 *
 * A request with Upgrade: h2c (and HTTP2-Settings) is watched. The server
 * either answers it over HTTP/1.1 (the watch ends, nothing changes) or
 * with 101 Switching Protocols and Upgrade: h2c: then each direction
 * turns HTTP/2 at its own place (conn_h2.c, the parser in upgrade mode):
 * the server's just past the 101's head, the client's just past the
 * upgrade request (its body included). The request is stream 1: its
 * response comes as HTTP/2 HEADERS/DATA on stream 1.
 *
 * The HTTP/1.1 parsers are fed whole chunks, so bytes past a switch in
 * the same chunk are cut off here and fed to the HTTP/2 parser: the 101's
 * chunk may carry the server's SETTINGS and stream 1's frames. The
 * client's bytes after the upgrade request that come before the 101 (the
 * preface, in a capture whose order is not the wire's) are kept (bounded)
 * and replayed at the switch; the HTTP/1.1 request parser's complaint
 * about them (the preface is not HTTP/1.1) is not reported. */
#include <stdio.h>
#include <strings.h>

#include "timeline/conn_internal.h"

#define H2C_TAIL_MAX (64u << 10) /* client bytes kept while the answer is awaited */
#define H2C_SETTINGS_MAX 512u    /* HTTP2-Settings value kept */

struct conn_h2c {
    pending *req;               /* the request that asked */
    char settings[H2C_SETTINGS_MAX];
    size_t settings_len;
    bool req_ended;
    uint64_t req_end_off;       /* client stream offset just past it (parser offsets + http1_base) */
    bool switch_seen;           /* 101 with Upgrade: h2c, in the chunk being parsed */
    uint64_t s2c_off;           /* server stream offset just past the 101 */
    bool s2c_switched;          /* the server's direction is HTTP/2 now */
    struct held_chunk *tail;    /* client chunks kept until the answer */
    size_t n_tail, tail_cap, tail_bytes;
};

void tt_conn_h2c_release(conn_state *c)
{
    struct conn_h2c *u = c->h2c;
    if (!u) return;
    for (size_t i = 0; i < u->n_tail; i++) free(u->tail[i].data);
    free(u->tail);
    free(u);
    c->h2c = NULL;
}

void tt_conn_h2c_request_head(conn_state *c, pending *p, const tt_http_head *h)
{
    if (c->h2c) {
        /* another request after the one that asked: not an upgrade */
        tt_conn_h2c_release(c);
        return;
    }
    if (c->h2 || !tt_http_header_lists(tt_http_find_header(h, "upgrade"), "h2c")) return;
    struct conn_h2c *u = calloc(1, sizeof *u);
    if (!u) abort();
    u->req = p;
    const tt_http_header *s = tt_http_find_header(h, "http2-settings");
    if (s && s->value_len < sizeof u->settings) {
        memcpy(u->settings, s->value, s->value_len);
        u->settings_len = s->value_len;
    }
    c->h2c = u;
}

bool tt_conn_h2c_request_end(conn_state *c, pending *p, const tt_http_msg_end *end)
{
    struct conn_h2c *u = c->h2c;
    if (!u || p != u->req || u->req_ended) return false;
    u->req_ended = true;
    u->req_end_off = c->http1_base[TT_DIR_C2S] + end->last_off;
    return u->s2c_switched; /* stream 1 now: filed by the HTTP/2 side */
}

bool tt_conn_h2c_response_head(conn_state *c, pending *owner, const tt_http_head *h)
{
    struct conn_h2c *u = c->h2c;
    if (!u || h->interim || owner != u->req) return false;
    if (h->status != 101 || !tt_http_header_lists(tt_http_find_header(h, "upgrade"), "h2c")) {
        tt_conn_h2c_release(c); /* answered over HTTP/1.1 (or another upgrade): no switch */
        return false;
    }
    u->switch_seen = true;
    u->s2c_off = c->http1_base[TT_DIR_S2C] + h->head_end_off;
    return true;
}

bool tt_conn_h2c_quiet_error(const conn_state *c, tt_direction dir, tt_http_error code)
{
    const struct conn_h2c *u = c->h2c;
    if (!u || code != TT_HTTP_ERR_UNSUPPORTED) return false;
    return dir == TT_DIR_S2C ? u->switch_seen : u->req_ended;
}

/* The part of DATA chunk ch from stream offset off on (false: none). */
static bool chunk_from(const tt_chunk *ch, uint64_t off, tt_chunk *out)
{
    if (ch->kind != TT_CHUNK_DATA || ch->offset + ch->len <= off) return false;
    *out = *ch;
    if (off > ch->offset) {
        uint64_t k = off - ch->offset;
        out->data += k;
        out->len -= k;
        out->offset += k;
    }
    return true;
}

/* The client's direction turns HTTP/2 (the request ended at req_end_off):
 * the kept bytes, then what of c2s (the chunk that ended the request, or
 * NULL) follows the request, go to the HTTP/2 parser. conn: the
 * connection's current tt_conn_info. */
static void switch_c2s(conn_state *c, const tt_conn_info *conn, const tt_chunk *ch)
{
    struct conn_h2c *u = c->h2c;
    tt_conn_h2_upgrade_request_end(c);
    for (size_t i = 0; i < u->n_tail; i++) {
        tt_chunk t = u->tail[i].ch;
        t.conn = conn;
        t.data = u->tail[i].data;
        tt_chunk part;
        if (chunk_from(&t, u->req_end_off, &part)) tt_conn_h2_chunk(c, &part);
    }
    tt_chunk part;
    if (ch) {
        if (ch->kind != TT_CHUNK_DATA) tt_conn_h2_chunk(c, ch);
        else if (chunk_from(ch, u->req_end_off, &part)) tt_conn_h2_chunk(c, &part);
    }
    tt_conn_h2c_release(c);
}

static void keep_tail(conn_state *c, const tt_chunk *ch)
{
    struct conn_h2c *u = c->h2c;
    tt_chunk part;
    if (!chunk_from(ch, u->req_end_off, &part)) return;
    if (u->tail_bytes + part.len > H2C_TAIL_MAX) {
        tt_conn_h2c_release(c); /* not waiting for an answer: an HTTP/1.1 client */
        return;
    }
    u->tail = tt_conn_grow(u->tail, &u->tail_cap, u->n_tail + 1, sizeof *u->tail);
    struct held_chunk *t = &u->tail[u->n_tail++];
    t->ch = part;
    t->ch.conn = NULL;
    t->data = malloc(part.len);
    if (!t->data) abort();
    memcpy(t->data, part.data, part.len);
    t->ch.data = t->data;
    u->tail_bytes += part.len;
}

void tt_conn_h2c_chunk(conn_state *c, const tt_chunk *ch)
{
    struct conn_h2c *u = c->h2c;
    if (ch->dir == TT_DIR_S2C) {
        if (u->s2c_switched) {
            tt_conn_h2_chunk(c, ch);
            return;
        }
        tt_conn_dispatch_http1(c, ch);
        if (!c->h2c) return;
        if (!u->switch_seen) {
            if (ch->kind != TT_CHUNK_DATA) tt_conn_h2c_release(c); /* lost or ended before an answer */
            return;
        }
        tt_conn_h2_begin_upgrade(c, u->req, u->settings, u->settings_len, ch->mono_ns);
        u->s2c_switched = true;
        tt_chunk part;
        if (chunk_from(ch, u->s2c_off, &part)) tt_conn_h2_chunk(c, &part);
        if (u->req_ended) switch_c2s(c, ch->conn, NULL);
        return;
    }
    tt_conn_dispatch_http1(c, ch);
    if (!c->h2c || !u->req_ended) return;
    if (u->s2c_switched) {
        switch_c2s(c, ch->conn, ch); /* the rest of this chunk is the client's HTTP/2 */
        return;
    }
    if (ch->kind != TT_CHUNK_DATA) {
        tt_conn_h2c_release(c);
        return;
    }
    keep_tail(c, ch);
}
