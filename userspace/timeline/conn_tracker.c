/* conn_tracker.c - connections: the table, chunks in, and what the
 * tracker keeps (conn_tracker.h; one connection's messages: conn_http.c). */
#include "timeline/conn_tracker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline/conn_internal.h"

/* ---- connection table ---- */

static size_t bucket_of(const tt_tracker *t, uint64_t conn_id)
{
    uint64_t h = conn_id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (t->n_buckets - 1);
}

static void table_grow(tt_tracker *t)
{
    size_t old_n = t->n_buckets;
    conn_state **old = t->buckets;
    t->n_buckets = old_n ? old_n * 2 : 256;
    t->buckets = calloc(t->n_buckets, sizeof *t->buckets);
    if (!t->buckets) abort();
    for (size_t i = 0; i < old_n; i++) {
        for (conn_state *c = old[i], *nx; c; c = nx) {
            nx = c->next_in_bucket;
            size_t b = bucket_of(t, c->conn_id);
            c->next_in_bucket = t->buckets[b];
            t->buckets[b] = c;
        }
    }
    free(old);
}

static conn_state *table_find(tt_tracker *t, uint64_t conn_id)
{
    if (!t->n_buckets) return NULL;
    for (conn_state *c = t->buckets[bucket_of(t, conn_id)]; c; c = c->next_in_bucket)
        if (c->conn_id == conn_id) return c;
    return NULL;
}

static void table_remove(tt_tracker *t, conn_state *c)
{
    conn_state **pp = &t->buckets[bucket_of(t, c->conn_id)];
    while (*pp && *pp != c) pp = &(*pp)->next_in_bucket;
    if (*pp) *pp = c->next_in_bucket;
    t->n_live--;
}


/* ---- activity order ---- */

static void activity_unlink(tt_tracker *t, conn_state *c)
{
    if (c->newer) c->newer->older = c->older;
    else t->most_recent = c->older;
    if (c->older) c->older->newer = c->newer;
    else t->least_recent = c->newer;
    c->newer = c->older = NULL;
}

static void activity_touch(tt_tracker *t, conn_state *c)
{
    if (t->most_recent == c) return;
    if (c->newer || c->older || t->least_recent == c) activity_unlink(t, c);
    c->older = t->most_recent;
    if (t->most_recent) t->most_recent->newer = c;
    t->most_recent = c;
    if (!t->least_recent) t->least_recent = c;
}

/* ---- connections evicted lately ---- */

#define EVICTED_IDS 4096u /* a power of two */

static uint64_t *evicted_slot(tt_tracker *t, uint64_t conn_id)
{
    return &t->evicted_ids[(conn_id * 0x9E3779B97F4A7C15ull) >> 52 & (EVICTED_IDS - 1)];
}

/* True (and the id forgotten) when conn_id was evicted and not released since. */
static bool take_evicted(tt_tracker *t, uint64_t conn_id)
{
    if (!t->evicted_ids || !conn_id) return false;
    uint64_t *slot = evicted_slot(t, conn_id);
    if (*slot != conn_id) return false;
    *slot = 0;
    return true;
}

/* ---- connections ---- */

static void conn_release(tt_tracker *t, conn_state *c, uint64_t mono_ns);

static conn_state *conn_open(tt_tracker *t, const tt_conn_info *info, uint64_t mono_ns)
{
    if (t->opt.max_connections && t->n_live >= t->opt.max_connections) tt_tracker_evict(t, 1, mono_ns);
    if (t->n_live + 1 > t->n_buckets) table_grow(t);
    conn_state *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->t = t;
    c->conn_id = info->conn_id;
    c->client = info->client;
    c->server = info->server;
    c->request_parser = tt_http1_new(TT_HTTP_REQUEST, &tt_conn_request_cb, c);
    c->response_parser = tt_http1_new(TT_HTTP_RESPONSE, &tt_conn_response_cb, c);
    if (!c->request_parser || !c->response_parser) abort();
    c->response_lost_ns = TT_NS_NONE;
    if (take_evicted(t, c->conn_id)) {
        /* its earlier bytes went with the eviction: pick the stream up
         * again, as HTTP/2 if frames show in it (conn_h2.c), else HTTP/1.1 */
        tt_http1_begin_midstream(c->request_parser);
        tt_http1_begin_midstream(c->response_parser);
        c->h2_mid_scan = true;
    }
    activity_touch(t, c);
    size_t b = bucket_of(t, c->conn_id);
    c->next_in_bucket = t->buckets[b];
    t->buckets[b] = c;
    t->n_live++;
    t->connections++;
    return c;
}

