/* bpf_tls_stream.c - the TLS plaintext records of the eBPF source
 * (TT_SOCKTAP_F_TLS, bpf/socktap_tls.bpf.h): a stream per connection at the
 * TLS vantage, the pending writes of memory-BIO libraries held until their
 * thread's TLS_PAIR, and the TLS libraries of processes that start later.
 * Part of bpf_source.c's source (bpf_source_internal.h). */
#include "source/bpf_source_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "source/tls_attach.h"

/* The TLS plaintext stream of c, made on its first record: the same
 * endpoints and orientation, its own conn_id and offsets. NULL when out of
 * memory. */
static tt_chunk_conn *tls_stream(tt_bpf_source *s, bpf_conn *c, uint64_t ns)
{
    if (c->tls) return c->tls;
    tt_chunk_conn *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    *t = c->cc;
    memset(t->offset, 0, sizeof t->offset);
    memset(t->ended, 0, sizeof t->ended);
    memset(t->info.seq_known, 0, sizeof t->info.seq_known); /* plaintext has no TCP sequence numbers */
    t->tls = true;
    t->info.conn_id = tt_chunk_sinks_next_conn_id(&s->sinks);
    t->info.first_seen_ns = ns;
    t->last_ns = ns;
    c->tls = t;
    s->st.tls_connections++;
    return t;
}

/* A TT_SOCKTAP_F_TLS record: plaintext of the connection's TLS stream, as
 * DATA (and GAP for what was lost or not copied) at the TLS vantage. */
int tt_bpf_tls_feed(tt_bpf_source *s, const struct tt_socktap_event *ev, const uint8_t *data)
{
    bpf_conn *c = tt_bpf_conn_for(s, ev);
    tt_chunk_conn *t = c ? tls_stream(s, c, ev->ts_ns) : NULL;
    if (!t) return -1;
    s->st.tls_records++;

    if (ev->ts_ns > t->last_ns) t->last_ns = ev->ts_ns;
    tt_direction dir = ev->dir == TT_SOCKTAP_DIR_SEND ? tt_chunk_conn_send_dir(t) : tt_chunk_conn_recv_dir(t);
    if (t->ended[dir]) return 0;
    if (ev->lost_before) tt_chunk_conn_emit(&s->sinks, t, dir, TT_CHUNK_GAP, ev->ts_ns, NULL, ev->lost_before);
    if (ev->copied) {
        uint64_t from = t->offset[dir];
        tt_chunk_conn_emit(&s->sinks, t, dir, TT_CHUNK_DATA, ev->ts_ns, data, ev->copied);
        /* when its ciphertext crossed the socket: a mark on the bytes just
         * given (after them, so that a recording places it) */
        if (ev->socket_ns) {
            tt_chunk_conn_mark(&s->sinks, t, dir, ev->socket_ns, from, t->offset[dir]);
            s->st.tls_socket_instants++;
        }
    }
    uint64_t missing = 0;
    if (ev->flags & (TT_SOCKTAP_F_TRUNCATED | TT_SOCKTAP_F_COPY_FAILED))
        missing = (uint64_t)ev->total_len - ev->piece_off - ev->copied;
    if (missing) tt_chunk_conn_emit(&s->sinks, t, dir, TT_CHUNK_GAP, ev->ts_ns, NULL, missing);
    return 0;
}

/* The oldest held record leaves unpaired. */
static void pending_drop_oldest(tt_bpf_source *s)
{
    s->st.tls_unpaired_held++;
    s->st.tls_unpaired_held_bytes += s->pending[0].ev.total_len - s->pending[0].ev.piece_off;
    free(s->pending[0].data);
    memmove(&s->pending[0], &s->pending[1], (s->n_pending - 1) * sizeof s->pending[0]);
    s->n_pending--;
}

/* A plaintext record whose socket its thread's next TLS_PAIR names: held. */
int tt_bpf_tls_hold(tt_bpf_source *s, const struct tt_socktap_event *ev, const uint8_t *data)
{
    if (s->n_pending == TLS_PENDING_MAX) pending_drop_oldest(s);
    tls_pending *p = &s->pending[s->n_pending];
    p->ev = *ev;
    p->data = ev->copied ? malloc(ev->copied) : NULL;
    if (ev->copied && !p->data) return -1;
    if (ev->copied) memcpy(p->data, data, ev->copied);
    s->n_pending++;
    return 0;
}

/* TLS_PAIR: the held records of its thread belong to its socket, in the
 * order they came; the pending bytes the ring buffer refused before them
 * are a gap. */
int tt_bpf_tls_pair(tt_bpf_source *s, const struct tt_socktap_event *ev)
{
    bpf_conn *c = tt_bpf_conn_for(s, ev);
    if (!c) return -1;
    tt_chunk_conn *t = tls_stream(s, c, ev->ts_ns);
    if (!t) return -1;
    if (ev->lost_before && !t->ended[tt_chunk_conn_send_dir(t)])
        tt_chunk_conn_emit(&s->sinks, t, tt_chunk_conn_send_dir(t), TT_CHUNK_GAP, ev->ts_ns, NULL, ev->lost_before);
    size_t kept = 0;
    int rc = 0;
    for (size_t i = 0; i < s->n_pending; i++) {
        tls_pending *p = &s->pending[i];
        if (p->ev.tid != ev->tid) {
            s->pending[kept++] = *p;
            continue;
        }
        struct tt_socktap_event paired = p->ev;
        paired.sock_id = ev->sock_id;
        paired.fd = ev->fd;
        paired.family = ev->family;
        paired.lport = ev->lport;
        paired.rport = ev->rport;
        memcpy(paired.laddr, ev->laddr, sizeof paired.laddr);
        memcpy(paired.raddr, ev->raddr, sizeof paired.raddr);
        paired.flags = (uint8_t)((paired.flags & ~TT_SOCKTAP_F_TLS_PENDING) | (ev->flags & TT_SOCKTAP_F_IPV6));
        paired.socket_ns = ev->ts_ns; /* the socket write that paired it carried its ciphertext */
        if (rc == 0) rc = tt_bpf_tls_feed(s, &paired, p->data);
        free(p->data);
    }
    s->n_pending = kept;
    return rc;
}

/* Every held record leaves unpaired (the source ends). */
void tt_bpf_tls_drop_held(tt_bpf_source *s)
{
    while (s->n_pending) pending_drop_oldest(s);
}

#ifdef TT_WITH_BPF
/* The processes that exec'd whose look is due: their TLS libraries
 * attached; each looked at three times (0, 0.1 s, 1 s after its exec). */
void tt_bpf_look_at_execs(tt_bpf_source *s)
{
    if (!s->n_execs || !s->tls_note[0] || !tt_bpf_source_takes_tls(s) || tt_env_flag("TOKENTAP_NO_TLS")) {
        s->n_execs = 0;
        return;
    }
    static const uint64_t after_ns[] = {0, 100000000ull, 1000000000ull};
    uint64_t now = tt_clock_ns(CLOCK_MONOTONIC);
    size_t kept = 0;
    bool any = false;
    for (size_t i = 0; i < s->n_execs; i++) {
        struct exec_look e = s->execs[i];
        if (e.due_ns + after_ns[e.looks] <= now) {
            if (tt_tls_attach_process(s->skel, &s->tls, e.pid) > 0) any = true;
            e.looks++;
        }
        if (e.looks < sizeof after_ns / sizeof *after_ns) s->execs[kept++] = e;
    }
    s->n_execs = kept;
    if (any) tt_tls_attach_note(&s->tls, s->tls_note, sizeof s->tls_note);
    s->st.tls_libraries = s->tls.attached;
}

#endif
