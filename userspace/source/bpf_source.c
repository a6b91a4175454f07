/* bpf_source.c - socktap ring-buffer records -> tt_chunk (see bpf_source.h). */
#include "source/bpf_source.h"
#include "source/bpf_source_internal.h"
#include "source/bpf_setup.h"
#include "source/chunk_conn.h"
#include "source/tls_attach.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

#define TRACED_AT_START_MAX 4096 /* processes of the traced set attached to TLS libraries at start */
#define TLS_RELEASE_EVERY_NS 1000000000ull /* how often exited processes' TLS links are looked for */

#include "../../bpf/socktap.h"

/* The Makefile builds the skeleton and defines TT_WITH_BPF; a build without
 * it (the fuzz harnesses) gets a source whose start reports so. */
#ifdef TT_WITH_BPF
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "socktap.skel.h"
#else
struct socktap;
struct ring_buffer;
#endif

_Static_assert(sizeof(struct tt_socktap_event) % 8 == 0, "socktap event head must stay 8-byte aligned");

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

tt_bpf_source *tt_bpf_source_new(tt_chunk_fn on_server, void *server_ctx, tt_chunk_fn on_client,
                                 void *client_ctx)
{
    tt_bpf_source *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    tt_chunk_sinks_route(&s->sinks, TT_VANTAGE_SERVER, on_server, server_ctx);
    tt_chunk_sinks_route(&s->sinks, TT_VANTAGE_CLIENT, on_client, client_ctx);
    return s;
}

const struct tt_tls_attach *tt_bpf_source_tls(const tt_bpf_source *s)
{
    return s->skel ? &s->tls : NULL;
}

void tt_bpf_source_route_tls(tt_bpf_source *s, tt_chunk_fn on_server, void *server_ctx, tt_chunk_fn on_client,
                             void *client_ctx)
{
    tt_chunk_sinks_route(&s->sinks, TT_VANTAGE_SERVER_TLS, on_server, server_ctx);
    tt_chunk_sinks_route(&s->sinks, TT_VANTAGE_CLIENT_TLS, on_client, client_ctx);
}

static unsigned conn_bucket(uint32_t tgid, int32_t fd)
{
    uint64_t h = ((uint64_t)tgid << 32 | (uint32_t)fd) * 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> 40) % CONN_BUCKETS;
}

static unsigned sock_bucket(uint64_t sock_id)
{
    return (unsigned)((sock_id * 0x9E3779B97F4A7C15ull) >> 40) % CONN_BUCKETS;
}

/* The connection is over: END, RELEASE (chunk_conn.h), then freed. The
 * caller has unlinked it from buckets[]; it leaves sock_buckets[] here. */
void tt_bpf_conn_end(tt_bpf_source *s, bpf_conn *c, uint64_t ns)
{
    for (bpf_conn **pp = &s->sock_buckets[sock_bucket(c->sock_id)]; *pp; pp = &(*pp)->sock_next)
        if (*pp == c) {
            *pp = c->sock_next;
            break;
        }
    s->st.ready_unplaced += c->n_pending;
    if (c->tls) {
        tt_chunk_conn_end(&s->sinks, c->tls, ns > c->tls->last_ns ? ns : c->tls->last_ns);
        free(c->tls);
    }
    tt_chunk_conn_end(&s->sinks, &c->cc, ns);
    free(c);
}

/* ---- readable instants (the kernel's marks) ---- */

/* A mark put on the stream: its receive sequence numbers as stream offsets
 * of c's receive direction (recv_seq_known), delivered as TT_CHUNK_READY.
 * A mark that lands before the stream's start or far past the bytes read
 * (a record of an earlier socket at the same address) is dropped. */
static void ready_deliver(tt_bpf_source *s, bpf_conn *c, const ready_mark *m)
{
    /* a stream past 2^62 bytes (gaps its records claimed) gets no mark
     * either; the bound also keeps the arithmetic below from overflowing */
    if (c->recv_off_ref > (UINT64_MAX >> 2)) {
        s->st.ready_unplaced++;
        return;
    }
    int64_t end = (int64_t)c->recv_off_ref + (int32_t)(m->end_seq - c->recv_seq_ref);
    int64_t from = m->from_start ? 0 : end - (int64_t)m->len;
    if (from < 0 || end < from || (uint64_t)end > c->cc.offset[tt_chunk_conn_recv_dir(&c->cc)] + READY_MAX_AHEAD) {
        s->st.ready_unplaced++;
        return;
    }
    tt_chunk_conn_ready(&s->sinks, &c->cc, tt_chunk_conn_recv_dir(&c->cc), m->ns, (uint64_t)from, (uint64_t)end);
}

/* A mark of connection c: delivered when c's sequence numbers are
 * known, else held (the oldest dropped past the bound: the next mark then
 * does not meet the one before it, which says the bytes between are unknown). */
static void ready_take(tt_bpf_source *s, bpf_conn *c, const ready_mark *m)
{
    /* the kernel may send a mark twice (two readers of one socket take the
     * marks it holds): one that does not end past the last is a repeat */
    if (c->ready_seen && (int32_t)(m->end_seq - c->ready_last_end) <= 0) {
        s->st.ready_repeats++;
        return;
    }
    c->ready_seen = true;
    c->ready_last_end = m->end_seq;
    if (c->recv_seq_known) {
        ready_deliver(s, c, m);
        return;
    }
    if (c->n_pending == CONN_READY_PENDING) {
        memmove(c->pending, c->pending + 1, (CONN_READY_PENDING - 1) * sizeof *c->pending);
        c->n_pending--;
        s->st.ready_unplaced++;
    }
    c->pending[c->n_pending++] = *m;
}

/* A read told c's receive sequence numbers: data at stream offset off
 * starts at seq. Held marks go out first. */
