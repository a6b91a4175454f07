/* tcp_reasm.c - TCP reassembly into per-direction chunks.
 *
 * Each connection has two half-streams indexed by tt_direction. A half knows
 * the next sequence number it expects and the stream offset that number
 * stands for; everything held or delivered is addressed by 64-bit stream
 * offset, so the 32-bit sequence space wraps only in one place (rel_seq).
 *
 * In-order bytes with nothing held are delivered straight from the caller's
 * buffer. Anything else goes through the held list: a sorted list of
 * non-overlapping pieces (copied bytes, or "missing" ranges for bytes a
 * snapped capture did not keep). A new segment is cut around pieces already
 * held, so the first copy of any byte wins. */
#include "tcp_reasm.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_HELD (4u << 20)
#define DEFAULT_MAX_CONNS 65536u
#define SEQ_WINDOW (1 << 30) /* segments further ahead than this are ignored */
#define INITIAL_BUCKETS 1024u
#define MAX_HELD_PIECES 4096u /* per direction; bounds list walks and per-piece overhead */

typedef struct held_piece {
    struct held_piece *next;
    uint64_t off, len;
    uint64_t ts;
    bool missing;
    uint8_t data[];
} held_piece;

typedef struct half_stream {
    bool started;   /* next_seq is known */
    bool syn_seen;
    bool fin_pending, fin_done;
    uint32_t isn;
    uint32_t next_seq;
    uint64_t offset; /* stream offset of next_seq */
    uint64_t fin_off, fin_ts;
    uint64_t last_ts;
    held_piece *held, *held_tail;
    size_t held_bytes, held_pieces;
} half_stream;

typedef struct conn {
    tt_conn_info info;
    struct conn *hnext;
    struct conn *lru_prev, *lru_next;
    uint64_t hash;
    half_stream half[2];
} conn;

struct tt_reasm {
    tt_reasm_limits limits;
    tt_vantage vantage;
    tt_chunk_fn emit;
    void *ctx;
    conn **buckets;
    size_t nbuckets;
    conn *lru_head, *lru_tail; /* head: least recently active */
    uint64_t next_conn_id;
    tt_reasm_stats stats;
};

