/* conn_proto.c - which protocol a connection speaks, HTTP/1.1 or HTTP/2,
 * chosen on its first bytes; until then both directions' chunks are held
 * (an HTTP/2 server may send its SETTINGS before the client's preface is
 * seen) and then replayed, in their order, to the parser chosen.
 *
 * - From its start (a SYN seen): the client's 24-byte preface (possibly
 *   split across chunks) makes it HTTP/2 (conn_h2.c), anything else
 *   HTTP/1.1 (conn_http.c); an h2c upgrade turns HTTP/1.1 into HTTP/2
 *   later (conn_h2c.c).
 * - Joined mid-stream (no SYN, so the orientation was guessed, and no
 *   preface first; or bytes after an eviction): both directions are held
 *   while tt_http2_find_sync looks for a confirmed chain of frames in
 *   either, which makes it HTTP/2 joined mid-stream (the frames also say
 *   which end is the client: a wrong guess is swapped); an HTTP/1.1 start
 *   line makes it HTTP/1.1. */
#include <stdlib.h>
#include <string.h>

#include "proto/http2.h"
#include "timeline/conn_internal.h"

/* The bytes of the held chunks of direction dir (all when dir < 0), in order. */
uint8_t *tt_conn_held_concat(const struct held_chunk *q, size_t n, int dir, size_t *len)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (dir < 0 || q[i].ch.dir == (tt_direction)dir) total += q[i].ch.len;
    uint8_t *b = malloc(total ? total : 1);
    if (!b) abort();
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (dir >= 0 && q[i].ch.dir != (tt_direction)dir) continue;
        memcpy(b + at, q[i].data, q[i].ch.len);
        at += q[i].ch.len;
    }
    *len = total;
    return b;
}

static void held_free(conn_state *c)
{
    for (size_t i = 0; i < c->n_held; i++) free(c->held[i].data);
    free(c->held);
    c->held = NULL;
    c->n_held = c->held_cap = c->held_c2s_len = 0;
}

enum proto { P_HTTP1, P_HTTP2, P_HTTP2_MIDSTREAM };

/* Choose the protocol and replay the held chunks to it. conn is the
 * connection's current tt_conn_info (a held chunk's may be gone). */
static void decide(conn_state *c, enum proto proto, const tt_conn_info *conn)
{
    c->proto_decided = true;
    c->h2_mid_scan = false;
    if (proto != P_HTTP1) tt_conn_h2_open(c, proto == P_HTTP2_MIDSTREAM);
    size_t n = c->n_held;
    struct held_chunk *held = c->held;
    c->held = NULL;
    c->n_held = c->held_cap = c->held_c2s_len = 0;
    for (size_t i = 0; i < n; i++) {
        tt_chunk ch = held[i].ch;
        ch.conn = conn;
        ch.data = held[i].data;
        if (c->tunneled) { /* an HTTP/1.1 upgrade or CONNECT among them: the rest is not HTTP */
            free(held[i].data);
            continue;
        }
        if (c->h2) tt_conn_h2_chunk(c, &ch);
        else tt_conn_dispatch_http1(c, &ch);
        free(held[i].data);
    }
    free(held);
}

static void hold(conn_state *c, const tt_chunk *ch)
{
    c->held = tt_conn_grow(c->held, &c->held_cap, c->n_held + 1, sizeof *c->held);
    struct held_chunk *hc = &c->held[c->n_held++];
    hc->ch = *ch;
    hc->ch.conn = NULL;
    hc->data = malloc(ch->len ? ch->len : 1);
    if (!hc->data) abort();
    if (ch->len) memcpy(hc->data, ch->data, ch->len);
    if (ch->dir == TT_DIR_C2S) c->held_c2s_len += ch->len;
}

static size_t held_bytes(const conn_state *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_held; i++) n += c->held[i].ch.len;
    return n;
}

/* The source took the server for the client (no SYN: it guessed): swap
 * them; the held chunks and every later one change direction. */
static void flip_orientation(conn_state *c)
{
    c->flipped = true;
    tt_endpoint e = c->client;
    c->client = c->server;
    c->server = e;
    tt_ready_marks r = c->ready[0];
    c->ready[0] = c->ready[1];
    c->ready[1] = r;
    uint64_t pe = c->parsed_end[0];
    c->parsed_end[0] = c->parsed_end[1];
    c->parsed_end[1] = pe;
    c->held_c2s_len = 0;
    for (size_t i = 0; i < c->n_held; i++) {
        c->held[i].ch.dir = (tt_direction)(c->held[i].ch.dir ^ 1);
        if (c->held[i].ch.dir == TT_DIR_C2S) c->held_c2s_len += c->held[i].ch.len;
    }
    tt_conn_add_info(c, "HTTP/2 frames show the client and server the other way round from the guess: swapped");
}

/* An HTTP/1.1 start line (a request's method or "HTTP/1.") opens p[0..n). */
static bool http1_start(const uint8_t *p, size_t n)
{
    static const char *const starts[] = {"GET ", "POST ", "PUT ", "DELETE ", "HEAD ", "OPTIONS ", "PATCH ",
                                         "CONNECT ", "TRACE ", "HTTP/1."};
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        size_t m = strlen(starts[i]);
        if (n >= m && !memcmp(p, starts[i], m)) return true;
    }
    return false;
}