static void ready_learn_seq(tt_bpf_source *s, bpf_conn *c, uint32_t seq, uint64_t off)
{
    c->recv_seq_known = true;
    c->recv_seq_ref = seq;
    c->recv_off_ref = off;
    for (uint32_t i = 0; i < c->n_pending; i++) ready_deliver(s, c, &c->pending[i]);
    c->n_pending = 0;
}

/* A new connection on a socket that already had marks (a request
 * that arrived before accept returned): they become its own, from the
 * socket's first mark on (an earlier first mark at that address was
 * another socket's). */
static void ready_adopt_orphans(tt_bpf_source *s, bpf_conn *c)
{
    uint32_t start = READY_ORPHANS, n = 0;
    for (uint32_t k = 0; k < READY_ORPHANS; k++) {
        uint32_t i = (s->orphan_next + k) % READY_ORPHANS; /* oldest first */
        ready_orphan *o = &s->orphans[i];
        if (!o->sock_id || o->sock_id != c->sock_id) continue;
        if (o->m.from_start) start = k;
        n++;
    }
    if (!n) return;
    for (uint32_t k = 0; k < READY_ORPHANS; k++) {
        uint32_t i = (s->orphan_next + k) % READY_ORPHANS;
        ready_orphan *o = &s->orphans[i];
        if (!o->sock_id || o->sock_id != c->sock_id) continue;
        if (start != READY_ORPHANS && k >= start) ready_take(s, c, &o->m);
        else s->st.ready_unplaced++;
        o->sock_id = 0;
    }
}

/* Whether ev's local and remote endpoints are c's. */
static bool conn_has_tuple(const bpf_conn *c, const struct tt_socktap_event *ev)
{
    bool v6 = (ev->flags & TT_SOCKTAP_F_IPV6) != 0;
    tt_endpoint local, remote;
    tt_chunk_endpoint_from(&local, ev->laddr, ev->lport, v6);
    tt_chunk_endpoint_from(&remote, ev->raddr, ev->rport, v6);
    const tt_endpoint *cl = c->cc.local_is_server ? &c->cc.info.server : &c->cc.info.client;
    const tt_endpoint *cr = c->cc.local_is_server ? &c->cc.info.client : &c->cc.info.server;
    return tt_endpoint_equal(&local, cl) && tt_endpoint_equal(&remote, cr);
}

/* A readable instant of ev's socket: placed on each connection that has
 * that socket (the same address and 4-tuple: a connection whose process
 * exited without close() stays known, and its sock's address may serve a
 * new socket since), else held as an orphan until one appears. */
static void feed_mark(tt_bpf_source *s, const struct tt_socktap_event *ev, const struct tt_socktap_mark *km)
{
    s->st.ready_records++;
    ready_mark m = {.ns = km->ns, .end_seq = km->end_seq, .len = km->len & ~TT_SOCKTAP_MARK_FROM_START,
                    .from_start = (km->len & TT_SOCKTAP_MARK_FROM_START) != 0};
    bool taken = false;
    for (bpf_conn *c = s->sock_buckets[sock_bucket(ev->sock_id)]; c; c = c->sock_next) {
        if (c->sock_id != ev->sock_id || !conn_has_tuple(c, ev)) continue;
        ready_take(s, c, &m);
        taken = true;
    }
    if (taken) return;
    ready_orphan *o = &s->orphans[s->orphan_next];
    if (o->sock_id) s->st.ready_unplaced++;
    o->sock_id = ev->sock_id;
    o->m = m;
    s->orphan_next = (s->orphan_next + 1) % READY_ORPHANS;
}

/* The marks a record carries (ev->marks of them at `at`, unaligned). */
static void feed_marks(tt_bpf_source *s, const struct tt_socktap_event *ev, const uint8_t *at)
{
    for (uint32_t i = 0; i < ev->marks; i++) {
        struct tt_socktap_mark km;
        memcpy(&km, at + (size_t)i * sizeof km, sizeof km);
        feed_mark(s, ev, &km);
    }
}

static void conn_orient(bpf_conn *c, const struct tt_socktap_event *ev, bool local_is_server, bool guessed)
{
    bool v6 = (ev->flags & TT_SOCKTAP_F_IPV6) != 0;
    tt_endpoint local, remote;
    tt_chunk_endpoint_from(&local, ev->laddr, ev->lport, v6);
    tt_chunk_endpoint_from(&remote, ev->raddr, ev->rport, v6);
    tt_chunk_conn_orient(&c->cc, &local, &remote, local_is_server, guessed);
}

/* The connection on (tgid, fd), unlinked from its bucket, or NULL. */
static bpf_conn *conn_unlink(tt_bpf_source *s, uint32_t tgid, int32_t fd)
{
    unsigned b = conn_bucket(tgid, fd);
    for (bpf_conn **pp = &s->buckets[b]; *pp; pp = &(*pp)->next) {
        bpf_conn *c = *pp;
        if (c->tgid != tgid || c->fd != fd) continue;
        *pp = c->next;
        return c;
    }
    return NULL;
}

/* The connection a record belongs to; a different sock behind the same
 * (tgid, fd) ends the old connection and starts a new one. A new
 * connection's orientation comes from a CONNECT or ACCEPT record when that
 * is what starts it, else it is guessed: the side that reads before it ever
 * writes answered a request, the server. */