static void conn_release(tt_tracker *t, conn_state *c, uint64_t mono_ns)
{
    tt_conn_h2c_release(c);
    tt_conn_h2_release(c, mono_ns);
    tt_conn_close_framer(c, mono_ns);
    for (size_t i = 0; i < c->queue_len; i++) {
        pending *p = c->queue[i];
        if (c->http_error[0] && !p->req.http_error[0])
            snprintf(p->req.http_error, sizeof p->req.http_error, "%s", c->http_error);
        /* unanswered, and the response direction lost bytes after it began */
        if (!p->response_started && c->response_lost_ns != TT_NS_NONE && p->req.req_first_ns != TT_NS_NONE &&
            c->response_lost_ns >= p->req.req_first_ns)
            p->req.incomplete |= TT_INC_GAP;
        tt_conn_file_request(c, p);
    }
    c->queue_len = 0;
    table_remove(t, c);
    activity_unlink(t, c);
    tt_http1_free(c->request_parser);
    tt_http1_free(c->response_parser);
    free(c->queue);
    free(c->body);
    free(c->body_piece);
    free(c->slices);
    tt_ready_marks_free(&c->ready[0]);
    tt_ready_marks_free(&c->ready[1]);
    free(c);
}

void tt_tracker_chunk(void *ctx, const tt_chunk *ch)
{
    tt_tracker *t = ctx;
    t->order_key = ch->conn->order_key;
    conn_state *c = table_find(t, ch->conn->conn_id);
    if (ch->kind == TT_CHUNK_RELEASE) {
        if (c) conn_release(t, c, ch->mono_ns);
        else take_evicted(t, ch->conn->conn_id); /* its id may come back as another connection */
        return;
    }
    if (!c) c = conn_open(t, ch->conn, ch->mono_ns);
    else activity_touch(t, c);
    tt_chunk turned;
    if (c->flipped) {
        turned = *ch;
        turned.dir = (tt_direction)(ch->dir ^ 1);
        ch = &turned;
    }
    if (c->tunneled) return;
    if (ch->kind == TT_CHUNK_READY) {
        tt_conn_ready_mark(c, ch);
        return;
    }
    if (!c->proto_decided && tt_conn_h2_sniff(c, ch)) return;
    if (c->h2c) tt_conn_h2c_chunk(c, ch);
    else if (c->h2) tt_conn_h2_chunk(c, ch);
    else tt_conn_dispatch_http1(c, ch);
}

void tt_conn_note_data_chunk(conn_state *c, const tt_chunk *ch)
{
    tt_direction src = (tt_direction)(TT_DIR_C2S ^ c->flipped); /* the source's name for the client's direction */
    if (ch->dir == TT_DIR_C2S && ch->conn->seq_known[src]) {
        c->c2s_seq_known = true;
        c->c2s_seq_base = ch->conn->seq_base[src];
    }
    c->parsed_end[ch->dir] = ch->offset + ch->len;
}