static inline int32_t rel_seq(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b);
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* ---- endpoints and the connection table ---- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* One endpoint folded into 64 bits without mixing: the address's words,
 * and its port and family spread by odd multipliers, so that endpoints
 * differing only in port (a server's many clients) fold apart. */
static uint64_t endpoint_fold(const tt_endpoint *e)
{
    uint64_t lo = 0, hi = 0;
    if (e->family == 6) {
        memcpy(&lo, e->addr, 8);
        memcpy(&hi, e->addr + 8, 8);
    } else {
        uint32_t v4;
        memcpy(&v4, e->addr, 4);
        lo = v4;
    }
    return lo ^ hi * 0x9E3779B97F4A7C15ULL ^ (((uint64_t)e->port << 8 | e->family) * 0xC2B2AE3D27D4EB4FULL);
}

/* Symmetric: both directions of a 4-tuple hash alike (the folds are
 * added before the one mix). */
static uint64_t tuple_hash(const tt_endpoint *a, const tt_endpoint *b)
{
    return mix64(endpoint_fold(a) + endpoint_fold(b));
}

static bool conn_matches(const conn *c, const tt_endpoint *src, const tt_endpoint *dst)
{
    return (tt_endpoint_equal(&c->info.client, src) && tt_endpoint_equal(&c->info.server, dst)) ||
           (tt_endpoint_equal(&c->info.client, dst) && tt_endpoint_equal(&c->info.server, src));
}

static conn *table_find(tt_reasm *r, const tt_endpoint *src, const tt_endpoint *dst, uint64_t h)
{
    for (conn *c = r->buckets[h & (r->nbuckets - 1)]; c; c = c->hnext)
        if (c->hash == h && conn_matches(c, src, dst)) return c;
    return NULL;
}

static void table_grow(tt_reasm *r)
{
    size_t n = r->nbuckets * 2;
    conn **nb = calloc(n, sizeof *nb);
    if (!nb) return; /* keep the old table; chains just get longer */
    for (size_t i = 0; i < r->nbuckets; i++) {
        conn *c = r->buckets[i];
        while (c) {
            conn *next = c->hnext;
            c->hnext = nb[c->hash & (n - 1)];
            nb[c->hash & (n - 1)] = c;
            c = next;
        }
    }
    free(r->buckets);
    r->buckets = nb;
    r->nbuckets = n;
}

static void table_remove(tt_reasm *r, conn *c)
{
    conn **link = &r->buckets[c->hash & (r->nbuckets - 1)];
    while (*link && *link != c) link = &(*link)->hnext;
    if (*link) *link = c->hnext;
}

static void lru_unlink(tt_reasm *r, conn *c)
{
    if (c->lru_prev) c->lru_prev->lru_next = c->lru_next;
    else r->lru_head = c->lru_next;
    if (c->lru_next) c->lru_next->lru_prev = c->lru_prev;
    else r->lru_tail = c->lru_prev;
    c->lru_prev = c->lru_next = NULL;
}

static void lru_append(tt_reasm *r, conn *c)
{
    c->lru_prev = r->lru_tail;
    c->lru_next = NULL;
    if (r->lru_tail) r->lru_tail->lru_next = c;
    else r->lru_head = c;
    r->lru_tail = c;
}

static void lru_touch(tt_reasm *r, conn *c)
{
    if (r->lru_tail == c) return;
    lru_unlink(r, c);
    lru_append(r, c);
}

/* ---- emitting chunks ---- */

static uint64_t stamp(half_stream *h, uint64_t ts)
{
    if (ts < h->last_ts) ts = h->last_ts;
    h->last_ts = ts;
    return ts;
}

static void emit(tt_reasm *r, conn *c, tt_direction d, tt_chunk_kind kind, uint64_t offset,
                 const uint8_t *data, size_t len, uint64_t ts)
{
    tt_chunk ch = {
        .conn = &c->info,
        .vantage = r->vantage,
        .dir = d,
        .kind = kind,
        .mono_ns = stamp(&c->half[d], ts),
        .offset = offset,
        .data = kind == TT_CHUNK_DATA ? data : NULL,
        .len = len,
    };
    r->emit(r->ctx, &ch);
}

static void advance(half_stream *h, uint64_t n)
{
    h->offset += n;
    h->next_seq += (uint32_t)n;
}

static void deliver_data(tt_reasm *r, conn *c, tt_direction d, const uint8_t *p, size_t len, uint64_t ts)
{
    if (!len) return;
    half_stream *h = &c->half[d];
    emit(r, c, d, TT_CHUNK_DATA, h->offset, p, len, ts);
    advance(h, len);
}

static void deliver_gap(tt_reasm *r, conn *c, tt_direction d, uint64_t len, uint64_t ts)
{
    if (!len) return;
    half_stream *h = &c->half[d];
    r->stats.gaps++;
    r->stats.gap_bytes += len;
    emit(r, c, d, TT_CHUNK_GAP, h->offset, NULL, (size_t)len, ts);
    advance(h, len);
}

/* ---- the held list ---- */

static void held_free_all(half_stream *h)
{
    held_piece *p = h->held;
    while (p) {
        held_piece *next = p->next;
        free(p);
        p = next;
    }
    h->held = h->held_tail = NULL;
    h->held_bytes = 0;
    h->held_pieces = 0;
}

/* Link a new piece [off, off+len) at *link. Returns the piece, or NULL when
 * out of memory (the bytes are then lost and will surface as a gap). */
static held_piece *held_insert_at(half_stream *h, held_piece **link, uint64_t off, uint64_t len,
                                  const uint8_t *data, uint64_t ts)
{
    held_piece *p = malloc(sizeof *p + (data ? len : 0));
    if (!p) return NULL;
    p->off = off;
    p->len = len;
    p->ts = ts;
    p->missing = data == NULL;
    if (data) {
        memcpy(p->data, data, len);
        h->held_bytes += len;
    }
    p->next = *link;
    *link = p;
    if (!p->next) h->held_tail = p;
    h->held_pieces++;
    return p;
}

/* Hold [s, e) (bytes from data, or a missing range when data is NULL),
 * skipping every byte some held piece already covers. */
static void held_add(tt_reasm *r, half_stream *h, uint64_t s, uint64_t e, const uint8_t *data, uint64_t ts)
{
    if (s >= e) return;
    if (!h->held || s >= h->held_tail->off + h->held_tail->len) {
        held_insert_at(h, h->held ? &h->held_tail->next : &h->held, s, e - s, data, ts);
        return;
    }
    held_piece **link = &h->held;
    while (s < e) {
        held_piece *cur = *link;
        uint64_t upto;
        if (!cur) {
            held_insert_at(h, link, s, e - s, data, ts);
            return;
        }
        uint64_t cur_end = cur->off + cur->len;
        if (cur_end <= s) {
            link = &cur->next;
            continue;
        }
        if (cur->off <= s) {
            upto = min_u64(cur_end, e);
            r->stats.overlap_bytes += upto - s;
            link = &cur->next;
        } else {
            upto = min_u64(e, cur->off);
            held_piece *p = held_insert_at(h, link, s, upto - s, data, ts);
            if (p) link = &p->next; /* out of memory: these bytes end up in a gap */
        }
        if (data) data += upto - s;
        s = upto;
    }
}

/* Deliver held pieces that now start at or before the expected offset. */
static void drain(tt_reasm *r, conn *c, tt_direction d)
{
    half_stream *h = &c->half[d];
    while (h->held && h->held->off <= h->offset) {
        held_piece *p = h->held;
        h->held = p->next;
        if (!h->held) h->held_tail = NULL;
        if (!p->missing) h->held_bytes -= p->len;
        h->held_pieces--;
        uint64_t end = p->off + p->len;
        if (end <= h->offset) {
            r->stats.overlap_bytes += p->len;
        } else {
            uint64_t skip = h->offset - p->off;
            r->stats.overlap_bytes += skip;
            if (p->missing) deliver_gap(r, c, d, end - h->offset, p->ts);
            else deliver_data(r, c, d, p->data + skip, (size_t)(p->len - skip), p->ts);
        }
        free(p);
    }
}

static void check_fin(tt_reasm *r, conn *c, tt_direction d)
{
    half_stream *h = &c->half[d];
    if (!h->fin_pending || h->fin_done || h->offset < h->fin_off) return;
    h->fin_done = true;
    held_free_all(h); /* nothing after a FIN belongs to the stream */
    emit(r, c, d, TT_CHUNK_FIN, h->offset, NULL, 0, h->fin_ts);
}

/* Declare the hole in front of the first held piece (or FIN) lost, up to
 * `limit` at most, and deliver what follows. */
static void gap_until(tt_reasm *r, conn *c, tt_direction d, uint64_t limit, uint64_t ts)
{
    half_stream *h = &c->half[d];
    if (h->held && h->held->off < limit) {
        limit = h->held->off;
        ts = h->held->ts;
    }
    if (h->fin_pending && h->fin_off < limit) {
        limit = h->fin_off;
        ts = h->fin_ts;
    }
    if (limit > h->offset) deliver_gap(r, c, d, limit - h->offset, ts);
    drain(r, c, d);
    check_fin(r, c, d);
}

/* Every hole becomes a gap; the half ends delivered up to its FIN if one was seen. */
static void flush_half(tt_reasm *r, conn *c, tt_direction d, uint64_t ts)
{
    half_stream *h = &c->half[d];
    if (h->fin_done) return;
    while (h->held) gap_until(r, c, d, UINT64_MAX, ts);
    if (h->fin_pending) gap_until(r, c, d, h->fin_off, h->fin_ts);
}

static void enforce_hold_limit(tt_reasm *r, conn *c, tt_direction d)
{
    half_stream *h = &c->half[d];
    while (h->held && !h->fin_done &&
           (h->held_bytes > r->limits.max_held_bytes_per_dir || h->held_pieces > MAX_HELD_PIECES))
        gap_until(r, c, d, UINT64_MAX, h->held->ts);
}

/* ---- connection lifetime ---- */

static void conn_destroy(tt_reasm *r, conn *c)
{
    table_remove(r, c);
    lru_unlink(r, c);
    held_free_all(&c->half[0]);
    held_free_all(&c->half[1]);
    free(c);
    r->stats.live_connections--;
}

static void conn_release(tt_reasm *r, conn *c, uint64_t ts)
{
    if (c->half[TT_DIR_S2C].last_ts > ts) ts = c->half[TT_DIR_S2C].last_ts;
    emit(r, c, TT_DIR_C2S, TT_CHUNK_RELEASE, c->half[TT_DIR_C2S].offset, NULL, 0, ts);
    conn_destroy(r, c);
}

/* The source stops following c: holes become gaps, open directions END. */
static void conn_end(tt_reasm *r, conn *c, uint64_t ts)
{
    for (int d = 0; d < 2; d++) flush_half(r, c, (tt_direction)d, ts);
    for (int d = 0; d < 2; d++)
        if (!c->half[d].fin_done) emit(r, c, (tt_direction)d, TT_CHUNK_END, c->half[d].offset, NULL, 0, ts);
    conn_release(r, c, ts);
}

static void conn_reset(tt_reasm *r, conn *c, uint64_t ts)
{
    for (int d = 0; d < 2; d++) flush_half(r, c, (tt_direction)d, ts);
    for (int d = 0; d < 2; d++)
        if (!c->half[d].fin_done) emit(r, c, (tt_direction)d, TT_CHUNK_RST, c->half[d].offset, NULL, 0, ts);
    conn_release(r, c, ts);
}

static conn *conn_create(tt_reasm *r, const tt_endpoint *client, const tt_endpoint *server, bool guessed,
                         uint64_t h, uint64_t ts)
{
    if (r->stats.live_connections >= r->limits.max_connections && r->lru_head) {
        r->stats.flushed_for_limit++;
        conn_end(r, r->lru_head, ts);
    }
    conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->info.conn_id = r->next_conn_id++;
    c->info.client = *client;
    c->info.server = *server;
    c->info.orientation_guessed = guessed;
    c->info.first_seen_ns = ts;
    c->hash = h;
    size_t b = h & (r->nbuckets - 1);
    c->hnext = r->buckets[b];
    r->buckets[b] = c;
    lru_append(r, c);
    r->stats.connections++;
    r->stats.live_connections++;
    if (r->stats.live_connections > r->nbuckets) table_grow(r);
    return c;
}

/* 1: the payload opens with a request line (sender is the client);
 * 2: with a status line (sender is the server); 0: cannot tell. */
static int http_role(const uint8_t *p, size_t n)
{
    static const char *const methods[] = {"GET ", "POST ", "PUT ", "DELETE ", "HEAD ", "OPTIONS ", "PATCH "};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        size_t m = strlen(methods[i]);
        if (n >= m && !memcmp(p, methods[i], m)) return 1;
    }
    if (n >= 5 && !memcmp(p, "HTTP/", 5)) return 2;
    return 0;
}