bpf_conn *tt_bpf_conn_for(tt_bpf_source *s, const struct tt_socktap_event *ev)
{
    unsigned b = conn_bucket(ev->tgid, ev->fd);
    for (bpf_conn **pp = &s->buckets[b]; *pp; pp = &(*pp)->next) {
        bpf_conn *c = *pp;
        if (c->tgid != ev->tgid || c->fd != ev->fd) continue;
        if (c->sock_id == ev->sock_id) return c;
        *pp = c->next;
        tt_bpf_conn_end(s, c, ev->ts_ns);
        break;
    }
    bpf_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->tgid = ev->tgid;
    c->fd = ev->fd;
    c->sock_id = ev->sock_id;
    if (ev->kind == TT_SOCKTAP_KIND_CONNECT || ev->kind == TT_SOCKTAP_KIND_ACCEPT)
        conn_orient(c, ev, ev->kind == TT_SOCKTAP_KIND_ACCEPT, false);
    else
        conn_orient(c, ev, ev->dir == TT_SOCKTAP_DIR_RECV, true);
    c->cc.info.conn_id = tt_chunk_sinks_next_conn_id(&s->sinks);
    c->cc.info.first_seen_ns = ev->ts_ns;
    c->next = s->buckets[b];
    s->buckets[b] = c;
    unsigned sb = sock_bucket(c->sock_id);
    c->sock_next = s->sock_buckets[sb];
    s->sock_buckets[sb] = c;
    s->st.connections++;
    ready_adopt_orphans(s, c);
    return c;
}

/* A connection on ev's socket, for a record that names the socket rather
 * than an fd (a release: socktap_state.bpf.h): the one of ev's process
 * first, else any (a forked child may hold the last reference); NULL when
 * there is none. */
static bpf_conn *conn_of_sock(const tt_bpf_source *s, const struct tt_socktap_event *ev)
{
    bpf_conn *any = NULL;
    for (bpf_conn *c = s->sock_buckets[sock_bucket(ev->sock_id)]; c; c = c->sock_next) {
        if (c->sock_id != ev->sock_id) continue;
        if (c->tgid == ev->tgid) return c;
        if (!any) any = c;
    }
    return any;
}

/* c, unlinked, ends at ev's close: when it is ev's sock, the local end's
 * direction ends cleanly (close sends FIN), the other is cut off. */
static void close_conn(tt_bpf_source *s, bpf_conn *c, const struct tt_socktap_event *ev)
{
    uint64_t ns = ev->ts_ns > c->cc.last_ns ? ev->ts_ns : c->cc.last_ns;
    if (c->sock_id != ev->sock_id) {
        s->st.closes_other_sock++; /* stale: ended all the same */
    } else {
        tt_chunk_conn_fin(&s->sinks, &c->cc, tt_chunk_conn_send_dir(&c->cc), ns);
        /* the local end's plaintext ends with its socket */
        if (c->tls) tt_chunk_conn_fin(&s->sinks, c->tls, tt_chunk_conn_send_dir(c->tls), ns);
    }
    s->st.closes++;
    tt_bpf_conn_end(s, c, ns);
}

/* close(fd): the connection on fd ends. */
static void feed_close(tt_bpf_source *s, const struct tt_socktap_event *ev)
{
    bpf_conn *c = conn_unlink(s, ev->tgid, ev->fd);
    if (c) close_conn(s, c, ev);
}

/* The socket was released (TT_SOCKTAP_F_RELEASED): no process holds it any
 * more, so every connection on it ends, whichever process and fd it was
 * seen through. (Left open, one on an fd whose socket a forked child
 * released would take the next socket that reuses both the fd and the
 * socket's address as its own continuation.) */
static void feed_release(tt_bpf_source *s, const struct tt_socktap_event *ev)
{
    bpf_conn *c;
    while ((c = conn_of_sock(s, ev))) {
        bpf_conn *unlinked = conn_unlink(s, c->tgid, c->fd);
        if (unlinked != c) { /* never: one connection per (tgid, fd) */
            if (unlinked) close_conn(s, unlinked, ev);
            break;
        }
        close_conn(s, c, ev);
    }
}

/* A read returned end of file: the peer's direction ended cleanly. */
static void feed_eof(tt_bpf_source *s, const struct tt_socktap_event *ev)
{
    unsigned b = conn_bucket(ev->tgid, ev->fd);
    for (bpf_conn *c = s->buckets[b]; c; c = c->next) {
        if (c->tgid != ev->tgid || c->fd != ev->fd || c->sock_id != ev->sock_id) continue;
        uint64_t ns = ev->ts_ns > c->cc.last_ns ? ev->ts_ns : c->cc.last_ns;
        c->cc.last_ns = ns;
        tt_chunk_conn_fin(&s->sinks, &c->cc, tt_chunk_conn_recv_dir(&c->cc), ns);
        /* the plaintext cannot go on past the ciphertext's end */
        if (c->tls) tt_chunk_conn_fin(&s->sinks, c->tls, tt_chunk_conn_recv_dir(c->tls), ns);
        return;
    }
}

/* connect or accept: the role of the local end, known rather than guessed.
 * A connection that already carried bytes keeps its orientation. */
static int feed_role(tt_bpf_source *s, const struct tt_socktap_event *ev)
{
    bpf_conn *c = tt_bpf_conn_for(s, ev);
    if (!c) return -1;
    if (ev->kind == TT_SOCKTAP_KIND_CONNECT) s->st.connects++;
    else s->st.accepts++;
    if (c->cc.info.orientation_guessed && c->cc.offset[TT_DIR_C2S] == 0 && c->cc.offset[TT_DIR_S2C] == 0)
        conn_orient(c, ev, ev->kind == TT_SOCKTAP_KIND_ACCEPT, false);
    if (ev->ts_ns > c->cc.last_ns) c->cc.last_ns = ev->ts_ns;
    return 0;
}

uint32_t tt_bpf_wake_bytes(uint32_t ring_bytes, int n_cpus)
{
    uint64_t ring = ring_bytes ? ring_bytes : TT_BPF_DEFAULT_RING_BYTES;
    uint64_t each = ring / 4 < (256u << 10) ? ring / 4 : (256u << 10);
    uint64_t shared = ring / 2 / (uint64_t)(n_cpus > 1 ? n_cpus : 1);
    if (shared < each) each = shared;
    return each ? (uint32_t)each : 1;
}

