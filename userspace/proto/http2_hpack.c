/* http2_hpack.c - an HTTP/2 direction's header blocks: HPACK through
 * nghttp2's inflater, each block walked first so that a dynamic-table index
 * the inflater does not know is reported unknown instead of breaking it
 * (http2_internal.h, http2.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http2_internal.h"

/* the name given to a literal whose indexed name is unknown; no real field
 * name holds a NUL byte */
static const char placeholder[] = "\0";
#define PLACEHOLDER_LEN 1u

/* ---- HPACK inflaters ---- */

/* nghttp2's inflater, tolerant: table size raised to the cap by a size
 * update of our own, so that every size update up to it is taken. */
int hp_make_tolerant(h2_dir *d)
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

int hp_make_exact(h2_dir *d)
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
void hp_apply_settings(h2_dir *d, uint32_t vmin, uint32_t vlast)
{
    if (d->tolerant) return;
    uint32_t a = vmin < TT_HTTP2_MAX_TABLE_SIZE ? vmin : TT_HTTP2_MAX_TABLE_SIZE;
    uint32_t b = vlast < TT_HTTP2_MAX_TABLE_SIZE ? vlast : TT_HTTP2_MAX_TABLE_SIZE;
    if (vmin < vlast) hp_change(d, a);
    hp_change(d, b);
    d->hp_announced = vlast;
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
int hp_decode(tt_http2_conn *c, h2_dir *d, const uint8_t *b, size_t n)
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

int status_of(const tt_h2_headers *h)
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

