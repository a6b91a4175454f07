#include "proto/http2.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#define PENDING_MAX 8u
#define CTL_MAX 512u          /* SETTINGS (85 entries), GOAWAY debug data kept */
#define DEFAULT_WINDOW 65535
#define DEFAULT_TABLE 4096u
#define MAX_FRAME_LIMIT 16777215u
#define MAX_WINDOW 2147483647u

/* the name given to a literal whose indexed name is unknown; no real field
 * name holds a NUL byte */
static const char placeholder[] = "\0";
#define PLACEHOLDER_LEN 1u

enum dstate { D_PREFACE, D_HEAD, D_PAYLOAD, D_DEAD, D_CLOSED };

typedef struct half {
    bool ended, no_report;
    bool final_head;          /* a non-interim HEADERS was reported */
    uint64_t body_off, data_frames, pad_bytes, header_blocks, last_ns;
    uint32_t wu_count;        /* WINDOW_UPDATEs the receiver of this half sent */
    uint64_t wu_credit;
    int64_t window;           /* the sender's stream send window */
} half;

typedef struct h2_stream {
    uint32_t id;
    half h[2];
} h2_stream;

typedef struct pending_settings {
    bool has_hts, has_mfs, has_iws;
    uint32_t hts_min, hts_last, mfs, iws;
} pending_settings;

typedef struct h2_dir {
    enum dstate state;
    tt_h2_end dead_how;
    uint64_t dead_off, dead_ns;
    uint64_t off;             /* stream offset of the next byte */
    size_t preface_got;
    bool expect_settings;     /* the first frame must be SETTINGS */

    /* the frame being read */
    uint8_t fh[9];
    size_t fh_got;
    uint32_t len, sid, got;
    uint8_t type, flags;
    uint64_t frame_off, frame_ns;
    uint32_t pre_need, pre_got, pad, content_end;
    uint8_t pre[6];
    bool frame_created, frame_late;
    uint8_t ctl[CTL_MAX];
    size_t ctl_len;
    uint8_t *dbuf;
    size_t dlen, dcap;

    /* the header block being gathered */
    bool in_block;
    uint8_t *hb;
    size_t hb_len, hb_cap, hb_total;
    bool hb_over;
    uint32_t hb_sid, hb_promised;
    uint8_t hb_type, hb_flags;
    bool hb_prio, hb_excl;
    uint32_t hb_dep;
    uint16_t hb_weight;
    uint64_t hb_first_off, hb_first_ns;
    unsigned hb_frames;

    /* HPACK: decodes this direction's header blocks */
    nghttp2_hd_inflater *inf;
    bool tolerant;
    uint32_t hp_settings;     /* what nghttp2's inflater was given */
    uint32_t hp_min;          /* a size update up to this is required first (UINT32_MAX: none) */
    uint32_t hp_ctx_max;      /* the inflater's table size now */
    uint32_t hp_announced;    /* the value announced, before the cap */
    uint8_t *rw;
    size_t rw_cap;
    tt_h2_header *hdrs;
    size_t nhdrs, hdrs_cap;
    char *arena;
    size_t arena_len, arena_cap;
    bool hdr_truncated;
    size_t hdr_unknown;

    /* settings the receiver of this direction announced, applied at its ACK */
    bool max_frame_known;
    uint32_t max_frame;
    uint32_t init_window;
    int64_t conn_window;      /* the sender's connection send window */
    /* SETTINGS sent in this direction, awaiting the ACK in the other */
    pending_settings pend[PENDING_MAX];
    size_t npend;

    tt_h2_dir_stats st;
} h2_dir;

struct tt_http2_conn {
    tt_http2_callbacks cb;
    void *ud;
    bool midstream, upgraded;
    h2_dir d[2];
    h2_stream **streams;      /* sorted by id */
    size_t nstreams, streams_cap;
    uint32_t highest[2];      /* highest stream id opened: [0] by the client (odd), [1] by the server (even) */
    uint32_t closed_ring[TT_HTTP2_CLOSED_RING];
    size_t closed_pos, closed_n;
    char msg[160];
};

/* ---- defaults for callbacks ---- */

static void ign_headers(void *ud, const tt_h2_headers *h) {}
static void ign_data(void *ud, uint32_t s, tt_direction d, const uint8_t *p, size_t n, uint64_t o, uint64_t ns) {}
static void ign_end(void *ud, const tt_h2_stream_end *e) {}
static void ign_error(void *ud, tt_direction d, tt_h2_error c, const char *m, uint64_t o) {}

static inline uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline tt_direction other(tt_direction d) { return d == TT_DIR_C2S ? TT_DIR_S2C : TT_DIR_C2S; }

static inline bool alive(const h2_dir *d) { return d->state != D_DEAD && d->state != D_CLOSED; }

/* ---- HPACK inflaters ---- */

/* nghttp2's inflater, tolerant: table size raised to the cap by a size
 * update of our own, so that every size update up to it is taken. */