int tt_bpf_source_feed(tt_bpf_source *s, const void *rec, size_t len)
{
    struct tt_socktap_event ev;
    if (len < sizeof ev) {
        s->st.bad_records++;
        return -1;
    }
    memcpy(&ev, rec, sizeof ev);
    const uint8_t *data = (const uint8_t *)rec + sizeof ev;
    /* the marks, after the data from its next 8-byte boundary */
    size_t marks_at = ev.marks ? ((size_t)ev.copied + 7) & ~(size_t)7 : ev.copied;
    if (ev.copied > len - sizeof ev || ev.marks > TT_SOCKTAP_MAX_MARKS ||
        marks_at + (size_t)ev.marks * sizeof(struct tt_socktap_mark) > len - sizeof ev ||
        (ev.marks && ev.kind != TT_SOCKTAP_KIND_DATA && ev.kind != TT_SOCKTAP_KIND_READY) ||
        (ev.marks && (ev.flags & TT_SOCKTAP_F_TLS)) ||
        ev.dir > TT_SOCKTAP_DIR_RECV || ev.kind >= TT_SOCKTAP_KIND_COUNT ||
        (uint64_t)ev.piece_off + ev.copied > ev.total_len ||
        ((ev.flags & TT_SOCKTAP_F_NOT_COPIED) && ev.copied) ||
        (ev.kind != TT_SOCKTAP_KIND_DATA && (ev.copied || (ev.lost_before && ev.kind != TT_SOCKTAP_KIND_TLS_PAIR))) ||
        ((ev.flags & TT_SOCKTAP_F_TLS_PENDING) && (ev.kind != TT_SOCKTAP_KIND_DATA || !(ev.flags & TT_SOCKTAP_F_TLS))) ||
        (ev.kind != TT_SOCKTAP_KIND_DATA && ev.kind != TT_SOCKTAP_KIND_READY && ev.total_len) ||
        (ev.kind == TT_SOCKTAP_KIND_READY && (ev.dir != TT_SOCKTAP_DIR_RECV || !ev.marks))) {
        s->st.bad_records++;
        return -1;
    }
    s->st.records++;
    if (ev.fd < 0 && ev.kind == TT_SOCKTAP_KIND_DATA && ev.sock_id && !(ev.flags & TT_SOCKTAP_F_TLS)) {
        /* bytes owed at a release outside close(): the socket names the
         * connection, and none means nothing of it was seen */
        bpf_conn *c = conn_of_sock(s, &ev);
        if (!c) return 0;
        ev.tgid = c->tgid;
        ev.fd = c->fd;
    }
    if (ev.kind == TT_SOCKTAP_KIND_READY) {
        feed_marks(s, &ev, data + marks_at);
        return 0;
    }
    if (ev.kind == TT_SOCKTAP_KIND_CLOSE) {
        if (ev.flags & TT_SOCKTAP_F_RELEASED) feed_release(s, &ev);
        else feed_close(s, &ev);
        return 0;
    }
    if (ev.kind == TT_SOCKTAP_KIND_EOF) {
        feed_eof(s, &ev);
        return 0;
    }
    if (ev.kind == TT_SOCKTAP_KIND_TLS_PAIR) return tt_bpf_tls_pair(s, &ev);
    if (ev.kind == TT_SOCKTAP_KIND_EXEC) {
        if (s->n_execs < EXEC_QUEUE) s->execs[s->n_execs++] = (struct exec_look){ev.tgid, 0, ev.ts_ns};
        else s->st.exec_queue_full++;
        return 0;
    }
    if (ev.kind != TT_SOCKTAP_KIND_DATA) return feed_role(s, &ev);
    if (ev.flags & TT_SOCKTAP_F_TLS_PENDING) return tt_bpf_tls_hold(s, &ev, data);
    if (ev.flags & TT_SOCKTAP_F_TLS) return tt_bpf_tls_feed(s, &ev, data);
    bpf_conn *c = tt_bpf_conn_for(s, &ev);
    if (!c) return -1;
    if (ev.marks) feed_marks(s, &ev, data + marks_at); /* the conn exists now: no orphans */
    if (ev.ts_ns > c->cc.last_ns) c->cc.last_ns = ev.ts_ns;
    tt_direction dir = ev.dir == TT_SOCKTAP_DIR_SEND ? tt_chunk_conn_send_dir(&c->cc) : tt_chunk_conn_recv_dir(&c->cc);
    if (ev.lost_before) {
        tt_chunk_conn_emit(&s->sinks, &c->cc, dir, TT_CHUNK_GAP, ev.ts_ns, NULL, ev.lost_before);
    }
    uint64_t missing = 0;
    if (ev.flags & TT_SOCKTAP_F_NOT_COPIED) {
        missing = (uint64_t)ev.total_len - ev.piece_off;
    } else if (ev.flags & TT_SOCKTAP_F_COPY_FAILED) {
        uint64_t rest = ev.total_len - ev.piece_off;
        missing = rest < TT_SOCKTAP_MAX_COPY ? rest : TT_SOCKTAP_MAX_COPY;
        if (ev.flags & TT_SOCKTAP_F_TRUNCATED) missing = rest;
    } else {
        if (ev.copied && (ev.flags & TT_SOCKTAP_F_SEQ) && !c->cc.info.seq_known[dir]) {
            c->cc.info.seq_known[dir] = true;
            c->cc.info.seq_base[dir] = ev.seq + ev.piece_off - (uint32_t)c->cc.offset[dir];
        }
        if (ev.copied && ev.dir == TT_SOCKTAP_DIR_RECV && (ev.flags & TT_SOCKTAP_F_SEQ))
            ready_learn_seq(s, c, ev.seq + ev.piece_off, c->cc.offset[dir]);
        if (ev.copied) {
            tt_chunk_conn_emit(&s->sinks, &c->cc, dir, TT_CHUNK_DATA, ev.ts_ns, data, ev.copied);
        }
        if (ev.flags & TT_SOCKTAP_F_TRUNCATED) missing = (uint64_t)ev.total_len - ev.piece_off - ev.copied;
    }
    if (missing) {
        tt_chunk_conn_emit(&s->sinks, &c->cc, dir, TT_CHUNK_GAP, ev.ts_ns, NULL, missing);
    }
    return 0;
}