/* ---- one segment into one half ---- */

/* Half d of c starts: seq is the sequence number of its stream offset 0. */
static void half_start(tt_reasm *r, conn *c, tt_direction d, uint32_t seq)
{
    c->half[d].started = true;
    c->half[d].next_seq = seq;
    if (r->vantage == TT_VANTAGE_WIRE) {
        /* the wire's numbers are the real ones */
        c->info.seq_known[d] = true;
        c->info.seq_base[d] = seq;
    }
}

static void half_take(tt_reasm *r, conn *c, tt_direction d, const tt_tcp_segment *seg)
{
    half_stream *h = &c->half[d];
    uint32_t seq = seg->seq;
    if (seg->flags & TT_TCP_SYN) {
        if (!h->started) {
            h->syn_seen = true;
            h->isn = seg->seq;
        }
        seq += 1;
    }
    if (!h->started) half_start(r, c, d, seq);
    size_t cap = seg->payload_len;
    uint64_t miss = seg->missing_len;
    uint64_t total = cap + miss;
    if (h->fin_done) {
        if (total) r->stats.ignored_segments++;
        return;
    }
    int32_t rel = rel_seq(seq, h->next_seq);
    if (rel > SEQ_WINDOW) {
        r->stats.ignored_segments++;
        return;
    }
    int64_t seg_start = (int64_t)h->offset + rel;
    const uint8_t *p = seg->payload;
    if (rel < 0 && total) {
        uint64_t behind = (uint64_t)(-(int64_t)rel);
        if (behind >= total) {
            r->stats.retransmitted_bytes += total;
            cap = 0;
            miss = 0;
        } else {
            r->stats.overlap_bytes += behind;
            if (behind <= cap) {
                p += behind;
                cap -= behind;
            } else {
                miss -= behind - cap;
                cap = 0;
            }
        }
    }
    if (cap + miss) {
        uint64_t off = rel > 0 ? (uint64_t)seg_start : h->offset;
        if (off == h->offset && !h->held) {
            deliver_data(r, c, d, p, cap, seg->ts_ns);
            deliver_gap(r, c, d, miss, seg->ts_ns);
        } else {
            if (rel > 0) r->stats.out_of_order_segments++;
            held_add(r, h, off, off + cap, p, seg->ts_ns);
            held_add(r, h, off + cap, off + cap + miss, NULL, seg->ts_ns);
            drain(r, c, d);
            enforce_hold_limit(r, c, d);
        }
    }
    if ((seg->flags & TT_TCP_FIN) && !h->fin_pending) {
        int64_t fin_off = seg_start + (int64_t)total;
        h->fin_pending = true;
        h->fin_off = fin_off > 0 ? (uint64_t)fin_off : 0;
        h->fin_ts = seg->ts_ns;
    }
    check_fin(r, c, d);
}

