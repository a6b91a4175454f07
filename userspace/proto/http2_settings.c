/* http2_settings.c - SETTINGS frames: their entries, and what a
 * direction's receiver announced applied at its ACK; the HTTP2-Settings of
 * an h2c upgrade (http2_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http2_internal.h"

/* ---- settings ---- */

void apply_settings(tt_http2_conn *c, tt_direction dir, const pending_settings *p)
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

void collect_settings(const tt_h2_setting *s, size_t n, pending_settings *p)
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

size_t parse_settings(const uint8_t *b, size_t n, tt_h2_setting *out)
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