void tt_conn_dispatch_http1(conn_state *c, const tt_chunk *ch)
{
    tt_http1_parser *hp = ch->dir == TT_DIR_C2S ? c->request_parser : c->response_parser;
    if (!c->http1_began[ch->dir] && (ch->kind == TT_CHUNK_DATA || ch->kind == TT_CHUNK_GAP)) {
        c->http1_began[ch->dir] = true;
        c->http1_base[ch->dir] = ch->offset;
    }
    switch (ch->kind) {
    case TT_CHUNK_DATA:
        tt_conn_note_data_chunk(c, ch);
        c->feed_data = ch->data;
        c->feed_len = ch->len;
        c->feed_off = ch->offset;
        c->n_slices = 0;
        tt_http1_feed(hp, ch->data, ch->len, ch->mono_ns);
        tt_conn_flush_body_piece(c);
        c->feed_data = NULL;
        c->n_slices = 0;
        break;
    case TT_CHUNK_READY:
        tt_conn_ready_mark(c, ch);
        break;
    case TT_CHUNK_GAP:
        c->parsed_end[ch->dir] = ch->offset + ch->len;
        if (ch->dir == TT_DIR_S2C) c->response_lost_ns = ch->mono_ns;
        tt_http1_gap(hp, ch->len, ch->mono_ns);
        break;
    case TT_CHUNK_FIN:
        tt_http1_eof(hp, true, ch->mono_ns);
        break;
    case TT_CHUNK_RST:
    case TT_CHUNK_END:
        tt_http1_eof(hp, false, ch->mono_ns);
        break;
    case TT_CHUNK_RELEASE:
        break;
    }
}

size_t tt_tracker_evict(tt_tracker *t, size_t n, uint64_t mono_ns)
{
    size_t done = 0;
    if (!t->evicted_ids && !(t->evicted_ids = calloc(EVICTED_IDS, sizeof *t->evicted_ids))) return 0;
    while (done < n && t->least_recent) {
        conn_state *c = t->least_recent;
        tt_conn_h2_release(c, mono_ns); /* chunks held undecided become requests first: evicted too */
        for (size_t i = 0; i < c->queue_len; i++) {
            tt_request *r = &c->queue[i]->req;
            r->incomplete |= TT_INC_EVICTED;
            if (!r->http_error[0]) snprintf(r->http_error, sizeof r->http_error, "evicted to bound memory");
        }
        t->evicted_requests += c->queue_len;
        if (c->conn_id) *evicted_slot(t, c->conn_id) = c->conn_id;
        conn_release(t, c, mono_ns);
        t->evicted_connections++;
        done++;
    }
    return done;
}

/* ---- tracker ---- */

/* What a filed request owns beside itself. */
static void request_free_arrays(tt_request *r)
{
    free(r->events);
    free(r->text);
    free(r->body);
}

void tt_request_release_events(tt_request *r)
{
    request_free_arrays(r);
    r->events = NULL;
    r->n_events = 0;
    r->cap_events = 0;
    r->text = NULL;
    r->text_len = r->text_cap = 0;
    r->body = NULL;
    r->body_len = r->body_cap = 0;
    r->events_released = true;
}

tt_tracker *tt_tracker_new(const tt_tracker_options *opt)
{
    tt_tracker *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (opt) t->opt = *opt;
    t->type_names[0] = strdup("");
    t->n_types = 1;
    if (t->opt.keep_text) t->text_scratch = malloc(TEXT_SCRATCH);
    table_grow(t);
    return t;
}

void tt_tracker_free(tt_tracker *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n_buckets; i++) {
        for (conn_state *c = t->buckets[i], *nx; c; c = nx) {
            nx = c->next_in_bucket;
            conn_release(t, c, 0);
        }
    }
    for (size_t i = 0; i < t->n_reqs; i++) request_free_arrays(&t->reqs[i]);
    free(t->reqs);
    free(t->notes);
    free(t->evicted_ids);
    for (uint16_t i = 0; i < t->n_types; i++) free(t->type_names[i]);
    free(t->buckets);
    free(t->text_scratch);
    free(t);
}

tt_request *tt_tracker_requests(tt_tracker *t, size_t *n)
{
    *n = t->n_reqs;
    return t->reqs;
}