/* The peer acknowledged bytes of half d past its hole while data or a FIN
 * waits behind the hole: the receiver has those bytes, so the capture lost
 * them for good. */
static void ack_declares_gap(tt_reasm *r, conn *c, tt_direction d, uint32_t ack, uint64_t ts)
{
    half_stream *h = &c->half[d];
    if (!h->started || h->fin_done || (!h->held && !h->fin_pending)) return;
    int32_t rel = rel_seq(ack, h->next_seq);
    if (rel <= 0 || rel > SEQ_WINDOW) return;
    gap_until(r, c, d, h->offset + (uint64_t)rel, ts);
}

/* A readable-instant mark: the ready_len bytes before seq of the sender's
 * direction. Not a segment: it touches no stream state and no instant. */
static void take_ready_mark(tt_reasm *r, conn *c, const tt_tcp_segment *seg)
{
    if (!c || r->vantage == TT_VANTAGE_WIRE) {
        r->stats.ready_unplaced++;
        return;
    }
    tt_direction d = tt_endpoint_equal(&c->info.client, &seg->src) ? TT_DIR_C2S : TT_DIR_S2C;
    const half_stream *h = &c->half[d];
    int32_t rel = rel_seq(seg->seq, h->next_seq);
    int64_t end = (int64_t)h->offset + rel;
    if (!h->started || rel > SEQ_WINDOW || end < (int64_t)seg->ready_len) {
        r->stats.ready_unplaced++;
        return;
    }
    r->stats.ready_marks++;
    tt_chunk ch = {
        .conn = &c->info,
        .vantage = r->vantage,
        .dir = d,
        .kind = TT_CHUNK_READY,
        .mono_ns = seg->ts_ns,
        .offset = (uint64_t)end - seg->ready_len,
        .len = seg->ready_len,
    };
    r->emit(r->ctx, &ch);
}