void tt_bpf_source_finish(tt_bpf_source *s)
{
    tt_bpf_tls_drop_held(s); /* never paired */
    for (unsigned b = 0; b < CONN_BUCKETS; b++) {
        bpf_conn *c = s->buckets[b];
        s->buckets[b] = NULL;
        while (c) {
            bpf_conn *next = c->next;
            tt_bpf_conn_end(s, c, c->cc.last_ns);
            c = next;
        }
    }
}

const char *tt_bpf_ready_note(const tt_bpf_stats *st, char *buf, size_t cap)
{
    if (!st->ready_available)
        snprintf(buf, cap, "no ready instants: %s", st->ready_missing ? st->ready_missing : "eBPF not loaded");
    else
        snprintf(buf, cap, "%llu ready instants (%llu not placed, %llu sockets not followed)",
                 (unsigned long long)st->ready_marks, (unsigned long long)st->ready_unplaced,
                 (unsigned long long)st->ready_full);
    return buf;
}

/* out <- the source's counters with those of the chunks delivered. */
static void copy_stats(const tt_bpf_source *s, tt_bpf_stats *out)
{
    *out = s->st;
    out->tls_note = s->tls_note[0] ? s->tls_note : NULL;
    /* what userspace held and never saw paired is unpaired too (the kernel's own added when loaded) */
    out->tls_unpaired = s->st.tls_unpaired_held;
    out->tls_unpaired_bytes = s->st.tls_unpaired_held_bytes;
    out->data_bytes = s->sinks.data_bytes;
    out->ready_marks = s->sinks.ready_marks;
    out->gaps = s->sinks.gaps;
    out->gap_bytes = s->sinks.gap_bytes;
    memcpy(out->vantage_gaps, s->sinks.vantage_gaps, sizeof out->vantage_gaps);
    memcpy(out->vantage_gap_bytes, s->sinks.vantage_gap_bytes, sizeof out->vantage_gap_bytes);
    out->tls_links_held = tt_tls_links_held(&s->tls);
    out->tls_links_released = tt_tls_links_released(&s->tls);
    out->tls_processes_released = s->tls.processes_released;
}

#ifdef TT_WITH_BPF

static int on_record(void *ctx, void *data, size_t len)
{
    tt_bpf_source_feed(ctx, data, len);
    return 0;
}

/* The classic tracepoint programs of the eight data syscalls, which the
 * raw-tracepoint pair tt_raw_enter/tt_raw_exit replaces (socktap_raw.bpf.h).
 * Receives have an exit program only (on_exit_recv in socktap.bpf.c). */
static const char *const classic_data_progs[] = {
    "tt_enter_write",  "tt_exit_write",   "tt_exit_read",     "tt_enter_sendto", "tt_exit_sendto", "tt_exit_recvfrom",
    "tt_enter_writev", "tt_exit_writev",  "tt_exit_readv",    "tt_enter_sendmsg", "tt_exit_sendmsg", "tt_exit_recvmsg",
};

/* The classic write and sendto programs that the send stamp replaces, and
 * the stamp's own three (socktap_send.bpf.h). */
static const char *const classic_send_progs[] = {"tt_enter_write", "tt_exit_write", "tt_enter_sendto", "tt_exit_sendto"};
static const char *const stamped_send_progs[] = {"tt_send_stamp", "tt_exit_write_stamped", "tt_exit_sendto_stamped"};

/* The syscall programs that the socket layer's hooks replace
 * (socktap_sock.bpf.h): tt_sock_recv the exits of the four receives,
 * tt_sock_send (with the send stamp) the stamped write and sendto exits
 * and the enter and exit of writev and sendmsg. */
static const char *const recv_exit_progs[] = {"tt_exit_read", "tt_exit_recvfrom", "tt_exit_readv", "tt_exit_recvmsg"};
static const char *const hooked_send_progs[] = {"tt_exit_write_stamped", "tt_exit_sendto_stamped", "tt_enter_writev",
                                                "tt_exit_writev",        "tt_enter_sendmsg",       "tt_exit_sendmsg"};

/* The syscall programs that the socket's state changes and the socket
 * layer's hooks replace (socktap_state.bpf.h), and the three that do. */
static const char *const state_syscall_progs[] = {
    "tt_enter_connect", "tt_exit_connect",  "tt_enter_accept",   "tt_exit_accept",   "tt_enter_accept4", "tt_exit_accept4",
    "tt_enter_close",   "tt_exit_recvmmsg", "tt_enter_sendmmsg", "tt_exit_sendmmsg", "tt_enter_sendfile", "tt_exit_sendfile",
};
static const char *const state_hook_progs[] = {"tt_sock_state_task", "tt_sock_state_net", "tt_sock_destroy"};

static void set_autoload(struct bpf_object *obj, const char *const *names, size_t n, bool on)
{
    for (size_t i = 0; i < n; i++) {
        struct bpf_program *p = bpf_object__find_program_by_name(obj, names[i]);
        if (p) bpf_program__set_autoload(p, on);
    }
}

