/* fuzz_chunked.c - libFuzzer harness for chunked bodies.
 * Byte 0 picks the mode and seeds the cut points.
 * Plain mode (bit 7 clear): the fixed head "HTTP/1.1 200 OK\r\n
 * Transfer-Encoding: chunked\r\n\r\n", then the rest of the input as the
 * body, then a clean eof.
 * Coded mode (bit 7 set): the rest of the input is compressed here (gzip,
 * zlib-wrapped or raw deflate, bits 5-6), sent in chunks whose sizes follow
 * from the seed, with one byte of the compressed stream damaged when bit 4
 * is set; undamaged, the decoded body must equal the input.
 * Always: runs cut at different points trace exactly like the whole run,
 * and the message ends. */
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "http1_trace.h"

static const char chunked_head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

static void check_runs(const uint8_t *in, size_t n, uint32_t seed, uint64_t *decoded)
{
    fz_run r = { .role = TT_HTTP_RESPONSE, .gap_at = SIZE_MAX, .eof = 1 };
    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    size_t ncuts = fz_make_cuts(seed, n, cuts, n + 1);
    uint64_t decoded_cut = 0;
    unsigned ends = 0;
    fz_text whole, cut;
    fz_run_trace(&r, in, n, NULL, 0, &whole, decoded, &ends);
    fz_run_trace(&r, in, n, cuts, ncuts, &cut, &decoded_cut, NULL);
    fz_compare(&whole, &cut);
    if (*decoded != decoded_cut) abort();
    if (ends == 0) abort(); /* the chunked message always ends (more may follow it) */
    free(whole.s);
    free(cut.s);
    free(cuts);
}

static size_t compress_body(const uint8_t *body, size_t n, int window_bits, uint8_t **out)
{
    z_stream zs = { 0 };
    if (deflateInit2(&zs, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t cap = deflateBound(&zs, (uLong)n) + 64;
    *out = malloc(cap);
    zs.next_in = (Bytef *)(uintptr_t)body;
    zs.avail_in = (uInt)n;
    zs.next_out = *out;
    zs.avail_out = (uInt)cap;
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END) abort();
    size_t len = cap - zs.avail_out;
    deflateEnd(&zs);
    return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t mode = data[0];
    const uint8_t *body = data + 1;
    size_t body_len = size - 1;
    uint32_t seed = mode * 2654435761u + (uint32_t)size;
    uint64_t decoded = 0;

    if (!(mode & 0x80)) {
        size_t hl = sizeof chunked_head - 1, n = hl + body_len;
        uint8_t *in = malloc(n);
        memcpy(in, chunked_head, hl);
        memcpy(in + hl, body, body_len);
        check_runs(in, n, seed, &decoded);
        if (decoded > body_len) abort();
        free(in);
        return 0;
    }

    static const int windows[] = { 16 + MAX_WBITS, MAX_WBITS, -MAX_WBITS, 16 + MAX_WBITS };
    static const char *const names[] = { "gzip", "deflate", "deflate", "x-gzip" };
    int kind = (mode >> 5) & 3;
    uint8_t *z;
    size_t zlen = compress_body(body, body_len, windows[kind], &z);
    bool damaged = (mode & 0x10) && zlen > 0;
    if (damaged) z[seed % zlen] ^= (uint8_t)(1u << (seed % 8));

    fz_text msg = { 0 };
    fz_printf(&msg, "HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nTransfer-Encoding: chunked\r\n\r\n", names[kind]);
    uint32_t x = seed | 1;
    for (size_t at = 0; at < zlen;) {
        x = x * 1103515245u + 12345u;
        size_t piece = 1 + (x >> 8) % 300;
        if (piece > zlen - at) piece = zlen - at;
        fz_printf(&msg, "%zx\r\n", piece);
        fz_add(&msg, z + at, piece);
        fz_add(&msg, "\r\n", 2);
        at += piece;
    }
    fz_add(&msg, "0\r\n\r\n", 5);
    check_runs((const uint8_t *)msg.s, msg.len, seed, &decoded);
    if (!damaged && decoded != body_len) abort();
    free(msg.s);
    free(z);
    return 0;
}