/* A sequence mark: the kernel's sequence number of the sender's byte at
 * seq, kept as the direction's seq_base (the first one counts). */
static void take_seq_mark(tt_reasm *r, conn *c, const tt_tcp_segment *seg)
{
    if (!c || r->vantage == TT_VANTAGE_WIRE) return;
    tt_direction d = tt_endpoint_equal(&c->info.client, &seg->src) ? TT_DIR_C2S : TT_DIR_S2C;
    const half_stream *h = &c->half[d];
    int32_t rel = rel_seq(seg->seq, h->next_seq);
    int64_t at = (int64_t)h->offset + rel;
    if (!h->started || rel > SEQ_WINDOW || at < 0 || c->info.seq_known[d]) return;
    c->info.seq_known[d] = true;
    c->info.seq_base[d] = seg->kernel_seq - (uint32_t)at;
}

void tt_reasm_segment(tt_reasm *r, const tt_tcp_segment *seg)
{
    r->stats.segments++;
    uint64_t h = tuple_hash(&seg->src, &seg->dst);
    conn *c = table_find(r, &seg->src, &seg->dst, h);
    if (seg->ready_mark) {
        take_ready_mark(r, c, seg);
        return;
    }
    if (seg->seq_mark) {
        take_seq_mark(r, c, seg);
        return;
    }
    if (c && seg->order) c->info.order_key = seg->order; /* as lru_touch below (or its end) */
    uint8_t flags = seg->flags;
    bool syn_only = (flags & TT_TCP_SYN) && !(flags & TT_TCP_ACK) && !(flags & TT_TCP_RST);

    if (c && syn_only) {
        tt_direction sd = tt_endpoint_equal(&c->info.client, &seg->src) ? TT_DIR_C2S : TT_DIR_S2C;
        const half_stream *sh = &c->half[sd];
        bool same_syn = sd == TT_DIR_C2S &&
                        ((sh->syn_seen && sh->isn == seg->seq) ||
                         (!sh->syn_seen && sh->started && sh->offset == 0 && sh->next_seq == seg->seq + 1));
        if (!same_syn) {
            conn_end(r, c, seg->ts_ns); /* port reuse: a new connection on the same tuple */
            c = NULL;
        }
    }
    if (!c) {
        const tt_endpoint *client, *server;
        bool guessed = false;
        if (flags & TT_TCP_RST) {
            r->stats.ignored_segments++;
            return;
        }
        if (flags & TT_TCP_SYN) {
            bool from_client = !(flags & TT_TCP_ACK);
            client = from_client ? &seg->src : &seg->dst;
            server = from_client ? &seg->dst : &seg->src;
        } else if (seg->payload_len + seg->missing_len > 0) {
            int role = http_role(seg->payload, seg->payload_len);
            bool src_is_client = role == 1 || (role == 0 && seg->src.port >= seg->dst.port);
            client = src_is_client ? &seg->src : &seg->dst;
            server = src_is_client ? &seg->dst : &seg->src;
            guessed = true;
        } else {
            r->stats.ignored_segments++;
            return;
        }
        c = conn_create(r, client, server, guessed, h, seg->ts_ns);
        if (!c) return;
        if (seg->order) c->info.conn_id = c->info.order_key = seg->order;
    } else {
        lru_touch(r, c);
    }

    tt_direction d = tt_endpoint_equal(&c->info.client, &seg->src) ? TT_DIR_C2S : TT_DIR_S2C;
    tt_direction peer = d == TT_DIR_C2S ? TT_DIR_S2C : TT_DIR_C2S;
    if (flags & TT_TCP_RST) {
        conn_reset(r, c, seg->ts_ns);
        return;
    }
    if ((flags & (TT_TCP_SYN | TT_TCP_ACK)) == (TT_TCP_SYN | TT_TCP_ACK) && !c->half[peer].started) {
        half_start(r, c, peer, seg->ack); /* the SYN-ACK names the client's next sequence number */
    }
    /* what the sender acknowledges reached it before it sent this segment */
    if (flags & TT_TCP_ACK) ack_declares_gap(r, c, peer, seg->ack, seg->ts_ns);
    half_take(r, c, d, seg);
    if (c->half[0].fin_done && c->half[1].fin_done) conn_release(r, c, seg->ts_ns);
}

