/* bpf_source.c - socktap ring-buffer records -> tt_chunk (see bpf_source.h):
 * the connections the records name, their readable instants, their ends.
 * Loading the programs and polling the ring: bpf_load.c. */
#include "source/bpf_source.h"
#include "source/bpf_source_internal.h"
#include "source/bpf_setup.h"
#include "source/chunk_conn.h"
#include "source/tls_attach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

#include "../../bpf/socktap.h"

_Static_assert(sizeof(struct tt_socktap_event) % 8 == 0, "socktap event head must stay 8-byte aligned");

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
void tt_bpf_copy_stats(const tt_bpf_source *s, tt_bpf_stats *out)
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