/* Picks how the data syscalls are traced, one of three program sets:
 * - the raw-tracepoint pair (TOKENTAP_BPF_RAW set and not "0", on a kernel
 *   with the sys_enter BTF type). Opt-in: measured on this project's 2-core
 *   VM it adds 242-263 ns to every syscall of every process that is not
 *   traced (bpf/README.md, "Raw syscall tracepoints");
 * - the classic programs, with write and sendto stamped in
 *   tcp_sendmsg_locked instead of at their enter (the default on a kernel
 *   with that tracepoint, unless TOKENTAP_NO_SEND_STAMP is set);
 * - the classic programs alone.
 * Unless the raw pair is picked, a kernel with the sock:sock_recv_length
 * and sock:sock_send_length tracepoints takes receives at those instead of
 * the syscall exits, and with the send stamp write, sendto, writev and
 * sendmsg too (socktap_sock.bpf.h), unless TOKENTAP_NO_SOCK_HOOKS is set.
 * With both, on a kernel with the sock:inet_sock_set_state and
 * tcp:tcp_destroy_sock tracepoints, connect, accept and close come from the
 * socket's state and recvmmsg, sendmmsg and sendfile are counted at the
 * hooks (socktap_state.bpf.h), unless TOKENTAP_NO_SOCK_STATE is set: no
 * syscall tracepoint is left, which every process's syscalls would pay for.
 * Sets st->raw_syscalls, st->send_stamped, st->sock_hooks and
 * st->sock_state to what was picked. */
static void tt_bpf_pick_data_attach(struct socktap *skel, tt_bpf_stats *st)
{
    struct bpf_object *obj = skel->obj;
    struct bpf_program *raw_enter = bpf_object__find_program_by_name(obj, "tt_raw_enter");
    struct bpf_program *raw_exit = bpf_object__find_program_by_name(obj, "tt_raw_exit");
    bool raw = raw_enter && raw_exit && tt_env_flag("TOKENTAP_BPF_RAW") &&
               tt_bpf_kernel_has_btf_typedef("btf_trace_sys_enter") && tt_bpf_kernel_has_btf_typedef("btf_trace_sys_exit");
    bool stamped = !raw && bpf_object__find_program_by_name(obj, "tt_send_stamp") &&
                   !tt_env_flag("TOKENTAP_NO_SEND_STAMP") && tt_bpf_kernel_has_btf_typedef("btf_trace_tcp_sendmsg_locked");
    if (raw_enter) bpf_program__set_autoload(raw_enter, raw);
    if (raw_exit) bpf_program__set_autoload(raw_exit, raw);
    set_autoload(obj, classic_data_progs, sizeof classic_data_progs / sizeof classic_data_progs[0], !raw);
    if (stamped) set_autoload(obj, classic_send_progs, sizeof classic_send_progs / sizeof classic_send_progs[0], false);
    set_autoload(obj, stamped_send_progs, sizeof stamped_send_progs / sizeof stamped_send_progs[0], stamped);
    struct bpf_program *sock_recv = bpf_object__find_program_by_name(obj, "tt_sock_recv");
    struct bpf_program *sock_send = bpf_object__find_program_by_name(obj, "tt_sock_send");
    bool sock = !raw && sock_recv && sock_send && !tt_env_flag("TOKENTAP_NO_SOCK_HOOKS") &&
                tt_bpf_kernel_has_btf_typedef("btf_trace_sock_recv_length") &&
                tt_bpf_kernel_has_btf_typedef("btf_trace_sock_send_length");
    if (sock) set_autoload(obj, recv_exit_progs, sizeof recv_exit_progs / sizeof recv_exit_progs[0], false);
    if (sock && stamped) set_autoload(obj, hooked_send_progs, sizeof hooked_send_progs / sizeof hooked_send_progs[0], false);
    if (sock_recv) bpf_program__set_autoload(sock_recv, sock);
    if (sock_send) bpf_program__set_autoload(sock_send, sock && stamped);
    skel->rodata->stamp_vec_sends = sock && stamped;
    bool state = sock && stamped && !tt_env_flag("TOKENTAP_NO_SOCK_STATE") &&
                 tt_bpf_kernel_has_btf_typedef("btf_trace_inet_sock_set_state") &&
                 tt_bpf_kernel_has_btf_typedef("btf_trace_tcp_destroy_sock");
    set_autoload(obj, state_syscall_progs, sizeof state_syscall_progs / sizeof state_syscall_progs[0], !state);
    set_autoload(obj, state_hook_progs, sizeof state_hook_progs / sizeof state_hook_progs[0], state);
    skel->rodata->sock_state = state;
    st->raw_syscalls = raw;
    st->send_stamped = stamped;
    st->sock_hooks = sock;
    st->sock_state = state;
}