void tt_reasm_finish(tt_reasm *r, uint64_t end_ns)
{
    while (r->lru_head) {
        if (r->lru_head->info.order_key) r->lru_head->info.order_key |= 1ull << 63;
        conn_end(r, r->lru_head, end_ns);
    }
}

void tt_reasm_stats_add(tt_reasm_stats *a, const tt_reasm_stats *b)
{
    a->segments += b->segments;
    a->connections += b->connections;
    a->retransmitted_bytes += b->retransmitted_bytes;
    a->overlap_bytes += b->overlap_bytes;
    a->gap_bytes += b->gap_bytes;
    a->gaps += b->gaps;
    a->ready_marks += b->ready_marks;
    a->ready_unplaced += b->ready_unplaced;
    a->out_of_order_segments += b->out_of_order_segments;
    a->flushed_for_limit += b->flushed_for_limit;
    a->ignored_segments += b->ignored_segments;
    a->live_connections += b->live_connections;
}

tt_reasm *tt_reasm_new(const tt_reasm_limits *limits, tt_vantage vantage, tt_chunk_fn emit_fn, void *ctx)
{
    tt_reasm *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->limits.max_held_bytes_per_dir = DEFAULT_MAX_HELD;
    r->limits.max_connections = DEFAULT_MAX_CONNS;
    if (limits && limits->max_held_bytes_per_dir) r->limits.max_held_bytes_per_dir = limits->max_held_bytes_per_dir;
    if (limits && limits->max_connections) r->limits.max_connections = limits->max_connections;
    r->vantage = vantage;
    r->emit = emit_fn;
    r->ctx = ctx;
    r->next_conn_id = 1;
    r->nbuckets = INITIAL_BUCKETS;
    r->buckets = calloc(r->nbuckets, sizeof *r->buckets);
    if (!r->buckets) {
        free(r);
        return NULL;
    }
    return r;
}

const tt_reasm_stats *tt_reasm_get_stats(const tt_reasm *r)
{
    return &r->stats;
}

void tt_reasm_free(tt_reasm *r)
{
    if (!r) return;
    while (r->lru_head) conn_destroy(r, r->lru_head);
    free(r->buckets);
    free(r);
}
