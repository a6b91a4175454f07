#include "proto/http2.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http2_internal.h"

/* ---- defaults for callbacks ---- */

static void ign_headers(void *ud, const tt_h2_headers *h) {}
static void ign_data(void *ud, uint32_t s, tt_direction d, const uint8_t *p, size_t n, uint64_t o, uint64_t ns) {}
static void ign_end(void *ud, const tt_h2_stream_end *e) {}
static void ign_error(void *ud, tt_direction d, tt_h2_error c, const char *m, uint64_t o) {}




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

uint64_t tt_http2_offset(const tt_http2_conn *c, tt_direction dir)
{
    return c ? c->d[dir & 1].off : 0;
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