int tt_bpf_source_start(tt_bpf_source *s, const tt_bpf_options *opt, char *err, size_t errlen)
{
    if (s->skel) {
        set_err(err, errlen, "the eBPF source is already started");
        return -1;
    }
    if (geteuid() != 0) {
        set_err(err, errlen, "eBPF tracing needs root (CAP_BPF, CAP_PERFMON); run as root");
        return -1;
    }
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
        set_err(err, errlen, "kernel BTF is missing (/sys/kernel/btf/vmlinux): CO-RE needs CONFIG_DEBUG_INFO_BTF=y");
        return -1;
    }
    if (tt_bpf_check_tracefs(err, errlen) < 0) return -1;
    bool by_tgid = opt && (opt->tgid || opt->n_tgids);
    uint64_t cg_id = 0;
    uint32_t cg_level = 0;
    if (opt && opt->cgroup && tt_bpf_cgroup_id_of(opt->cgroup, &cg_id, &cg_level, err, errlen) < 0) return -1;
    if (opt && opt->comm && (!opt->comm[0] || strlen(opt->comm) > 15)) {
        set_err(err, errlen, "--comm wants a process name of 1 to 15 bytes (the kernel's comm), got '%s'", opt->comm);
        return -1;
    }
    uint32_t ring = opt && opt->ring_bytes ? opt->ring_bytes : 0;
    if (ring && (ring < 4096 || (ring & (ring - 1)))) {
        set_err(err, errlen, "the ring-buffer size must be a power of two of at least 4096 bytes, got %u", ring);
        return -1;
    }
    libbpf_set_print(tt_bpf_quiet_libbpf);
    struct socktap *skel = socktap__open();
    if (!skel) {
        set_err(err, errlen, "cannot open the socktap BPF object: %s", strerror(errno));
        return -1;
    }
    skel->rodata->filter_tgids = by_tgid;
    skel->rodata->targ_port = opt ? opt->port : 0;
    skel->rodata->self_tgid = (uint32_t)getpid();
    skel->rodata->targ_cgroup_id = cg_id;
    skel->rodata->targ_cgroup_level = cg_level;
    if (opt && opt->comm) {
        skel->rodata->filter_comm = true;
        memcpy((char *)skel->rodata->targ_comm, opt->comm, strlen(opt->comm));
    }
    if (ring) bpf_map__set_max_entries(skel->maps.events, ring);
    int n_cpus = libbpf_num_possible_cpus();
    if (n_cpus < 1) n_cpus = 1;
    s->unwoken_zeros = calloc((size_t)n_cpus, sizeof *s->unwoken_zeros);
    if (!s->unwoken_zeros) {
        set_err(err, errlen, "out of memory");
        socktap__destroy(skel);
        return -1;
    }
    skel->rodata->wake_bytes = tt_bpf_wake_bytes(ring, n_cpus);
    /* Readable instants need the sock:sk_data_ready tracepoint (Linux 6.3
     * and later); without it everything else still works. */
    s->st.ready_missing = tt_bpf_kernel_has_btf_typedef("btf_trace_sk_data_ready")
                              ? NULL
                              : "the kernel has no sock:sk_data_ready tracepoint (Linux 6.3 or later)";
    if (tt_env_flag("TOKENTAP_NO_READY")) s->st.ready_missing = "TOKENTAP_NO_READY is set";
    s->st.ready_available = s->st.ready_missing == NULL;
    skel->rodata->ready_wanted = s->st.ready_available;
    /* held for the socket's next DATA record unless asked otherwise (a
     * READY record per instant: the comparison in bpf/README.md) */
    skel->rodata->ready_held = !tt_env_flag("TOKENTAP_READY_RECORDS");
    /* TLS plaintext only for a caller that takes it (tt_bpf_source_route_tls):
     * uprobes cost the processes they sit in */
    bool tls_wanted = tt_bpf_source_takes_tls(s) && !tt_env_flag("TOKENTAP_NO_TLS");
    skel->rodata->tls_wanted = tls_wanted;
    if (!s->st.ready_available) bpf_program__set_autoload(skel->progs.tt_sk_data_ready, false);
    tt_bpf_pick_data_attach(skel, &s->st);
    int rc = socktap__load(skel);
    if (rc) {
        set_err(err, errlen, "loading the socktap BPF programs failed: %s (TOKENTAP_BPF_DEBUG=1 shows the verifier log)",
                strerror(-rc));
        socktap__destroy(skel);
        return -1;
    }
    if (s->st.ready_available && opt && opt->port && skel->bss) {
        /* --port: connections accepted on it are followed from their first
         * byte, the first one included */
        skel->bss->ready_port_on[opt->port] = 1;
    }
    /* --port: a socket accepted on it says ACCEPT (socktap_state.bpf.h) */
    if (opt && opt->port && skel->bss) skel->bss->accept_port_on[opt->port] = 1;
    /* Attach first, then seed: a fork between the /proc walk and the
     * attach would otherwise be missed. */
    rc = socktap__attach(skel);
    if (rc) {
        set_err(err, errlen, "attaching to the syscall tracepoints failed: %s", strerror(-rc));
        socktap__destroy(skel);
        return -1;
    }
    if (by_tgid) {
        int seeded = tt_bpf_seed_traced_tgids(skel, opt, err, errlen);
        if (seeded < 0) {
            socktap__destroy(skel);
            return -1;
        }
        s->st.tgids_at_start = (uint64_t)seeded;
    } else {
        /* every filter set must match: the ports of either filter's
         * processes are a superset of what is needed (a port marked for
         * nothing traced only costs its accepted sockets a mark) */
        if (opt && opt->comm) tt_bpf_seed_comm_ports(skel, opt->comm);
        if (opt && opt->cgroup) tt_bpf_seed_cgroup_ports(skel, opt->cgroup);
    }
    /* TLS plaintext: uprobes on the libraries of the traced processes (all
     * of them without a process filter) and the system's */
    if (!tls_wanted) {
        if (tt_bpf_source_takes_tls(s))
            snprintf(s->tls_note, sizeof s->tls_note, "no TLS library attached: TOKENTAP_NO_TLS is set");
    } else {
        /* with --pid: every process of the traced set, the descendants alive
         * at start too (a server's workers), read back from the kernel's map */
        uint32_t *pids = by_tgid ? malloc(TRACED_AT_START_MAX * sizeof *pids) : NULL;
        size_t n_pids = 0;
        if (pids) {
            int map = bpf_map__fd(skel->maps.traced_tgids);
            uint32_t key, next;
            for (void *prev = NULL; n_pids < TRACED_AT_START_MAX && bpf_map_get_next_key(map, prev, &next) == 0;
                 prev = &key) {
                key = next;
                pids[n_pids++] = next;
            }
        }
        int attached = by_tgid && !pids ? -1 : tt_tls_attach_libraries(skel, pids, n_pids, opt ? opt->comm : NULL, &s->tls);
        free(pids);
        if (attached < 0) {
            set_err(err, errlen, "out of memory attaching to the TLS libraries");
            tt_tls_attach_free(&s->tls);
            socktap__destroy(skel);
            return -1;
        }
        tt_tls_attach_note(&s->tls, s->tls_note, sizeof s->tls_note);
    }
    s->st.tls_libraries = s->tls.attached;
    s->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, s, NULL);
    if (!s->rb) {
        set_err(err, errlen, "cannot set up the ring buffer: %s", strerror(errno));
        tt_tls_attach_free(&s->tls);
        socktap__destroy(skel);
        return -1;
    }
    s->skel = skel;
    return 0;
}

