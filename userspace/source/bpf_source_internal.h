/* bpf_source_internal.h - what bpf_source.c and bpf_tls_stream.c share:
 * the source's state and its connections. Not for other files. */
#ifndef TT_BPF_SOURCE_INTERNAL_H
#define TT_BPF_SOURCE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../../bpf/socktap.h"
#include "source/bpf_source.h"
#include "source/chunk_conn.h"
#include "source/tls_attach.h"

struct socktap;
struct ring_buffer;

#define CONN_BUCKETS 1024u
#define TT_BPF_DEFAULT_RING_BYTES (16u << 20) /* the events map's size in bpf/socktap.bpf.c */

#define CONN_READY_PENDING 32  /* the kernel's marks held per connection until its sequence numbers are known */
#define READY_ORPHANS 256      /* marks of sockets not yet seen in a syscall (accept to come) */
#define READY_MAX_AHEAD (64u << 20) /* a mark further than this past the bytes read is not believed */
#define TLS_PENDING_MAX 64     /* TLS plaintext records held for their thread's TLS_PAIR (all threads) */
#define EXEC_QUEUE 64          /* processes that exec'd, to look at for TLS libraries */

/* A mark as the kernel gave it (struct tt_socktap_mark): receive sequence numbers. */
typedef struct ready_mark {
    uint64_t ns;
    uint32_t end_seq, len;
    bool from_start;
} ready_mark;

typedef struct bpf_conn {
    tt_chunk_conn cc; /* last_ns: the latest record instant */
    uint64_t sock_id;
    uint32_t tgid;
    int32_t fd;
    struct bpf_conn *next;      /* in buckets[], by (tgid, fd) */
    struct bpf_conn *sock_next; /* in sock_buckets[], by sock_id */
    /* The receive direction's sequence numbers: recv_seq_ref is the TCP
     * sequence number of stream offset recv_off_ref (from the last read). */
    bool recv_seq_known;
    uint32_t recv_seq_ref;
    uint64_t recv_off_ref;
    ready_mark pending[CONN_READY_PENDING]; /* marks before recv_seq_known */
    uint32_t n_pending;
    bool ready_seen;          /* a mark was taken: ready_last_end is its end */
    uint32_t ready_last_end;
    /* The TLS plaintext of the connection (TT_SOCKTAP_F_TLS records), a
     * stream of its own for the TLS vantage; NULL until the first. */
    tt_chunk_conn *tls;
} bpf_conn;

/* A TLS plaintext record held until its thread's TLS_PAIR record names its
 * socket (TT_SOCKTAP_F_TLS_PENDING). */
typedef struct tls_pending {
    struct tt_socktap_event ev;
    uint8_t *data; /* ev.copied bytes, owned */
} tls_pending;

typedef struct ready_orphan {
    uint64_t sock_id;
    ready_mark m;
} ready_orphan;

struct tt_bpf_source {
    tt_chunk_sinks sinks;
    bpf_conn *buckets[CONN_BUCKETS];
    bpf_conn *sock_buckets[CONN_BUCKETS];
    ready_orphan orphans[READY_ORPHANS]; /* a ring: the oldest is overwritten */
    uint32_t orphan_next;
    tt_bpf_stats st;
    struct socktap *skel;
    struct ring_buffer *rb;
    uint64_t *unwoken_zeros; /* one zero per possible CPU: written to unwoken_bytes after each drain */
    tt_tls_attach tls;     /* the uprobes on TLS libraries */
    tls_pending pending[TLS_PENDING_MAX]; /* in arrival order; the oldest is dropped (unpaired) */
    size_t n_pending;
    /* Processes that started a new program: looked at for TLS libraries at
     * once, again 0.1 s and 1 s later (the loader maps them after exec) */
    struct exec_look { uint32_t pid; uint8_t looks; uint64_t due_ns; } execs[EXEC_QUEUE];
    size_t n_execs;
    uint64_t tls_release_ns; /* CLOCK_MONOTONIC: when exited processes' TLS links are next looked for */
    char tls_note[1024];   /* tt_tls_attach_note, for st.tls_note */
};

/* The connection a record belongs to (made on first sight; a different
 * sock behind the same (tgid, fd) ends the old one). NULL when out of memory. */
bpf_conn *tt_bpf_conn_for(tt_bpf_source *s, const struct tt_socktap_event *ev);

/* The connection is over: END and RELEASE of its streams, then freed. The
 * caller has unlinked it from buckets[]. */
void tt_bpf_conn_end(tt_bpf_source *s, bpf_conn *c, uint64_t ns);

/* A TT_SOCKTAP_F_TLS record of a known socket: its plaintext on the
 * connection's TLS stream (DATA, GAP for what was lost or not copied). */
int tt_bpf_tls_feed(tt_bpf_source *s, const struct tt_socktap_event *ev, const uint8_t *data);

/* A pending plaintext record (F_TLS_PENDING): held for its thread's TLS_PAIR. */
int tt_bpf_tls_hold(tt_bpf_source *s, const struct tt_socktap_event *ev, const uint8_t *data);

/* TLS_PAIR: the held records of its thread go to its socket, in order. */
int tt_bpf_tls_pair(tt_bpf_source *s, const struct tt_socktap_event *ev);

/* Whether a caller takes TLS plaintext (at either end). */
static inline bool tt_bpf_source_takes_tls(const tt_bpf_source *s)
{
    return s->sinks.fn[TT_VANTAGE_SERVER_TLS] || s->sinks.fn[TT_VANTAGE_CLIENT_TLS];
}

/* The source ends: records still held count unpaired. */
void tt_bpf_tls_drop_held(tt_bpf_source *s);

#ifdef TT_WITH_BPF
/* The processes that exec'd or forked whose look is due: their TLS
 * libraries attached (tls_attach.h). */
void tt_bpf_look_at_execs(tt_bpf_source *s);
#endif

/* out <- the source's counters with those of the chunks delivered (the
 * kernel's own are added by tt_bpf_source_stats). */
void tt_bpf_copy_stats(const tt_bpf_source *s, tt_bpf_stats *out);

#endif