/* No SYN seen and no preface: hold both directions until either shows a
 * confirmed chain of HTTP/2 frames (HTTP/2 joined mid-stream), or an
 * HTTP/1.1 start line opens a direction (HTTP/1.1). Once frames are
 * found, holding goes on until they tell which end is the client
 * (tt_http2_guess_role) or HELD_MAX / 4 bytes are held. An end, lost
 * bytes or HELD_MAX held bytes decide at once: HTTP/2 if frames were
 * found, else HTTP/1.1. */
static bool sniff_midstream(conn_state *c, const tt_chunk *ch)
{
    if (ch->kind == TT_CHUNK_DATA && ch->dir == TT_DIR_C2S && ch->offset == 0 &&
        ch->len >= TT_HTTP2_PREFACE_LEN && !memcmp(ch->data, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN)) {
        decide(c, P_HTTP2, ch->conn); /* only the SYN was missed */
        return false;
    }
    if (ch->kind != TT_CHUNK_DATA || held_bytes(c) + ch->len > HELD_MAX) {
        decide(c, c->h2_mid_found ? P_HTTP2_MIDSTREAM : P_HTTP1, ch->conn);
        return false;
    }
    if (!ch->len) return false;
    hold(c, ch);
    int client_votes = 0; /* > 0: the guessed client is the client */
    for (int dir = 0; dir < 2; dir++) {
        size_t len;
        uint8_t *all = tt_conn_held_concat(c->held, c->n_held, dir, &len);
        if (!c->h2_mid_found && http1_start(all, len)) {
            free(all);
            decide(c, P_HTTP1, ch->conn);
            return true;
        }
        long at = len ? tt_http2_find_sync(all, len, (tt_direction)dir, &c->h2_mid_from[dir]) : -1;
        if (at >= 0) {
            c->h2_mid_found = true;
            int role = tt_http2_guess_role(all + at, len - (size_t)at);
            client_votes += dir == TT_DIR_C2S ? role : -role;
        }
        free(all);
    }
    if (c->h2_mid_found && (client_votes || held_bytes(c) >= HELD_MAX / 4)) {
        if (client_votes < 0 && ch->conn->orientation_guessed) flip_orientation(c); /* a SYN's word stands */
        decide(c, P_HTTP2_MIDSTREAM, ch->conn);
    }
    return true;
}

bool tt_conn_h2_sniff(conn_state *c, const tt_chunk *ch)
{
    if (c->h2_mid_scan) return sniff_midstream(c, ch);
    if (ch->conn->orientation_guessed && ch->kind == TT_CHUNK_DATA && ch->len && !c->n_held &&
        !(ch->dir == TT_DIR_C2S && ch->offset == 0 &&
          !memcmp(ch->data, TT_HTTP2_PREFACE, ch->len < TT_HTTP2_PREFACE_LEN ? ch->len : TT_HTTP2_PREFACE_LEN))) {
        /* its start not seen, and not the preface first */
        c->h2_mid_scan = true;
        return sniff_midstream(c, ch);
    }
    if (ch->kind != TT_CHUNK_DATA) {
        decide(c, P_HTTP1, ch->conn); /* lost bytes or an end before the preface */
        return false;
    }
    if (!ch->len) return false;
    if (ch->dir == TT_DIR_S2C) {
        /* an HTTP/2 server's first frame is a SETTINGS (length < 2^16: its
         * first byte 0); an HTTP/1.1 response never starts with 0 */
        if (ch->offset == 0 && ch->data[0] == 0 && held_bytes(c) + ch->len <= HELD_MAX) {
            hold(c, ch);
            return true;
        }
        if (c->n_held && ch->offset != 0 && held_bytes(c) + ch->len <= HELD_MAX) {
            bool s2c_held = false;
            for (size_t i = 0; i < c->n_held; i++) s2c_held |= c->held[i].ch.dir == TT_DIR_S2C;
            if (s2c_held) {
                hold(c, ch);
                return true;
            }
        }
        decide(c, P_HTTP1, ch->conn);
        return false;
    }
    size_t have = c->held_c2s_len;
    if (ch->offset != have) { /* not the connection's first client bytes */
        decide(c, P_HTTP1, ch->conn);
        return false;
    }
    size_t n = ch->len < TT_HTTP2_PREFACE_LEN - have ? ch->len : TT_HTTP2_PREFACE_LEN - have;
    if (memcmp(ch->data, &TT_HTTP2_PREFACE[have], n) != 0) {
        decide(c, P_HTTP1, ch->conn);
        return false;
    }
    if (have + n == TT_HTTP2_PREFACE_LEN) {
        decide(c, P_HTTP2, ch->conn);
        return false; /* the caller feeds this chunk to the HTTP/2 parser */
    }
    hold(c, ch);
    return true;
}

void tt_conn_proto_release(conn_state *c)
{
    if (c->n_held) {
        /* never decided: what was held is HTTP/2's when frames were found
         * in it, else HTTP/1.1's (the connection's own tt_conn_info is not
         * at hand: sequence numbers stay unknown) */
        static const tt_conn_info none;
        decide(c, c->h2_mid_found ? P_HTTP2_MIDSTREAM : P_HTTP1, &none);
    }
    held_free(c);
}