int tt_bpf_source_poll(tt_bpf_source *s, int timeout_ms, char *err, size_t errlen)
{
    if (!s->rb) {
        set_err(err, errlen, "the eBPF source is not started");
        return -1;
    }
    /* The kernel mostly does not wake this poll (bpf/README.md): whatever
     * the wait returns, everything waiting is consumed after it. */
    int n = ring_buffer__poll(s->rb, timeout_ms);
    if (n == -EINTR) n = 0;
    if (n < 0) {
        set_err(err, errlen, "polling the ring buffer failed: %s", strerror(-n));
        return -1;
    }
    int more = ring_buffer__consume(s->rb);
    if (more < 0) {
        set_err(err, errlen, "reading the ring buffer failed: %s", strerror(-more));
        return -1;
    }
    if (n > 0 || more > 0) {
        /* drained: each CPU's count of unread bytes starts again (a record
         * committed meanwhile is forgotten: its CPU wakes the poller later) */
        uint32_t zero = 0;
        bpf_map_update_elem(bpf_map__fd(s->skel->maps.unwoken_bytes), &zero, s->unwoken_zeros, BPF_ANY);
    }
    tt_bpf_look_at_execs(s);
    /* the processes attached one by one (--pid) that exited: their uprobes
     * let go, once a second (one poll() over their pidfds) */
    if (s->tls.n_procs) {
        uint64_t now = tt_clock_ns(CLOCK_MONOTONIC);
        if (now >= s->tls_release_ns) {
            s->tls_release_ns = now + TLS_RELEASE_EVERY_NS;
            tt_tls_release_exited(&s->tls);
        }
    }
    return n > INT_MAX - more ? INT_MAX : n + more;
}

void tt_bpf_source_stats(const tt_bpf_source *s, tt_bpf_stats *out)
{
    copy_stats(s, out);
    if (!s->skel) return;
    int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return;
    uint64_t *vals = calloc((size_t)ncpu, sizeof *vals);
    if (!vals) return;
    uint64_t sums[TT_SOCKTAP_STAT_COUNT] = {0};
    int fd = bpf_map__fd(s->skel->maps.stats);
    for (uint32_t k = 0; k < TT_SOCKTAP_STAT_COUNT; k++) {
        if (bpf_map_lookup_elem(fd, &k, vals) != 0) continue;
        for (int c = 0; c < ncpu; c++) sums[k] += vals[c];
    }
    free(vals);
    out->kernel_events = sums[TT_SOCKTAP_STAT_EVENTS];
    out->rb_fail = sums[TT_SOCKTAP_STAT_RB_FAIL];
    out->rb_fail_bytes = sums[TT_SOCKTAP_STAT_RB_FAIL_BYTES];
    out->truncated = sums[TT_SOCKTAP_STAT_TRUNCATED];
    out->truncated_bytes = sums[TT_SOCKTAP_STAT_TRUNCATED_BYTES];
    out->args_full = sums[TT_SOCKTAP_STAT_ARGS_FULL];
    out->not_copied = sums[TT_SOCKTAP_STAT_NOT_COPIED];
    out->not_copied_bytes = sums[TT_SOCKTAP_STAT_NOT_COPIED_BYTES];
    out->children = sums[TT_SOCKTAP_STAT_CHILDREN];
    out->tgids_full = sums[TT_SOCKTAP_STAT_TGIDS_FULL];
    out->kernel_ready = sums[TT_SOCKTAP_STAT_READY];
    out->ready_full = sums[TT_SOCKTAP_STAT_READY_FULL];
    out->kernel_tls_calls = sums[TT_SOCKTAP_STAT_TLS_CALLS];
    out->tls_unpaired += sums[TT_SOCKTAP_STAT_TLS_UNPAIRED];
    out->tls_unpaired_bytes += sums[TT_SOCKTAP_STAT_TLS_UNPAIRED_BYTES];
    out->kernel_tls_by_last_read = sums[TT_SOCKTAP_STAT_TLS_BY_LAST_READ];
    out->kernel_tls_pending = sums[TT_SOCKTAP_STAT_TLS_PENDING];
}

#else

int tt_bpf_source_start(tt_bpf_source *s, const tt_bpf_options *opt, char *err, size_t errlen)
{
    set_err(err, errlen, "this tokentap was built without eBPF support");
    return -1;
}

int tt_bpf_source_poll(tt_bpf_source *s, int timeout_ms, char *err, size_t errlen)
{
    set_err(err, errlen, "this tokentap was built without eBPF support");
    return -1;
}

void tt_bpf_source_stats(const tt_bpf_source *s, tt_bpf_stats *out) { copy_stats(s, out); }

#endif

void tt_bpf_source_free(tt_bpf_source *s)
{
    if (!s) return;
    tt_bpf_source_finish(s);
#ifdef TT_WITH_BPF
    ring_buffer__free(s->rb);
    free(s->unwoken_zeros);
    tt_tls_attach_free(&s->tls);
    socktap__destroy(s->skel);
#endif
    free(s);
}