static int hp_make_tolerant(h2_dir *d)
{
    if (d->inf) nghttp2_hd_inflate_del(d->inf);
    d->inf = NULL;
    if (nghttp2_hd_inflate_new(&d->inf) != 0) return -1;
    if (nghttp2_hd_inflate_change_table_size(d->inf, TT_HTTP2_MAX_TABLE_SIZE) != 0) return -1;
    /* a dynamic table size update to the cap: 001xxxxx, 5-bit prefix */
    uint8_t b[8];
    size_t n = 0;
    uint32_t v = TT_HTTP2_MAX_TABLE_SIZE;
    b[n++] = 0x20 | 31;
    v -= 31;
    while (v >= 128) {
        b[n++] = (uint8_t)(0x80 | (v & 0x7f));
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    nghttp2_nv nv;
    int fl = 0;
    ssize_t rv = nghttp2_hd_inflate_hd2(d->inf, &nv, &fl, b, n, 1);
    if (rv != (ssize_t)n || !(fl & NGHTTP2_HD_INFLATE_FINAL)) return -1;
    nghttp2_hd_inflate_end_headers(d->inf);
    d->tolerant = true;
    d->hp_settings = TT_HTTP2_MAX_TABLE_SIZE;
    d->hp_min = UINT32_MAX;
    d->hp_ctx_max = TT_HTTP2_MAX_TABLE_SIZE;
    d->hp_announced = TT_HTTP2_MAX_TABLE_SIZE;
    return 0;
}

static int hp_make_exact(h2_dir *d)
{
    if (nghttp2_hd_inflate_new(&d->inf) != 0) return -1;
    d->tolerant = false;
    d->hp_settings = DEFAULT_TABLE;
    d->hp_min = UINT32_MAX;
    d->hp_ctx_max = DEFAULT_TABLE;
    d->hp_announced = DEFAULT_TABLE;
    return 0;
}

/* Mirror of nghttp2_hd_inflate_change_table_size's bookkeeping. */
static void hp_change(h2_dir *d, uint32_t v)
{
    nghttp2_hd_inflate_change_table_size(d->inf, v); /* at a block boundary: cannot fail */
    d->hp_settings = v;
    if (d->hp_ctx_max > v) {
        d->hp_min = v;
        d->hp_ctx_max = v;
    }
}

/* SETTINGS_HEADER_TABLE_SIZE acknowledged for this direction's encoder:
 * like nghttp2_session_update_local_settings, the minimum, then the last. */
static void hp_apply_settings(h2_dir *d, uint32_t vmin, uint32_t vlast)
{
    if (d->tolerant) return;
    uint32_t a = vmin < TT_HTTP2_MAX_TABLE_SIZE ? vmin : TT_HTTP2_MAX_TABLE_SIZE;
    uint32_t b = vlast < TT_HTTP2_MAX_TABLE_SIZE ? vlast : TT_HTTP2_MAX_TABLE_SIZE;
    if (vmin < vlast) hp_change(d, a);
    hp_change(d, b);
    d->hp_announced = vlast;
}

/* ---- connection ---- */

static tt_http2_conn *conn_new(const tt_http2_callbacks *cb, void *ud, bool midstream)
{
    tt_http2_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (cb) c->cb = *cb;
    if (!c->cb.on_headers) c->cb.on_headers = ign_headers;
    if (!c->cb.on_data) c->cb.on_data = ign_data;
    if (!c->cb.on_stream_end) c->cb.on_stream_end = ign_end;
    if (!c->cb.on_error) c->cb.on_error = ign_error;
    c->ud = ud;
    c->midstream = midstream;
    for (int i = 0; i < 2; i++) {
        h2_dir *d = &c->d[i];
        d->state = (!midstream && i == TT_DIR_C2S) ? D_PREFACE : D_HEAD;
        d->expect_settings = !midstream;
        d->max_frame_known = !midstream;
        d->max_frame = TT_HTTP2_DEFAULT_MAX_FRAME;
        d->init_window = DEFAULT_WINDOW;
        d->conn_window = DEFAULT_WINDOW;
        int rc = midstream ? hp_make_tolerant(d) : hp_make_exact(d);
        if (rc != 0) {
            tt_http2_free(c);
            return NULL;
        }
    }
    return c;
}

tt_http2_conn *tt_http2_new(const tt_http2_callbacks *cb, void *ud) { return conn_new(cb, ud, false); }

tt_http2_conn *tt_http2_new_midstream(const tt_http2_callbacks *cb, void *ud) { return conn_new(cb, ud, true); }

void tt_http2_free(tt_http2_conn *c)
{
    if (!c) return;
    for (int i = 0; i < 2; i++) {
        h2_dir *d = &c->d[i];
        if (d->inf) nghttp2_hd_inflate_del(d->inf);
        free(d->dbuf);
        free(d->hb);
        free(d->rw);
        free(d->hdrs);
        free(d->arena);
    }
    for (size_t i = 0; i < c->nstreams; i++) free(c->streams[i]);
    free(c->streams);
    free(c);
}

const tt_h2_dir_stats *tt_http2_stats(const tt_http2_conn *c, tt_direction dir) { return &c->d[dir & 1].st; }

/* ---- the stream table ---- */

static size_t stream_pos(const tt_http2_conn *c, uint32_t id)
{
    size_t lo = 0, hi = c->nstreams;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->streams[mid]->id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static h2_stream *stream_find(const tt_http2_conn *c, uint32_t id)
{
    size_t i = stream_pos(c, id);
    return i < c->nstreams && c->streams[i]->id == id ? c->streams[i] : NULL;
}

static bool recently_closed(const tt_http2_conn *c, uint32_t id)
{
    for (size_t i = 0; i < c->closed_n; i++)
        if (c->closed_ring[i] == id) return true;
    return false;
}

static void stream_remove(tt_http2_conn *c, uint32_t id)
{
    size_t i = stream_pos(c, id);
    if (i >= c->nstreams || c->streams[i]->id != id) return;
    free(c->streams[i]);
    memmove(c->streams + i, c->streams + i + 1, (c->nstreams - i - 1) * sizeof *c->streams);
    c->nstreams--;
    c->closed_ring[c->closed_pos] = id;
    c->closed_pos = (c->closed_pos + 1) % TT_HTTP2_CLOSED_RING;
    if (c->closed_n < TT_HTTP2_CLOSED_RING) c->closed_n++;
}

/* End one half; returns true when the stream is then forgotten. */
static bool end_half(tt_http2_conn *c, h2_stream *s, tt_direction dir, tt_h2_end how, uint32_t code,
                     tt_direction by, uint64_t off, uint64_t ns)
{
    half *h = &s->h[dir];
    if (!h->ended) {
        h->ended = true;
        if (!h->no_report) {
            tt_h2_stream_end e = {
                .stream_id = s->id, .dir = dir, .how = how, .error_code = code, .by = by,
                .off = off, .mono_ns = ns, .last_ns = h->last_ns, .body_bytes = h->body_off,
                .data_frames = h->data_frames, .pad_bytes = h->pad_bytes, .header_blocks = h->header_blocks,
                .window_updates = h->wu_count, .window_credit = h->wu_credit,
            };
            c->cb.on_stream_end(c->ud, &e);
        }
    }
    if (s->h[0].ended && s->h[1].ended) {
        stream_remove(c, s->id);
        return true;
    }
    return false;
}

/* End both halves still open; returns true (the stream is forgotten). */
static void end_stream_both(tt_http2_conn *c, h2_stream *s, tt_h2_end how, uint32_t code, tt_direction by,
                            uint64_t off, uint64_t ns)
{
    uint32_t id = s->id;
    if (end_half(c, s, TT_DIR_C2S, how, code, by, off, ns)) return;
    s = stream_find(c, id);
    if (s) end_half(c, s, TT_DIR_S2C, how, code, by, off, ns);
}

static h2_stream *stream_create(tt_http2_conn *c, uint32_t id, tt_direction by, uint64_t off, uint64_t ns)
{
    if (c->nstreams >= TT_HTTP2_MAX_STREAMS) /* evict the lowest id */
        end_stream_both(c, c->streams[0], TT_H2_END_LIMIT, 0, by, off, ns);
    if (c->nstreams == c->streams_cap) {
        size_t cap = c->streams_cap ? c->streams_cap * 2 : 16;
        h2_stream **n = realloc(c->streams, cap * sizeof *n);
        if (!n) return NULL;
        c->streams = n;
        c->streams_cap = cap;
    }
    h2_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->id = id;
    for (int i = 0; i < 2; i++) s->h[i].window = c->d[i].init_window;
    size_t pos = stream_pos(c, id);
    memmove(c->streams + pos + 1, c->streams + pos, (c->nstreams - pos) * sizeof *c->streams);
    c->streams[pos] = s;
    c->nstreams++;
    int initiator = (id & 1) ? 0 : 1;
    if (id > c->highest[initiator]) c->highest[initiator] = id;
    return s;
}

/* A stream created while a direction is abandoned or ended: its half in
 * that direction ends at once. */
static void settle_new_stream(tt_http2_conn *c, uint32_t id)
{
    for (int i = 0; i < 2; i++) {
        h2_stream *s = stream_find(c, id);
        if (!s) return;
        h2_dir *d = &c->d[i];
        if (!alive(d) && !s->h[i].ended)
            end_half(c, s, (tt_direction)i, d->dead_how, 0, (tt_direction)i, d->dead_off, d->dead_ns);
    }
}

/* ---- errors ---- */

static void fail(tt_http2_conn *c, tt_direction dir, tt_h2_error code, const char *msg, uint64_t off, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    if (!alive(d)) return;
    d->state = D_DEAD;
    d->dead_how = code == TT_H2_ERR_GAP ? TT_H2_END_GAP : TT_H2_END_ERROR;
    d->dead_off = off;
    d->dead_ns = ns;
    d->in_block = false;
    c->cb.on_error(c->ud, dir, code, msg, off);
    for (size_t i = 0; i < c->nstreams;) {
        h2_stream *s = c->streams[i];
        if (!s->h[dir].ended && end_half(c, s, dir, d->dead_how, 0, dir, off, ns)) continue;
        i++;
    }
}

static void failf(tt_http2_conn *c, tt_direction dir, tt_h2_error code, uint64_t off, uint64_t ns,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void failf(tt_http2_conn *c, tt_direction dir, tt_h2_error code, uint64_t off, uint64_t ns,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    fail(c, dir, code, c->msg, off, ns);
}

/* ---- resolving the stream a HEADERS or DATA frame names ---- */

enum resolve_result { R_OK, R_LATE, R_ERROR };

static enum resolve_result resolve(tt_http2_conn *c, tt_direction dir, uint32_t id, bool headers, h2_stream **out,
                                   bool *created, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    h2_stream *s = stream_find(c, id);
    *created = false;
    if (s) {
        *out = s;
        return s->h[dir].ended ? R_LATE : R_OK;
    }
    if (recently_closed(c, id)) return R_LATE;
    int initiator = (id & 1) ? 0 : 1;
    tt_direction opener = (id & 1) ? TT_DIR_C2S : TT_DIR_S2C;
    bool opens = headers && dir == TT_DIR_C2S && (id & 1);
    bool tolerant = c->midstream || !alive(&c->d[opener]);
    if (!opens && !tolerant) {
        if (id <= c->highest[initiator]) return R_LATE;
        failf(c, dir, TT_H2_ERR_PROTOCOL, d->frame_off, ns, "%s on idle stream %u",
              headers ? "HEADERS" : "DATA", id);
        return R_ERROR;
    }
    if (opens && !c->midstream && id <= c->highest[initiator]) return R_LATE; /* ids only grow */
    s = stream_create(c, id, dir, d->frame_off, ns);
    if (!s) return R_LATE;
    *created = true;
    *out = s;
    return R_OK;
}

/* ---- HPACK decoding of one header block ---- */

static int hp_int(const uint8_t *b, size_t n, size_t *i, int prefix, uint32_t *v)
{
    if (*i >= n) return -1;
    uint32_t max = (1u << prefix) - 1, x = b[*i] & max;
    (*i)++;
    if (x < max) {
        *v = x;
        return 0;
    }
    for (int k = 0, shift = 0; k < 5; k++, shift += 7) {
        if (*i >= n) return -1;
        uint8_t ch = b[(*i)++];
        uint64_t y = (uint64_t)x + ((uint64_t)(ch & 0x7f) << shift);
        if (y > (1u << 30)) return -1;
        x = (uint32_t)y;
        if (!(ch & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

static int hp_str(const uint8_t *b, size_t n, size_t *i)
{
    uint32_t len;
    if (hp_int(b, n, i, 7, &len) != 0 || len > n - *i) return -1;
    *i += len;
    return 0;
}

static size_t put_int(uint8_t *o, uint8_t first, int prefix, uint32_t v)
{
    uint32_t max = (1u << prefix) - 1;
    size_t n = 0;
    if (v < max) {
        o[n++] = (uint8_t)(first | v);
        return n;
    }
    o[n++] = (uint8_t)(first | max);
    v -= max;
    while (v >= 128) {
        o[n++] = (uint8_t)(0x80 | (v & 0x7f));
        v >>= 7;
    }
    o[n++] = (uint8_t)v;
    return n;
}

static bool arena_put(h2_dir *d, const uint8_t *p, size_t n, size_t *at)
{
    if (d->arena_len + n + 1 > TT_HTTP2_MAX_DECODED) return false;
    if (d->arena_len + n + 1 > d->arena_cap) {
        size_t cap = d->arena_cap ? d->arena_cap : 1024;
        while (cap < d->arena_len + n + 1) cap *= 2;
        char *a = realloc(d->arena, cap);
        if (!a) return false;
        d->arena = a;
        d->arena_cap = cap;
    }
    *at = d->arena_len;
    if (n) memcpy(d->arena + d->arena_len, p, n);
    d->arena[d->arena_len + n] = 0;
    d->arena_len += n + 1;
    return true;
}

/* Record one decoded field (name/value offsets into the arena for now). */
static void add_field(h2_dir *d, const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags,
                      uint32_t index)
{
    if (flags & (TT_H2_HDR_NAME_UNKNOWN | TT_H2_HDR_VALUE_UNKNOWN)) {
        d->hdr_unknown++;
        d->st.hpack_unknown++;
    }
    if (d->hdr_truncated) return;
    if (d->nhdrs >= TT_HTTP2_MAX_HEADERS) {
        d->hdr_truncated = true;
        return;
    }
    if (d->nhdrs == d->hdrs_cap) {
        size_t cap = d->hdrs_cap ? d->hdrs_cap * 2 : 32;
        tt_h2_header *h = realloc(d->hdrs, cap * sizeof *h);
        if (!h) {
            d->hdr_truncated = true;
            return;
        }
        d->hdrs = h;
        d->hdrs_cap = cap;
    }
    size_t save = d->arena_len, na, va;
    if (!arena_put(d, name, nlen, &na) || !arena_put(d, value, vlen, &va)) {
        d->arena_len = save;
        d->hdr_truncated = true;
        return;
    }
    tt_h2_header *h = &d->hdrs[d->nhdrs++];
    h->name = (const char *)(uintptr_t)na; /* fixed up in fix_fields */
    h->name_len = nlen;
    h->value = (const char *)(uintptr_t)va;
    h->value_len = vlen;
    h->flags = flags;
    h->index = index;
}

static void fix_fields(h2_dir *d)
{
    for (size_t i = 0; i < d->nhdrs; i++) {
        d->hdrs[i].name = d->arena + (uintptr_t)d->hdrs[i].name;
        d->hdrs[i].value = d->arena + (uintptr_t)d->hdrs[i].value;
    }
}

/* Give one representation to the inflater; collect what it emits. */
static int hp_feed(h2_dir *d, const uint8_t *p, size_t n, uint32_t rep_index)
{
    for (;;) {
        nghttp2_nv nv;
        int fl = 0;
        ssize_t rv = nghttp2_hd_inflate_hd2(d->inf, &nv, &fl, p, n, 0);
        if (rv < 0) return (int)rv;
        p += rv;
        n -= (size_t)rv;
        if (fl & NGHTTP2_HD_INFLATE_EMIT) {
            uint8_t flags = (nv.flags & NGHTTP2_NV_FLAG_NO_INDEX) ? TT_H2_HDR_NEVER_INDEXED : 0;
            uint32_t index = 0;
            const uint8_t *name = nv.name;
            size_t nlen = nv.namelen;
            if (nlen == PLACEHOLDER_LEN && memcmp(name, placeholder, PLACEHOLDER_LEN) == 0) {
                flags |= TT_H2_HDR_NAME_UNKNOWN;
                index = rep_index;
                name = (const uint8_t *)"";
                nlen = 0;
            }
            add_field(d, name, nlen, nv.value, nv.valuelen, flags, index);
            continue;
        }
        if (n == 0) return 0;
        if (rv == 0) return NGHTTP2_ERR_HEADER_COMP; /* no progress */
    }
}

static uint8_t *rw_buf(h2_dir *d, size_t need)
{
    if (need > d->rw_cap) {
        uint8_t *b = realloc(d->rw, need);
        if (!b) return NULL;
        d->rw = b;
        d->rw_cap = need;
    }
    return d->rw;
}

/* Decode a whole header block into d->hdrs. Returns 0, or -1 with c->msg set. */
static int hp_decode(tt_http2_conn *c, h2_dir *d, const uint8_t *b, size_t n)
{
    d->nhdrs = 0;
    d->arena_len = 0;
    d->hdr_truncated = false;
    d->hdr_unknown = 0;
    size_t i = 0;
    int rc = 0;
    const char *what = NULL;
    if (d->hp_min != UINT32_MAX && (n == 0 || (b[0] & 0xe0) != 0x20)) {
        snprintf(c->msg, sizeof c->msg,
                 "HPACK: no dynamic table size update after SETTINGS_HEADER_TABLE_SIZE %u lowered the table",
                 d->hp_settings);
        return -1;
    }
    while (i < n && rc == 0) {
        size_t start = i;
        uint8_t first = b[i];
        uint32_t v;
        if ((first & 0xe0) == 0x20) { /* dynamic table size update */
            if (hp_int(b, n, &i, 5, &v) != 0) {
                what = "bad integer";
                break;
            }
            uint32_t allowed = d->hp_min < d->hp_settings ? d->hp_min : d->hp_settings;
            if (v > allowed && (d->tolerant || (d->hp_announced > TT_HTTP2_MAX_TABLE_SIZE && v <= d->hp_announced))) {
                uint8_t o[8];
                rc = hp_feed(d, o, put_int(o, 0x20, 5, allowed), 0);
                v = allowed;
            } else if (v > allowed) {
                snprintf(c->msg, sizeof c->msg, "HPACK: dynamic table size update to %u over the %u allowed", v,
                         allowed);
                return -1;
            } else {
                rc = hp_feed(d, b + start, i - start, 0);
            }
            if (rc == 0) {
                d->hp_min = UINT32_MAX;
                d->hp_ctx_max = v;
            }
            continue;
        }
        size_t entries = nghttp2_hd_inflate_get_num_table_entries(d->inf);
        if (first & 0x80) { /* indexed field */
            if (hp_int(b, n, &i, 7, &v) != 0) {
                what = "bad integer";
                break;
            }
            if (v != 0 && v > entries) add_field(d, NULL, 0, NULL, 0, TT_H2_HDR_NAME_UNKNOWN | TT_H2_HDR_VALUE_UNKNOWN, v);
            else rc = hp_feed(d, b + start, i - start, v);
            continue;
        }
        /* literal: 01 incremental (6-bit index), 0001 never, 0000 without (4-bit) */
        int prefix = (first & 0x40) ? 6 : 4;
        if (hp_int(b, n, &i, prefix, &v) != 0) {
            what = "bad integer";
            break;
        }
        if (v == 0 && hp_str(b, n, &i) != 0) {
            what = "bad name string";
            break;
        }
        size_t value_at = i;
        if (hp_str(b, n, &i) != 0) {
            what = "bad value string";
            break;
        }
        if (v == 0 || v <= entries) {
            rc = hp_feed(d, b + start, i - start, v);
            continue;
        }
        /* the name is an entry the inflater does not have: a placeholder name */
        size_t vlen = i - value_at;
        uint8_t *o = rw_buf(d, 2 + PLACEHOLDER_LEN + vlen);
        if (!o) {
            what = "out of memory";
            break;
        }
        size_t k = 0;
        o[k++] = (first & 0x40) ? 0x40 : (first & 0xf0);
        o[k++] = PLACEHOLDER_LEN;
        memcpy(o + k, placeholder, PLACEHOLDER_LEN);
        k += PLACEHOLDER_LEN;
        memcpy(o + k, b + value_at, vlen);
        rc = hp_feed(d, o, k + vlen, v);
    }
    if (!what && rc == 0) {
        nghttp2_nv nv;
        int fl = 0;
        static const uint8_t none[1];
        ssize_t rv = nghttp2_hd_inflate_hd2(d->inf, &nv, &fl, none, 0, 1);
        if (rv < 0) rc = (int)rv;
        else if (!(fl & NGHTTP2_HD_INFLATE_FINAL)) rc = NGHTTP2_ERR_HEADER_COMP;
    }
    if (what) {
        snprintf(c->msg, sizeof c->msg, "HPACK: %s", what);
        return -1;
    }
    if (rc != 0) {
        snprintf(c->msg, sizeof c->msg, "HPACK: %s", nghttp2_strerror(rc));
        return -1;
    }
    nghttp2_hd_inflate_end_headers(d->inf);
    fix_fields(d);
    return 0;
}

const tt_h2_header *tt_http2_find_header(const tt_h2_headers *h, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < h->n_headers; i++)
        if (h->headers[i].name_len == n && memcmp(h->headers[i].name, name, n) == 0) return &h->headers[i];
    return NULL;
}

static int status_of(const tt_h2_headers *h)
{
    const tt_h2_header *s = tt_http2_find_header(h, ":status");
    if (!s || s->value_len != 3) return -1;
    int v = 0;
    for (int i = 0; i < 3; i++) {
        char ch = s->value[i];
        if (ch < '0' || ch > '9') return -1;
        v = v * 10 + (ch - '0');
    }
    return v;
}

/* ---- settings ---- */

static void apply_settings(tt_http2_conn *c, tt_direction dir, const pending_settings *p)
{
    h2_dir *d = &c->d[dir];
    if (p->has_hts) hp_apply_settings(d, p->hts_min, p->hts_last);
    if (p->has_mfs) {
        d->max_frame = p->mfs;
        d->max_frame_known = true;
    }
    if (p->has_iws) {
        int64_t delta = (int64_t)p->iws - (int64_t)d->init_window;
        d->init_window = p->iws;
        for (size_t i = 0; i < c->nstreams; i++)
            if (!c->streams[i]->h[dir].ended) c->streams[i]->h[dir].window += delta;
    }
}

static void collect_settings(const tt_h2_setting *s, size_t n, pending_settings *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < n; i++) {
        switch (s[i].id) {
        case TT_H2_SETTINGS_HEADER_TABLE_SIZE:
            p->hts_min = p->has_hts && p->hts_min < s[i].value ? p->hts_min : s[i].value;
            p->hts_last = s[i].value;
            p->has_hts = true;
            break;
        case TT_H2_SETTINGS_MAX_FRAME_SIZE:
            if (s[i].value >= TT_HTTP2_DEFAULT_MAX_FRAME && s[i].value <= MAX_FRAME_LIMIT) {
                p->mfs = s[i].value;
                p->has_mfs = true;
            }
            break;
        case TT_H2_SETTINGS_INITIAL_WINDOW_SIZE:
            if (s[i].value <= MAX_WINDOW) {
                p->iws = s[i].value;
                p->has_iws = true;
            }
            break;
        default:
            break;
        }
    }
}

static size_t parse_settings(const uint8_t *b, size_t n, tt_h2_setting *out)
{
    size_t k = 0;
    for (size_t i = 0; i + 6 <= n; i += 6) {
        out[k].id = (uint16_t)(b[i] << 8 | b[i + 1]);
        out[k].value = be32(b + i + 2);
        k++;
    }
    return k;
}

/* ---- base64url for HTTP2-Settings ---- */

static int b64val(char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '-' || ch == '+') return 62;
    if (ch == '_' || ch == '/') return 63;
    return -1;
}

int tt_http2_start_upgrade(tt_http2_conn *c, const char *b64, size_t len, uint64_t mono_ns)
{
    int rc = 0;
    while (len && (b64[len - 1] == '=' || b64[len - 1] == ' ' || b64[len - 1] == '\t')) len--;
    while (len && (b64[0] == ' ' || b64[0] == '\t')) {
        b64++;
        len--;
    }
    uint8_t buf[CTL_MAX];
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64val(b64[i]);
        if (v < 0 || n >= sizeof buf) {
            rc = -1;
            n = 0;
            break;
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (uint8_t)(acc >> bits);
        }
    }
    if (rc == 0 && n % 6 != 0) {
        rc = -1;
        n = 0;
    }
    if (n) {
        tt_h2_setting s[CTL_MAX / 6];
        size_t k = parse_settings(buf, n, s);
        pending_settings p;
        collect_settings(s, k, &p);
        apply_settings(c, TT_DIR_S2C, &p); /* acknowledged by the 101 */
        if (c->cb.on_settings) c->cb.on_settings(c->ud, TT_DIR_C2S, false, s, k, mono_ns);
    }
    c->upgraded = true;
    h2_stream *s = stream_find(c, 1);
    if (!s) s = stream_create(c, 1, TT_DIR_C2S, 0, mono_ns);
    if (s) {
        s->h[TT_DIR_C2S].ended = true;
        s->h[TT_DIR_C2S].no_report = true;
    }
    return rc;
}

/* ---- frames ---- */

static bool begin_frame(tt_http2_conn *c, tt_direction dir)
{
    h2_dir *d = &c->d[dir];
    const uint8_t *h = d->fh;
    d->len = (uint32_t)h[0] << 16 | (uint32_t)h[1] << 8 | h[2];
    d->type = h[3];
    d->flags = h[4];
    d->sid = be32(h + 5) & 0x7fffffffu;
    d->got = 0;
    d->pre_got = 0;
    d->pre_need = 0;
    d->pad = 0;
    d->content_end = d->len;
    d->ctl_len = 0;
    d->dlen = 0;
    d->frame_created = d->frame_late = false;
    uint64_t at = d->frame_off, ns = d->frame_ns;
    const char *name = tt_http2_frame_name(d->type);

    if (d->expect_settings) {
        d->expect_settings = false;
        if (d->type != TT_H2_SETTINGS || (d->flags & TT_H2_FLAG_ACK)) {
            failf(c, dir, TT_H2_ERR_PREFACE, at, ns, "%s preface: first frame is %s, not SETTINGS",
                  dir == TT_DIR_C2S ? "client" : "server", name);
            return false;
        }
    }
    if (d->in_block && (d->type != TT_H2_CONTINUATION || d->sid != d->hb_sid)) {
        failf(c, dir, TT_H2_ERR_PROTOCOL, at, ns, "%s on stream %u inside the header block of stream %u", name,
              d->sid, d->hb_sid);
        return false;
    }
    if (!d->in_block && d->type == TT_H2_CONTINUATION) {
        failf(c, dir, TT_H2_ERR_PROTOCOL, at, ns, "CONTINUATION on stream %u without a header block", d->sid);
        return false;
    }
    if (d->max_frame_known) {
        uint32_t limit = d->max_frame;
        const h2_dir *o = &c->d[other(dir)];
        for (size_t i = 0; i < o->npend; i++)
            if (o->pend[i].has_mfs && o->pend[i].mfs > limit) limit = o->pend[i].mfs;
        if (d->len > limit) {
            failf(c, dir, TT_H2_ERR_FRAME_SIZE, at, ns, "%s frame of %u bytes over SETTINGS_MAX_FRAME_SIZE %u", name,
                  d->len, limit);
            return false;
        }
    }
    bool padded = (d->flags & TT_H2_FLAG_PADDED) != 0;
    bool need_stream = false, need_zero = false;
    int want_len = -1;
    switch (d->type) {
    case TT_H2_DATA:
        need_stream = true;
        d->pre_need = padded;
        break;
    case TT_H2_HEADERS:
        need_stream = true;
        d->pre_need = padded + ((d->flags & TT_H2_FLAG_PRIORITY) ? 5 : 0);
        if (dir == TT_DIR_C2S && d->sid && !(d->sid & 1)) {
            failf(c, dir, TT_H2_ERR_PROTOCOL, at, ns, "client HEADERS on even stream %u", d->sid);
            return false;
        }
        break;
    case TT_H2_PRIORITY:
        need_stream = true;
        want_len = 5;
        break;
    case TT_H2_RST_STREAM:
        need_stream = true;
        want_len = 4;
        break;
    case TT_H2_SETTINGS:
        need_zero = true;
        if ((d->flags & TT_H2_FLAG_ACK) ? d->len != 0 : d->len % 6 != 0) {
            failf(c, dir, TT_H2_ERR_FRAME_SIZE, at, ns, "SETTINGS%s of %u bytes",
                  (d->flags & TT_H2_FLAG_ACK) ? " ACK" : "", d->len);
            return false;
        }
        break;
    case TT_H2_PUSH_PROMISE:
        if (dir == TT_DIR_C2S) {
            failf(c, dir, TT_H2_ERR_PROTOCOL, at, ns, "PUSH_PROMISE from the client");
            return false;
        }
        need_stream = true;
        d->pre_need = padded + 4;
        break;
    case TT_H2_PING:
        need_zero = true;
        want_len = 8;
        break;
    case TT_H2_GOAWAY:
        need_zero = true;
        if (d->len < 8) {
            failf(c, dir, TT_H2_ERR_FRAME_SIZE, at, ns, "GOAWAY of %u bytes", d->len);
            return false;
        }
        break;
    case TT_H2_WINDOW_UPDATE:
        want_len = 4;
        break;
    case TT_H2_CONTINUATION:
        break;
    default:
        break;
    }
    if (need_stream && d->sid == 0) {
        failf(c, dir, TT_H2_ERR_PROTOCOL, at, ns, "%s on stream 0", name);
        return false;
    }
    if (need_zero && d->sid != 0) {
        failf(c, dir, TT_H2_ERR_PROTOCOL, at, ns, "%s on stream %u", name, d->sid);
        return false;
    }
    if (want_len >= 0 && d->len != (uint32_t)want_len) {
        failf(c, dir, TT_H2_ERR_FRAME_SIZE, at, ns, "%s of %u bytes", name, d->len);
        return false;
    }
    if (d->pre_need > d->len) {
        failf(c, dir, TT_H2_ERR_FRAME_SIZE, at, ns, "%s of %u bytes: too short for its padding/priority fields",
              name, d->len);
        return false;
    }
    if (d->type == TT_H2_HEADERS || d->type == TT_H2_PUSH_PROMISE) {
        d->in_block = true;
        d->hb_len = 0;
        d->hb_total = 0;
        d->hb_over = false;
        d->hb_sid = d->sid;
        d->hb_type = d->type;
        d->hb_flags = d->flags;
        d->hb_prio = false;
        d->hb_excl = false;
        d->hb_dep = 0;
        d->hb_weight = 0;
        d->hb_promised = 0;
        d->hb_first_off = at;
        d->hb_first_ns = ns;
        d->hb_frames = 0;
    }
    return true;
}

/* The frame's prefix (pad length, priority, promised id) is complete. */
static bool prefix_done(tt_http2_conn *c, tt_direction dir)
{
    h2_dir *d = &c->d[dir];
    size_t k = 0;
    if ((d->flags & TT_H2_FLAG_PADDED) &&
        (d->type == TT_H2_DATA || d->type == TT_H2_HEADERS || d->type == TT_H2_PUSH_PROMISE)) {
        d->pad = d->pre[k++];
        if (d->pre_need + d->pad > d->len) {
            failf(c, dir, TT_H2_ERR_PROTOCOL, d->frame_off, d->frame_ns, "%s: %u bytes of padding in %u",
                  tt_http2_frame_name(d->type), d->pad, d->len);
            return false;
        }
        d->content_end = d->len - d->pad;
    }
    if (d->type == TT_H2_HEADERS && (d->flags & TT_H2_FLAG_PRIORITY)) {
        uint32_t dep = be32(d->pre + k);
        d->hb_prio = true;
        d->hb_excl = (dep >> 31) != 0;
        d->hb_dep = dep & 0x7fffffffu;
        d->hb_weight = (uint16_t)(d->pre[k + 4] + 1);
    }
    if (d->type == TT_H2_PUSH_PROMISE) d->hb_promised = be32(d->pre + k) & 0x7fffffffu;
    return true;
}

static void block_append(h2_dir *d, const uint8_t *p, size_t n)
{
    d->hb_total += n;
    if (d->hb_over) return;
    if (d->hb_len + n > TT_HTTP2_MAX_HEADER_BLOCK) {
        d->hb_over = true;
        return;
    }
    if (d->hb_len + n > d->hb_cap) {
        size_t cap = d->hb_cap ? d->hb_cap : 1024;
        while (cap < d->hb_len + n) cap *= 2;
        uint8_t *b = realloc(d->hb, cap);
        if (!b) {
            d->hb_over = true;
            return;
        }
        d->hb = b;
        d->hb_cap = cap;
    }
    memcpy(d->hb + d->hb_len, p, n);
    d->hb_len += n;
}

/* Hand the buffered DATA payload over (`final`: the frame is complete, its
 * length leaves the stream's window first); false when the direction failed. */
static bool data_deliver(tt_http2_conn *c, tt_direction dir, uint64_t ns, bool final)
{
    h2_dir *d = &c->d[dir];
    h2_stream *s = NULL;
    bool created;
    if (d->frame_late) {
        d->dlen = 0;
        return true;
    }
    enum resolve_result r = resolve(c, dir, d->sid, false, &s, &created, ns);
    if (r == R_ERROR) return false;
    if (created) d->frame_created = true;
    if (r == R_LATE) {
        d->frame_late = true;
        d->st.late_frames++;
        d->dlen = 0;
        return true;
    }
    if (final) s->h[dir].window -= d->len;
    if (d->dlen) {
        half *h = &s->h[dir];
        c->cb.on_data(c->ud, d->sid, dir, d->dbuf, d->dlen, h->body_off, ns);
        h->body_off += d->dlen;
        d->st.data_bytes += d->dlen;
        d->dlen = 0;
    }
    return true;
}

/* DATA payload bytes; `rest` more payload bytes of the frame follow them.
 * A full piece with payload after it is handed over at once. */
static bool data_append(tt_http2_conn *c, tt_direction dir, const uint8_t *p, size_t n, size_t rest, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    while (n) {
        if (d->dlen + n > d->dcap && d->dcap < TT_HTTP2_DATA_PIECE) {
            size_t cap = d->dcap ? d->dcap : 16384;
            while (cap < d->dlen + n && cap < TT_HTTP2_DATA_PIECE) cap *= 2;
            uint8_t *b = realloc(d->dbuf, cap);
            if (b) {
                d->dbuf = b;
                d->dcap = cap;
            }
        }
        size_t take = d->dcap - d->dlen < n ? d->dcap - d->dlen : n;
        if (take == 0) return true; /* out of memory: the payload is lost, the framing goes on */
        memcpy(d->dbuf + d->dlen, p, take);
        d->dlen += take;
        p += take;
        n -= take;
        if (d->dlen == TT_HTTP2_DATA_PIECE && n + rest > 0 && !data_deliver(c, dir, ns, false)) return false;
    }
    return true;
}

/* ---- frame completion ---- */

static void report_frame(tt_http2_conn *c, tt_direction dir, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    d->st.frames++;
    if (d->type < 10) d->st.frames_by_type[d->type]++;
    else d->st.unknown_frames++;
    if (c->cb.on_frame) {
        tt_h2_frame f = { .dir = dir, .type = d->type, .flags = d->flags, .stream_id = d->sid, .length = d->len,
                          .off = d->frame_off, .first_ns = d->frame_ns, .last_ns = ns };
        c->cb.on_frame(c->ud, &f);
    }
}

static void block_done(tt_http2_conn *c, tt_direction dir, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    d->in_block = false;
    d->st.header_blocks++;
    bool skipped = d->hb_over;
    if (skipped) {
        d->nhdrs = 0;
        d->hdr_unknown = 0;
        d->hdr_truncated = false;
        d->st.hpack_resets++;
        if (hp_make_tolerant(d) != 0) {
            fail(c, dir, TT_H2_ERR_HPACK, "HPACK: out of memory", d->frame_off, ns);
            return;
        }
    } else if (hp_decode(c, d, d->hb, d->hb_len) != 0) {
        fail(c, dir, TT_H2_ERR_HPACK, c->msg, d->hb_first_off, ns);
        return;
    }
    uint64_t end_off = d->frame_off + 9 + d->len;
    tt_h2_headers h = {
        .dir = dir, .headers = d->hdrs, .n_headers = d->nhdrs, .n_unknown = d->hdr_unknown,
        .skipped = skipped, .truncated = d->hdr_truncated, .has_priority = d->hb_prio, .exclusive = d->hb_excl,
        .depends_on = d->hb_dep, .weight = d->hb_weight, .block_len = d->hb_total, .frames = d->hb_frames,
        .first_off = d->hb_first_off, .first_ns = d->hb_first_ns, .last_off = end_off, .last_ns = ns,
    };
    h.status = status_of(&h);

    if (d->hb_type == TT_H2_PUSH_PROMISE) {
        uint32_t pid = d->hb_promised;
        if (pid == 0 || (pid & 1)) {
            failf(c, dir, TT_H2_ERR_PROTOCOL, d->hb_first_off, ns, "PUSH_PROMISE of stream %u", pid);
            return;
        }
        if (stream_find(c, pid) || recently_closed(c, pid) || (!c->midstream && pid <= c->highest[1])) {
            d->st.late_frames++;
            return;
        }
        h2_stream *s = stream_create(c, pid, dir, d->hb_first_off, ns);
        if (!s) return;
        h.stream_id = pid;
        h.promise = true;
        h.assoc_stream_id = d->hb_sid;
        s->h[TT_DIR_S2C].last_ns = ns;
        c->cb.on_headers(c->ud, &h);
        s = stream_find(c, pid);
        if (s) end_half(c, s, TT_DIR_C2S, TT_H2_END_STREAM, 0, dir, end_off, ns);
        settle_new_stream(c, pid);
        return;
    }

    h2_stream *s = NULL;
    bool created;
    enum resolve_result r = resolve(c, dir, d->hb_sid, true, &s, &created, ns);
    if (r == R_ERROR) return;
    if (r == R_LATE) {
        d->st.late_frames++;
        return;
    }
    half *hf = &s->h[dir];
    h.stream_id = d->hb_sid;
    h.end_stream = (d->hb_flags & TT_H2_FLAG_END_STREAM) != 0;
    h.interim = dir == TT_DIR_S2C && h.status >= 100 && h.status < 200 && !hf->final_head;
    h.trailers = hf->final_head;
    hf->header_blocks++;
    hf->last_ns = ns;
    if (!h.interim) hf->final_head = true;
    c->cb.on_headers(c->ud, &h);
    if (h.end_stream) {
        s = stream_find(c, d->hb_sid);
        if (s) end_half(c, s, dir, TT_H2_END_STREAM, 0, dir, end_off, ns);
    }
    if (created) settle_new_stream(c, d->hb_sid);
}

static void data_done(tt_http2_conn *c, tt_direction dir, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    uint32_t sid = d->sid;
    d->conn_window -= d->len;
    if (!data_deliver(c, dir, ns, true)) return;
    if (d->frame_late) return;
    h2_stream *s = stream_find(c, sid);
    if (!s) return;
    half *h = &s->h[dir];
    h->data_frames++;
    h->pad_bytes += d->pad;
    h->last_ns = ns;
    d->st.pad_bytes += d->pad;
    if (d->flags & TT_H2_FLAG_END_STREAM) end_half(c, s, dir, TT_H2_END_STREAM, 0, dir, d->frame_off + 9 + d->len, ns);
    if (d->frame_created) settle_new_stream(c, sid);
}

static void goaway_done(tt_http2_conn *c, tt_direction dir, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    uint32_t last = be32(d->ctl) & 0x7fffffffu, code = be32(d->ctl + 4);
    if (c->cb.on_goaway) c->cb.on_goaway(c->ud, dir, last, code, d->ctl + 8, d->ctl_len - 8, ns);
    /* streams initiated by the GOAWAY's receiver above `last` were not processed */
    uint32_t parity = dir == TT_DIR_S2C ? 1 : 0;
    uint64_t end_off = d->frame_off + 9 + d->len;
    for (size_t i = 0; i < c->nstreams;) {
        h2_stream *s = c->streams[i];
        if (s->id > last && (s->id & 1) == parity) {
            size_t before = c->nstreams;
            end_stream_both(c, s, TT_H2_END_GOAWAY, code, dir, end_off, ns);
            if (c->nstreams < before) continue;
        }
        i++;
    }
}

static void window_update_done(tt_http2_conn *c, tt_direction dir, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    uint32_t inc = be32(d->ctl) & 0x7fffffffu;
    tt_direction sender = other(dir);
    tt_h2_window_update w = { .dir = dir, .stream_id = d->sid, .increment = inc, .off = d->frame_off,
                              .mono_ns = ns, .window_known = !c->midstream };
    if (d->sid == 0) {
        d->st.conn_window_updates++;
        d->st.conn_window_credit += inc;
        if (d->st.conn_window_updates == 1) d->st.conn_window_update_first_ns = ns;
        d->st.conn_window_update_last_ns = ns;
        c->d[sender].conn_window += inc;
        w.count = d->st.conn_window_updates;
        w.total = d->st.conn_window_credit;
        w.window = c->d[sender].conn_window;
    } else {
        d->st.stream_window_updates++;
        d->st.stream_window_credit += inc;
        h2_stream *s = stream_find(c, d->sid);
        if (s) {
            half *h = &s->h[sender];
            h->wu_count++;
            h->wu_credit += inc;
            h->window += inc;
            w.count = h->wu_count;
            w.total = h->wu_credit;
            w.window = h->window;
        } else {
            w.count = 1;
            w.total = inc;
            w.window_known = false;
        }
    }
    if (c->cb.on_window_update) c->cb.on_window_update(c->ud, &w);
}

static void settings_done(tt_http2_conn *c, tt_direction dir, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    if (d->flags & TT_H2_FLAG_ACK) {
        /* the receiver of `dir` acknowledges the oldest SETTINGS sent the other way */
        h2_dir *o = &c->d[other(dir)];
        if (o->npend) {
            pending_settings p = o->pend[0];
            memmove(o->pend, o->pend + 1, (o->npend - 1) * sizeof *o->pend);
            o->npend--;
            apply_settings(c, dir, &p);
        }
        if (c->cb.on_settings) c->cb.on_settings(c->ud, dir, true, NULL, 0, ns);
        return;
    }
    tt_h2_setting s[CTL_MAX / 6];
    size_t k = parse_settings(d->ctl, d->ctl_len, s);
    if (d->npend == PENDING_MAX) {
        memmove(d->pend, d->pend + 1, (PENDING_MAX - 1) * sizeof *d->pend);
        d->npend--;
    }
    collect_settings(s, k, &d->pend[d->npend++]);
    if (c->cb.on_settings) c->cb.on_settings(c->ud, dir, false, s, k, ns);
}

static void frame_done(tt_http2_conn *c, tt_direction dir, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    d->state = D_HEAD;
    d->fh_got = 0;
    report_frame(c, dir, ns);
    switch (d->type) {
    case TT_H2_DATA:
        data_done(c, dir, ns);
        break;
    case TT_H2_HEADERS:
    case TT_H2_PUSH_PROMISE:
    case TT_H2_CONTINUATION:
        d->hb_frames++;
        if (d->flags & TT_H2_FLAG_END_HEADERS) block_done(c, dir, ns);
        break;
    case TT_H2_RST_STREAM: {
        h2_stream *s = stream_find(c, d->sid);
        if (s) end_stream_both(c, s, TT_H2_END_RST, be32(d->ctl), dir, d->frame_off + 9 + d->len, ns);
        else d->st.late_frames++;
        break;
    }
    case TT_H2_SETTINGS:
        settings_done(c, dir, ns);
        break;
    case TT_H2_PING:
        if (c->cb.on_ping) c->cb.on_ping(c->ud, dir, (d->flags & TT_H2_FLAG_ACK) != 0, d->ctl, ns);
        break;
    case TT_H2_GOAWAY:
        goaway_done(c, dir, ns);
        break;
    case TT_H2_WINDOW_UPDATE:
        window_update_done(c, dir, ns);
        break;
    default:
        break;
    }
}

/* Payload bytes of the current frame; false when the direction failed. */
static bool feed_payload(tt_http2_conn *c, tt_direction dir, const uint8_t *p, size_t n, uint64_t ns)
{
    h2_dir *d = &c->d[dir];
    while (n) {
        if (d->got < d->pre_need) {
            size_t take = d->pre_need - d->got < n ? d->pre_need - d->got : n;
            memcpy(d->pre + d->pre_got, p, take);
            d->pre_got += (uint32_t)take;
            d->got += (uint32_t)take;
            p += take;
            n -= take;
            if (d->got == d->pre_need && !prefix_done(c, dir)) return false;
            continue;
        }
        if (d->got < d->content_end) {
            size_t take = d->content_end - d->got < n ? d->content_end - d->got : n;
            switch (d->type) {
            case TT_H2_DATA: {
                size_t rest = d->content_end - d->got - take;
                d->got += (uint32_t)take;
                if (!data_append(c, dir, p, take, rest, ns)) return false;
                break;
            }
            case TT_H2_HEADERS:
            case TT_H2_PUSH_PROMISE:
            case TT_H2_CONTINUATION:
                d->got += (uint32_t)take;
                block_append(d, p, take);
                break;
            case TT_H2_SETTINGS:
            case TT_H2_PING:
            case TT_H2_GOAWAY:
            case TT_H2_WINDOW_UPDATE:
            case TT_H2_RST_STREAM:
            case TT_H2_PRIORITY: {
                size_t keep = d->ctl_len + take <= CTL_MAX ? take : CTL_MAX - d->ctl_len;
                memcpy(d->ctl + d->ctl_len, p, keep);
                d->ctl_len += keep;
                d->got += (uint32_t)take;
                break;
            }
            default:
                d->got += (uint32_t)take;
                break;
            }
            p += take;
            n -= take;
            continue;
        }
        /* padding */
        size_t take = d->len - d->got < n ? d->len - d->got : n;
        d->got += (uint32_t)take;
        p += take;
        n -= take;
        if (d->got == d->len) break;
    }
    return true;
}

int tt_http2_feed(tt_http2_conn *c, tt_direction dir, const uint8_t *data, size_t len, uint64_t mono_ns)
{
    if (!c) return -1;
    dir = (tt_direction)(dir & 1);
    h2_dir *d = &c->d[dir];
    if (!alive(d)) return -1;
    d->st.bytes += len;
    size_t i = 0;
    while (i < len && alive(d)) {
        switch (d->state) {
        case D_PREFACE: {
            size_t take = TT_HTTP2_PREFACE_LEN - d->preface_got;
            if (take > len - i) take = len - i;
            for (size_t k = 0; k < take; k++) {
                if (data[i + k] != (uint8_t)TT_HTTP2_PREFACE[d->preface_got + k]) {
                    d->off += k;
                    fail(c, dir, TT_H2_ERR_PREFACE, "not the HTTP/2 client preface", 0, mono_ns);
                    return -1;
                }
            }
            d->preface_got += take;
            d->off += take;
            i += take;
            if (d->preface_got == TT_HTTP2_PREFACE_LEN) d->state = D_HEAD;
            break;
        }
        case D_HEAD: {
            if (d->fh_got == 0) {
                d->frame_off = d->off;
                d->frame_ns = mono_ns;
            }
            size_t take = 9 - d->fh_got;
            if (take > len - i) take = len - i;
            memcpy(d->fh + d->fh_got, data + i, take);
            d->fh_got += take;
            d->off += take;
            i += take;
            if (d->fh_got < 9) break;
            if (!begin_frame(c, dir)) return -1;
            d->state = D_PAYLOAD;
            if (d->len == 0) frame_done(c, dir, mono_ns);
            break;
        }
        case D_PAYLOAD: {
            size_t take = d->len - d->got;
            if (take > len - i) take = len - i;
            d->off += take;
            if (!feed_payload(c, dir, data + i, take, mono_ns)) return -1;
            i += take;
            if (d->got == d->len) frame_done(c, dir, mono_ns);
            break;
        }
        default:
            break;
        }
    }
    return alive(d) ? 0 : -1;
}

void tt_http2_gap(tt_http2_conn *c, tt_direction dir, uint64_t missing, uint64_t mono_ns)
{
    if (!c) return;
    dir = (tt_direction)(dir & 1);
    h2_dir *d = &c->d[dir];
    if (!alive(d)) return;
    snprintf(c->msg, sizeof c->msg, "%llu bytes lost: HTTP/2 framing cannot resynchronise",
             (unsigned long long)missing);
    uint64_t at = d->off;
    d->off += missing;
    fail(c, dir, TT_H2_ERR_GAP, c->msg, at, mono_ns);
}

void tt_http2_eof(tt_http2_conn *c, tt_direction dir, bool clean, uint64_t mono_ns)
{
    if (!c) return;
    dir = (tt_direction)(dir & 1);
    h2_dir *d = &c->d[dir];
    if (!alive(d)) return;
    d->state = D_CLOSED;
    d->dead_how = TT_H2_END_EOF;
    d->dead_off = d->off;
    d->dead_ns = mono_ns;
    d->in_block = false;
    for (size_t i = 0; i < c->nstreams;) {
        h2_stream *s = c->streams[i];
        if (!s->h[dir].ended && end_half(c, s, dir, TT_H2_END_EOF, 0, dir, d->off, mono_ns)) continue;
        i++;
    }
}

bool tt_http2_send_window(const tt_http2_conn *c, tt_direction dir, uint32_t stream_id, int64_t *conn_window,
                          int64_t *stream_window)
{
    if (!c || c->midstream) return false;
    dir = (tt_direction)(dir & 1);
    if (conn_window) *conn_window = c->d[dir].conn_window;
    if (stream_id == 0) {
        if (stream_window) *stream_window = 0;
        return true;
    }
    const h2_stream *s = stream_find(c, stream_id);
    if (!s || s->h[dir].ended) return false;
    if (stream_window) *stream_window = s->h[dir].window;
    return true;
}

const char *tt_http2_frame_name(uint8_t type)
{
    static const char *const names[] = { "DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS",
                                         "PUSH_PROMISE", "PING", "GOAWAY", "WINDOW_UPDATE", "CONTINUATION" };
    return type < 10 ? names[type] : "UNKNOWN";
}

const char *tt_http2_error_name(tt_h2_error e)
{
    switch (e) {
    case TT_H2_ERR_PREFACE: return "PREFACE";
    case TT_H2_ERR_FRAME_SIZE: return "FRAME_SIZE";
    case TT_H2_ERR_PROTOCOL: return "PROTOCOL";
    case TT_H2_ERR_HPACK: return "HPACK";
    case TT_H2_ERR_GAP: return "GAP";
    default: return "NONE";
    }
}

const char *tt_http2_end_name(tt_h2_end e)
{
    switch (e) {
    case TT_H2_END_STREAM: return "END_STREAM";
    case TT_H2_END_RST: return "RST_STREAM";
    case TT_H2_END_GOAWAY: return "GOAWAY";
    case TT_H2_END_GAP: return "GAP";
    case TT_H2_END_ERROR: return "ERROR";
    case TT_H2_END_EOF: return "EOF";
    default: return "LIMIT";
    }
}