static int by_start(const void *a, const void *b)
{
    const tt_request *x = a, *y = b;
    uint64_t xa = x->req_first_ns != TT_NS_NONE ? x->req_first_ns : x->resp_first_ns;
    uint64_t ya = y->req_first_ns != TT_NS_NONE ? y->req_first_ns : y->resp_first_ns;
    if (xa != ya) return xa < ya ? -1 : 1;
    if (x->conn_id != y->conn_id) return x->conn_id < y->conn_id ? -1 : 1;
    return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/* After t->reqs was reordered: each request's filed_at becomes its place
 * in it, and the links to it (from the request filed after it on its
 * connection, from its connection's last_filed) follow it, so that late
 * ready marks still walk each connection's requests in the order they were
 * filed. keep false, or no memory for the map: the links are dropped (a
 * late mark then reaches no filed request). Needs the filed_at of t->reqs
 * to be t->forgotten + 1 .. t->forgotten + n_reqs, in any order. */
static void relink_filed(tt_tracker *t, bool keep)
{
    uint64_t base = t->forgotten;
    uint64_t *moved_to = keep && t->n_reqs ? malloc(t->n_reqs * sizeof *moved_to) : NULL;
    for (size_t i = 0; i < t->n_reqs && moved_to; i++) {
        uint64_t was = t->reqs[i].filed_at - 1 - base;
        if (was >= t->n_reqs) { /* not the numbering it should be: no links at all rather than wrong ones */
            free(moved_to);
            moved_to = NULL;
            break;
        }
        moved_to[was] = base + i + 1;
    }
    for (size_t i = 0; i < t->n_reqs; i++) {
        tt_request *r = &t->reqs[i];
        r->prev_filed = moved_to && r->prev_filed > base ? moved_to[r->prev_filed - 1 - base] : 0;
        r->filed_at = base + i + 1;
    }
    for (conn_state *c = t->most_recent; c; c = c->older)
        c->last_filed = moved_to && c->last_filed > base ? moved_to[c->last_filed - 1 - base] : 0;
    free(moved_to);
}

void tt_tracker_sort(tt_tracker *t)
{
    if (t->n_reqs > 1) qsort(t->reqs, t->n_reqs, sizeof *t->reqs, by_start);
    relink_filed(t, true);
}

const tt_conn_note *tt_tracker_notes(const tt_tracker *t, size_t *n)
{
    *n = t->n_notes;
    return t->notes;
}

uint64_t tt_tracker_connections(const tt_tracker *t)
{
    return t->connections;
}

void tt_tracker_stats_get(const tt_tracker *t, tt_tracker_stats *st)
{
    memset(st, 0, sizeof *st);
    st->connections = t->connections;
    st->live_connections = t->n_live;
    st->in_flight = t->in_flight;
    st->evicted_connections = t->evicted_connections;
    st->evicted_requests = t->evicted_requests;
    st->forgotten = t->forgotten;
    st->notes_over = t->notes_over;
}

void tt_tracker_forget(tt_tracker *t, size_t n)
{
    if (n > t->n_reqs) n = t->n_reqs;
    if (n == 0) return; /* t->reqs may not exist yet */
    for (size_t i = 0; i < n; i++) request_free_arrays(&t->reqs[i]);
    memmove(t->reqs, t->reqs + n, (t->n_reqs - n) * sizeof *t->reqs);
    t->n_reqs -= n;
    t->forgotten += n;
    if (t->cap_reqs > 1024 && t->n_reqs < t->cap_reqs / 4) {
        size_t cap = t->cap_reqs / 2;
        tt_request *shrunk = realloc(t->reqs, cap * sizeof *shrunk);
        if (shrunk) {
            t->reqs = shrunk;
            t->cap_reqs = cap;
        }
    }
}

void tt_tracker_absorb(tt_tracker *dst, tt_tracker *src)
{
    uint16_t map[MAX_EVENT_TYPES];
    map[0] = 0;
    for (uint16_t i = 1; i < src->n_types; i++)
        map[i] = tt_conn_intern_type(dst, src->type_names[i], strlen(src->type_names[i]));
    for (size_t i = 0; i < src->n_reqs; i++) {
        tt_request *r = &src->reqs[i];
        for (uint32_t e = 0; e < r->n_events; e++)
            if (r->events[e].type_id < src->n_types) r->events[e].type_id = map[r->events[e].type_id];
    }
    /* The requests of both in the array with more room, when it holds
     * all: a merge then holds them once, not twice, and src's room may
     * have been made ahead for it (tt_tracker_reserve_requests). The order
     * is free: they are sorted by a total order afterwards, tt_tracker_sort. */
    size_t total = dst->n_reqs + src->n_reqs;
    if (src->cap_reqs > dst->cap_reqs && src->cap_reqs >= total) {
        tt_request *reqs = dst->reqs;
        size_t n = dst->n_reqs, cap = dst->cap_reqs;
        dst->reqs = src->reqs, dst->n_reqs = src->n_reqs, dst->cap_reqs = src->cap_reqs;
        src->reqs = reqs, src->n_reqs = n, src->cap_reqs = cap;
    }
    if (src->n_reqs) {
        dst->reqs = tt_conn_grow(dst->reqs, &dst->cap_reqs, total, sizeof *dst->reqs);
        memcpy(dst->reqs + dst->n_reqs, src->reqs, src->n_reqs * sizeof *src->reqs);
        dst->n_reqs = total;
    }
    /* src's arrays go at once */
    free(src->reqs);
    src->reqs = NULL;
    src->n_reqs = src->cap_reqs = 0;
    if (src->n_notes) {
        dst->notes = tt_conn_grow(dst->notes, &dst->cap_notes, dst->n_notes + src->n_notes, sizeof *dst->notes);
        memcpy(dst->notes + dst->n_notes, src->notes, src->n_notes * sizeof *src->notes);
        dst->n_notes += src->n_notes;
    }
    free(src->notes);
    src->notes = NULL;
    src->n_notes = src->cap_notes = 0;
    dst->notes_over += src->notes_over;
    dst->connections += src->connections;
    dst->in_flight += src->in_flight;
    dst->evicted_connections += src->evicted_connections;
    dst->evicted_requests += src->evicted_requests;
    dst->forgotten += src->forgotten;
    relink_filed(dst, false); /* two numberings in one array: its requests numbered again, unlinked */
}

tt_request *tt_tracker_reserve_requests(tt_tracker *t, size_t n, size_t *room)
{
    *room = 0;
    if (n > t->cap_reqs) {
        if (n > SIZE_MAX / sizeof *t->reqs) return NULL;
        tt_request *reqs = realloc(t->reqs, n * sizeof *reqs);
        if (!reqs) return NULL;
        t->reqs = reqs;
        t->cap_reqs = n;
    }
    *room = t->cap_reqs - t->n_reqs;
    return t->reqs + t->n_reqs;
}

typedef struct keyed_note {
    uint64_t key;
    size_t at;
} keyed_note;

static int by_key(const void *a, const void *b)
{
    const keyed_note *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

int tt_tracker_order_notes(tt_tracker *t)
{
    if (t->n_notes < 2) return 0;
    keyed_note *k = malloc(t->n_notes * sizeof *k);
    tt_conn_note *sorted = malloc(t->n_notes * sizeof *sorted);
    if (!k || !sorted) {
        free(k);
        free(sorted);
        return -1;
    }
    for (size_t i = 0; i < t->n_notes; i++) k[i] = (keyed_note){.key = t->notes[i].order_key, .at = i};
    qsort(k, t->n_notes, sizeof *k, by_key);
    for (size_t i = 0; i < t->n_notes; i++) sorted[i] = t->notes[k[i].at];
    free(k);
    free(t->notes);
    t->notes = sorted;
    t->cap_notes = t->n_notes;
    if (t->n_notes > TT_TRACKER_NOTES_MAX) {
        t->notes_over += t->n_notes - TT_TRACKER_NOTES_MAX;
        t->n_notes = TT_TRACKER_NOTES_MAX;
    }
    return 0;
}
