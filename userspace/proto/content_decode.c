#include "proto/content_decode.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct tt_content_decoder {
    z_stream zs;
    bool zs_initialised;
    bool stream_open;    /* inflate is set up for the current body */
    bool member_ended;   /* the last gzip member / deflate stream ended */
    bool fed_any;        /* a compressed byte arrived since begin */
    tt_content_coding coding;
    uint8_t prefix[2];   /* deflate: first bytes held until the wrapper is known */
    size_t prefix_len;
    const char *error;
    uint8_t out[TT_DECODE_PIECE];
};

enum { GZIP_WINDOW = 16 + MAX_WBITS, ZLIB_WINDOW = MAX_WBITS, RAW_WINDOW = -MAX_WBITS };

tt_content_decoder *tt_decoder_new(void)
{
    return calloc(1, sizeof(tt_content_decoder));
}

void tt_decoder_free(tt_content_decoder *d)
{
    if (!d) return;
    if (d->zs_initialised) inflateEnd(&d->zs);
    free(d);
}

static int open_inflate(tt_content_decoder *d, int window_bits)
{
    int rc;
    if (d->zs_initialised) {
        rc = inflateReset2(&d->zs, window_bits);
    } else {
        memset(&d->zs, 0, sizeof d->zs);
        rc = inflateInit2(&d->zs, window_bits);
        d->zs_initialised = rc == Z_OK;
    }
    if (rc != Z_OK) {
        d->error = "cannot set up zlib";
        return -1;
    }
    d->stream_open = true;
    return 0;
}

int tt_decoder_begin(tt_content_decoder *d, tt_content_coding coding)
{
    d->coding = coding;
    d->stream_open = false;
    d->member_ended = false;
    d->fed_any = false;
    d->prefix_len = 0;
    d->error = NULL;
    if (coding == TT_CODING_GZIP) return open_inflate(d, GZIP_WINDOW);
    if (coding == TT_CODING_DEFLATE) return 0; /* opened once two bytes show the wrapper */
    d->error = "unsupported content coding";
    return -1;
}

static bool looks_like_zlib_header(uint8_t cmf, uint8_t flg)
{
    return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && (flg & 0x20) == 0 &&
           ((unsigned)cmf * 256u + flg) % 31u == 0;
}

/* Inflate one span; *used gets the bytes read. 0 or -1 (error set). */
static int inflate_span(tt_content_decoder *d, const uint8_t *in, size_t n,
                        tt_decode_sink sink, void *ctx, size_t *used)
{
    z_stream *zs = &d->zs;
    size_t done = 0;
    *used = 0;
    while (done < n || zs->avail_in > 0) {
        if (zs->avail_in == 0) {
            size_t step = n - done;
            if (step > (size_t)UINT_MAX / 2) step = (size_t)UINT_MAX / 2;
            zs->next_in = (Bytef *)(uintptr_t)(in + done);
            zs->avail_in = (uInt)step;
            done += step;
        }
        if (d->member_ended) {
            if (d->coding != TT_CODING_GZIP) {
                *used = done - zs->avail_in;
                zs->avail_in = 0;
                d->error = "data after the end of the deflate stream";
                return -1;
            }
            if (inflateReset(zs) != Z_OK) {
                *used = done - zs->avail_in;
                zs->avail_in = 0;
                d->error = "cannot reset zlib";
                return -1;
            }
            d->member_ended = false;
        }
        zs->next_out = d->out;
        zs->avail_out = sizeof d->out;
        int rc = inflate(zs, Z_NO_FLUSH);
        size_t produced = sizeof d->out - zs->avail_out;
        if (produced) sink(ctx, d->out, produced);
        if (rc == Z_STREAM_END) {
            d->member_ended = true;
            continue;
        }
        if ((rc == Z_OK || rc == Z_BUF_ERROR) && (zs->avail_out == 0 || zs->avail_in == 0))
            continue; /* more output pending, or more input needed */
        *used = done - zs->avail_in;
        zs->avail_in = 0;
        if (rc == Z_NEED_DICT) d->error = "preset dictionary required";
        else if (rc == Z_OK || rc == Z_BUF_ERROR) d->error = "zlib made no progress";
        else d->error = zs->msg ? zs->msg : "corrupt stream";
        return -1;
    }
    *used = done - zs->avail_in;
    zs->avail_in = 0;
    return 0;
}

int tt_decoder_feed(tt_content_decoder *d, const uint8_t *in, size_t n,
                    tt_decode_sink sink, void *ctx, size_t *consumed)
{
    *consumed = 0;
    if (n == 0) return 0;
    d->fed_any = true;
    if (!d->stream_open) {
        size_t take = 2 - d->prefix_len;
        if (take > n) take = n;
        memcpy(d->prefix + d->prefix_len, in, take);
        d->prefix_len += take;
        if (d->prefix_len < 2) {
            *consumed = n;
            return 0;
        }
        bool wrapped = looks_like_zlib_header(d->prefix[0], d->prefix[1]);
        if (open_inflate(d, wrapped ? ZLIB_WINDOW : RAW_WINDOW) < 0) return -1;
        size_t held = d->prefix_len - take; /* bytes from earlier calls */
        size_t used;
        if (inflate_span(d, d->prefix, d->prefix_len, sink, ctx, &used) < 0) {
            *consumed = used > held ? used - held : 0;
            return -1;
        }
        size_t rest_used;
        int rc = inflate_span(d, in + take, n - take, sink, ctx, &rest_used);
        *consumed = take + rest_used;
        return rc;
    }
    return inflate_span(d, in, n, sink, ctx, consumed);
}

bool tt_decoder_at_end(const tt_content_decoder *d)
{
    return !d->fed_any || d->member_ended;
}

const char *tt_decoder_error(const tt_content_decoder *d)
{
    return d->error ? d->error : "no error";
}
