/* test_http2.c - the passive HTTP/2 framing parser (proto/http2.c):
 * golden cases (tests/golden/http2/). A script of both directions' bytes
 * (h2_gen.h) run whole (one feed per record), split at every byte and byte
 * by byte: identical traces. The scripts are made by the generator below
 * (H2_UPDATE=1 rewrites the golden files and the fuzzer's seeds from it:
 * review the diff), header blocks by nghttp2's own deflater (Huffman,
 * dynamic table). A real exchange and HPACK against the deflater are
 * test_http2_exchange.c's; instants, windows and bounds
 * test_http2_bounds.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "golden.h"
#include "h2_gen.h"
#include "proto/http2.h"


static void case_prior_sse(gen *g)
{
    g_init(g, "prior_knowledge_sse", "h2c with prior knowledge: preface, SETTINGS both ways and their ACKs, a POST "
           "answered with an SSE stream in DATA frames, then a GET on stream 3 reusing the dynamic tables", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, H2_REQ);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_BODY);
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_SSE);
    for (int i = 0; i < 3; i++) g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[i]);
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, "");
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 3, 0, H2_RESP_JSON);
    g_dataframe(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, "{\"data\":[{\"id\":\"m\"}]}");
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_continuation(gen *g)
{
    g_init(g, "continuation", "header blocks split over HEADERS and CONTINUATION frames; trailers in a HEADERS "
           "with END_STREAM, also continued", MODE_PRIOR);
    g_open(g);
    hopts o = { .cont = 9, .pad = -1 };
    g_headers_opt(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET, &o);
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_JSON);
    g_dataframe(g, TT_DIR_S2C, 1, 0, "{\"ok\":true}");
    static const char *const trailers[] = { "grpc-status", "0", "grpc-message", "all good", "x-usage", "42", NULL };
    o.cont = 5;
    g_headers_opt(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, trailers, &o);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_padding(gen *g)
{
    g_init(g, "padding", "PADDED DATA and HEADERS (with PRIORITY), padding removed; an empty padded DATA ends the "
           "stream", MODE_PRIOR);
    g_open(g);
    hopts o = { .pad = 7, .prio = true, .dep = 0, .weight = 15, .excl = true };
    g_headers_opt(g, TT_DIR_C2S, 1, 0, H2_REQ, &o);
    g_padded_data(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_BODY, 20);
    o = (hopts){ .pad = 0 };
    g_headers_opt(g, TT_DIR_S2C, 1, 0, H2_RESP_SSE, &o);
    g_padded_data(g, TT_DIR_S2C, 1, 0, H2_EV[0], 3);
    g_padded_data(g, TT_DIR_S2C, 1, 0, H2_EV[1], 0);
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[2]);
    g_padded_data(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, "", 12);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_interleaved(gen *g)
{
    g_init(g, "interleaved_streams", "two streams whose responses interleave DATA frames", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, H2_REQ);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_BODY);
    g_headers(g, TT_DIR_C2S, 3, 0, H2_REQ);
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_SSE);
    g_dataframe(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, "{\"model\":\"m\",\"stream\":true}");
    g_headers(g, TT_DIR_S2C, 3, 0, H2_RESP_SSE);
    for (int i = 0; i < 3; i++) {
        g_dataframe(g, TT_DIR_S2C, 1, i == 2 ? TT_H2_FLAG_END_STREAM : 0, H2_EV[i]);
        g_dataframe(g, TT_DIR_S2C, 3, i == 2 ? TT_H2_FLAG_END_STREAM : 0, H2_EV[i]);
    }
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_rst(gen *g)
{
    g_init(g, "rst_stream", "the client cancels stream 1 mid-stream (RST_STREAM CANCEL); the server's DATA already "
           "in flight is late and ignored; stream 3 goes on", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_SSE);
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[0]);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_RST_STREAM, 1, 8);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[1]);
    g_headers(g, TT_DIR_S2C, 3, 0, H2_RESP_JSON);
    g_dataframe(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, "{}");
    g_u32_frame(g, TT_DIR_S2C, TT_H2_RST_STREAM, 3, 0); /* after the end: late */
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_goaway(gen *g)
{
    g_init(g, "goaway", "the server's GOAWAY (last stream 1): stream 3 was not processed and ends GOAWAY, stream 1 "
           "completes", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_SSE);
    g_goaway(g, TT_DIR_S2C, 1, 0, "graceful shutdown");
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[0]);
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, H2_EV[2]);
    g_goaway(g, TT_DIR_C2S, 0, 0, "");
    g_eof(g, TT_DIR_S2C);
    g_eof(g, TT_DIR_C2S);
}

static void case_window_ping(gen *g)
{
    g_init(g, "window_update_ping", "WINDOW_UPDATE on the connection and the stream (counted, timed, windows "
           "estimated), PING and its ACK, PRIORITY, and an unknown frame type ignored", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, H2_REQ);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_BODY);
    g_u32_frame(g, TT_DIR_S2C, TT_H2_WINDOW_UPDATE, 0, 1000);
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_SSE);
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[0]);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 0, 1 << 20);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 1, 54);
    g_frame(g, TT_DIR_C2S, TT_H2_PING, 0, 0, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    g_frame(g, TT_DIR_S2C, TT_H2_PING, TT_H2_FLAG_ACK, 0, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    g_frame(g, TT_DIR_C2S, TT_H2_PRIORITY, 0, 1, "\x00\x00\x00\x00\x10", 5);
    g_frame(g, TT_DIR_S2C, 0x0b, 0xff, 1, "extension", 9);
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[1]);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 1, 51);
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, H2_EV[2]);
    g_u32_frame(g, TT_DIR_C2S, TT_H2_WINDOW_UPDATE, 1, 14); /* stream ended: no stream window */
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

/* Many distinct headers, so that a 4096-byte table would have evicted the first. */
static void many_headers(const char **nv, char (*vals)[64], int n, const char *status)
{
    int k = 0;
    nv[k++] = ":status";
    nv[k++] = status;
    for (int i = 0; i < n; i++) {
        snprintf(vals[i], 64, "value-%02d-%s", i, "0123456789abcdef0123456789abcdef0123");
        nv[k++] = i % 2 ? "x-meta-odd" : "x-meta-even";
        nv[k++] = vals[i];
    }
    nv[k] = NULL;
}

static void case_table_size(gen *g)
{
    g_init(g, "table_size_change", "SETTINGS_HEADER_TABLE_SIZE: the client announces 8192, the server acknowledges "
           "and its encoder grows its table (size update, then entries past 4096 bytes still referenced); the "
           "server announces 256, the client acknowledges and its next block starts with the size update. Each "
           "inflater takes the size its receiver announced", MODE_PRIOR);
    g_open(g);
    static const uint32_t big[] = { TT_H2_SETTINGS_HEADER_TABLE_SIZE, 8192 };
    g_settings(g, TT_DIR_C2S, big, 1);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_ack(g, TT_DIR_S2C);
    assert_int_equal(nghttp2_hd_deflate_change_table_size(g->def[TT_DIR_S2C], 8192), 0);
    const char *nv[2 + 2 * 60 + 1];
    char vals[60][64];
    many_headers(nv, vals, 60, "200");
    g_headers(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, nv);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, nv); /* all from the 8 KiB table */
    static const uint32_t small[] = { TT_H2_SETTINGS_HEADER_TABLE_SIZE, 256 };
    g_settings(g, TT_DIR_S2C, small, 1);
    g_ack(g, TT_DIR_C2S);
    assert_int_equal(nghttp2_hd_deflate_change_table_size(g->def[TT_DIR_C2S], 256), 0);
    g_headers(g, TT_DIR_C2S, 5, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 5, TT_H2_FLAG_END_STREAM, H2_RESP_JSON);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_table_size_missing_update(gen *g)
{
    g_init(g, "table_size_missing_update", "the client lowers SETTINGS_HEADER_TABLE_SIZE to 0 and the server "
           "acknowledges, but its next header block does not start with the required size update: an HPACK error "
           "on the server's direction (and only there)", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    static const uint32_t zero[] = { TT_H2_SETTINGS_HEADER_TABLE_SIZE, 0 };
    g_settings(g, TT_DIR_C2S, zero, 1);
    g_headers(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, H2_RESP_JSON); /* before the ACK: fine */
    g_ack(g, TT_DIR_S2C);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, H2_RESP_JSON);
    g_headers(g, TT_DIR_C2S, 5, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_midstream(gen *g)
{
    g_init(g, "midstream_unknown_index", "a capture that starts mid-connection: header blocks referencing dynamic "
           "entries from before it give unknown fields (an unknown name keeps its value), entries inserted after "
           "it decode; stream 3, begun before, is first seen by its DATA (still timed)", MODE_MIDSTREAM);
    /* before the capture: both encoders fill their tables */
    static const char *const resp1[] = { ":status", "200", "content-type", "text/event-stream", "x-request-id", "a1",
                                         "server", "tokentap-serve", NULL };
    bytes b = g_hpack(g, TT_DIR_C2S, H2_REQ);
    free(b.p);
    b = g_hpack(g, TT_DIR_S2C, resp1);
    free(b.p);
    /* the capture */
    g_dataframe(g, TT_DIR_S2C, 3, 0, H2_EV[1]);
    g_headers(g, TT_DIR_C2S, 5, 0, H2_REQ);
    g_dataframe(g, TT_DIR_C2S, 5, TT_H2_FLAG_END_STREAM, H2_BODY);
    static const char *const resp2[] = { ":status", "200", "content-type", "text/event-stream", "x-request-id", "b2",
                                         "server", "tokentap-serve", "x-new", "fresh", NULL };
    g_headers(g, TT_DIR_S2C, 5, 0, resp2);
    g_dataframe(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, H2_EV[2]);
    g_dataframe(g, TT_DIR_S2C, 5, 0, H2_EV[0]);
    g_dataframe(g, TT_DIR_S2C, 5, TT_H2_FLAG_END_STREAM, H2_EV[2]);
    g_headers(g, TT_DIR_C2S, 7, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 7, TT_H2_FLAG_END_STREAM, resp2); /* b2 and x-new now known */
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_frame_too_large(gen *g)
{
    g_init(g, "frame_too_large", "a DATA frame over SETTINGS_MAX_FRAME_SIZE (16384): a connection error in the "
           "server's direction; the stream's response half ends ERROR, the client's direction goes on", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_SSE);
    bytes f = { 0 };
    h2_frame_head(&f, 16385, TT_H2_DATA, 0, 1);
    put(&f, "data: x\n\n", 9);
    g_data(g, TT_DIR_S2C, f.p, f.n);
    free(f.p);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_bad_preface(gen *g)
{
    g_init(g, "bad_preface", "HTTP/1.1 where the client preface should be: PREFACE error; the server's direction "
           "goes on", MODE_PRIOR);
    g_data(g, TT_DIR_C2S, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
    g_settings(g, TT_DIR_S2C, H2_S_SETTINGS, 2);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_server_preface(gen *g)
{
    g_init(g, "bad_server_preface", "the server's first frame is not SETTINGS", MODE_PRIOR);
    g_preface(g);
    g_settings(g, TT_DIR_C2S, H2_C_SETTINGS, 3);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, H2_RESP_JSON);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_upgrade(gen *g)
{
    g_init(g, "h2c_upgrade", "h2c upgrade from HTTP/1.1: HTTP2-Settings (HEADER_TABLE_SIZE 8192, ENABLE_PUSH 0) "
           "applies to the server's encoder at once; stream 1's response half only", MODE_UPGRADE);
    /* base64url of 00 01 00 00 20 00 | 00 02 00 00 00 00 */
    snprintf(g->cfg.upgrade, sizeof g->cfg.upgrade, "%s", "AAEAACAAAAIAAAAA");
    g_preface(g);
    g_settings(g, TT_DIR_C2S, H2_C_SETTINGS, 3);
    g_settings(g, TT_DIR_S2C, H2_S_SETTINGS, 2);
    g_ack(g, TT_DIR_S2C);
    assert_int_equal(nghttp2_hd_deflate_change_table_size(g->def[TT_DIR_S2C], 8192), 0);
    const char *nv[2 + 2 * 60 + 1];
    char vals[60][64];
    many_headers(nv, vals, 60, "200");
    g_headers(g, TT_DIR_S2C, 1, 0, nv);
    g_ack(g, TT_DIR_C2S);
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[0]);
    g_headers(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 3, TT_H2_FLAG_END_STREAM, nv);
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, H2_EV[2]);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_gap(gen *g)
{
    g_init(g, "gap", "bytes lost in the server's direction: abandoned (GAP), its open halves end GAP, and so does "
           "the response half of a stream opened later; the client's direction goes on", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_SSE);
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[0]);
    g_op(g, TT_DIR_S2C, K_GAP, 1400);
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[1]);
    g_headers(g, TT_DIR_C2S, 3, 0, H2_REQ);
    g_dataframe(g, TT_DIR_C2S, 3, TT_H2_FLAG_END_STREAM, H2_BODY);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_eof_open(gen *g)
{
    g_init(g, "eof_open_streams", "both directions end with streams open and a frame half received: EOF ends",
           MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, H2_REQ);
    g_dataframe(g, TT_DIR_C2S, 1, 0, "{\"model\":");
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_SSE);
    g_dataframe(g, TT_DIR_S2C, 1, 0, H2_EV[0]);
    g_data(g, TT_DIR_S2C, "\x00\x00\x30\x00\x00\x00\x00\x00\x01" "data: {", 16);
    g_op(g, TT_DIR_C2S, K_RESET, 0);
    g_eof(g, TT_DIR_S2C);
}

static void case_continuation_broken(gen *g)
{
    g_init(g, "continuation_interrupted", "a HEADERS without END_HEADERS followed by DATA: PROTOCOL error",
           MODE_PRIOR);
    g_open(g);
    bytes blk = g_hpack(g, TT_DIR_C2S, H2_REQ);
    g_frame(g, TT_DIR_C2S, TT_H2_HEADERS, 0, 1, blk.p, 10);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_BODY);
    free(blk.p);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_even_stream(gen *g)
{
    g_init(g, "client_even_stream", "a client stream with an even id: PROTOCOL error", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 2, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_idle_data(gen *g)
{
    g_init(g, "data_idle_stream", "the server's DATA on a stream the client never opened: PROTOCOL error (the "
           "capture began at the start)", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, 0, H2_REQ);
    g_dataframe(g, TT_DIR_S2C, 5, 0, H2_EV[0]);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_push(gen *g)
{
    g_init(g, "push_promise", "PUSH_PROMISE: the promised request decoded (HPACK stays in step), its request half "
           "ends at once, the pushed response on stream 2", MODE_PRIOR);
    g_open(g);
    g_headers(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, H2_REQ_GET);
    static const char *const promised[] = { ":method", "GET", ":scheme", "http", ":authority", "localhost:8000",
                                            ":path", "/style.css", NULL };
    bytes blk = g_hpack(g, TT_DIR_S2C, promised);
    bytes pl = { 0 };
    put32(&pl, 2);
    put(&pl, blk.p, blk.n);
    g_frame(g, TT_DIR_S2C, TT_H2_PUSH_PROMISE, TT_H2_FLAG_END_HEADERS, 1, pl.p, pl.n);
    free(pl.p);
    free(blk.p);
    g_headers(g, TT_DIR_S2C, 1, 0, H2_RESP_JSON);
    g_headers(g, TT_DIR_S2C, 2, 0, H2_RESP_JSON);
    g_dataframe(g, TT_DIR_S2C, 2, TT_H2_FLAG_END_STREAM, "body{}");
    g_dataframe(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, "{}");
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_interim(gen *g)
{
    g_init(g, "interim_100_continue", "a 100 (interim) then the final 200 on the same stream", MODE_PRIOR);
    g_open(g);
    static const char *const req[] = { ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/up",
                                       "expect", "100-continue", NULL };
    static const char *const cont[] = { ":status", "100", NULL };
    g_headers(g, TT_DIR_C2S, 1, 0, req);
    g_headers(g, TT_DIR_S2C, 1, 0, cont);
    g_dataframe(g, TT_DIR_C2S, 1, TT_H2_FLAG_END_STREAM, "payload");
    g_headers(g, TT_DIR_S2C, 1, TT_H2_FLAG_END_STREAM, H2_RESP_JSON);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

static void case_hpack_corrupt(gen *g)
{
    g_init(g, "hpack_corrupt", "a header block whose Huffman string is invalid: HPACK error", MODE_PRIOR);
    g_open(g);
    /* indexed :method GET, then a literal without indexing, new name, Huffman name of
     * two bytes 0xff 0xff (an EOS prefix: invalid) */
    static const uint8_t blk[] = { 0x82, 0x00, 0x82, 0xff, 0xff, 0x01, 'x' };
    g_frame(g, TT_DIR_C2S, TT_H2_HEADERS, TT_H2_FLAG_END_HEADERS | TT_H2_FLAG_END_STREAM, 1, blk, sizeof blk);
    g_eof(g, TT_DIR_C2S);
    g_eof(g, TT_DIR_S2C);
}

typedef void (*case_fn)(gen *g);
static const case_fn cases[] = {
    case_prior_sse, case_continuation, case_padding, case_interleaved, case_rst, case_goaway, case_window_ping,
    case_table_size, case_table_size_missing_update, case_midstream, case_frame_too_large, case_bad_preface,
    case_server_preface, case_upgrade, case_gap, case_eof_open, case_continuation_broken, case_even_stream,
    case_idle_data, case_push, case_interim, case_hpack_corrupt,
};
#define N_CASES (sizeof cases / sizeof cases[0])

static void escape_input(FILE *f, const uint8_t *sc, size_t n)
{
    size_t i = 0;
    while (i + 3 <= n) {
        size_t len = (size_t)sc[i + 1] << 8 | sc[i + 2];
        bool data = ((sc[i] >> 1) & 3) == K_DATA;
        fprintf(f, "\\x%02x\\x%02x\\x%02x", sc[i], sc[i + 1], sc[i + 2]);
        i += 3;
        if (data) {
            for (size_t k = 0; k < len; k++) {
                uint8_t ch = sc[i + k];
                if (ch == '\\') fputs("\\\\", f);
                else if (ch == '\r') fputs("\\r", f);
                else if (ch == '\n') fputs("\\n", f);
                else if (ch >= 0x20 && ch < 0x7f) fputc(ch, f);
                else fprintf(f, "\\x%02x", ch);
                if ((k + 1) % 96 == 0 && k + 1 < len) fputs("\\\n", f);
            }
            i += len;
        }
        fputc('\n', f);
    }
}

/* H2_UPDATE=1: write every generated case as a golden file (input and the
 * whole run's trace) and as a fuzzer seed. Review the diff before keeping it. */
static void write_goldens(void)
{
    mkdir("tests/golden/http2", 0755);
    mkdir("tests/fuzz/corpus/fuzz_http2", 0755);
    for (size_t i = 0; i < N_CASES; i++) {
        gen g;
        cases[i](&g);
        char path[256];
        snprintf(path, sizeof path, "tests/golden/http2/%s.golden", g.name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "# %s\n# Generated by tests/unit/test_http2.c (H2_UPDATE=1): header blocks from nghttp2's "
                   "deflater.\n# Input records: op (dir | kind << 1; kind 0 data, 1 gap, 2 eof, 3 reset), "
                   "16-bit length, data.\n=== meta\nmode=%s\n",
                g.title, g.cfg.mode == MODE_PRIOR ? "prior" : g.cfg.mode == MODE_MIDSTREAM ? "midstream" : "upgrade");
        if (g.cfg.mode == MODE_UPGRADE) fprintf(f, "upgrade=%s\n", g.cfg.upgrade);
        fprintf(f, "=== input\n");
        escape_input(f, g.sc.p, g.sc.n);
        char *t = h2_run_script(&g.cfg, g.sc.p, g.sc.n, 0, false);
        fprintf(f, "=== expect\n%s", t);
        free(t);
        fclose(f);
        snprintf(path, sizeof path, "tests/fuzz/corpus/fuzz_http2/%s", g.name);
        f = fopen(path, "wb");
        assert_non_null(f);
        uint8_t head[2] = { (uint8_t)g.cfg.mode, 0 };
        fwrite(head, 1, 2, f);
        fwrite(g.sc.p, 1, g.sc.n, f);
        fclose(f);
        g_free(&g);
    }
}

static void test_golden_cases(void **state)
{
    if (getenv("H2_UPDATE")) write_goldens();
    size_t n = 0;
    char **files = tt_golden_list("tests/golden/http2", &n);
    assert_true(n >= N_CASES);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        tt_golden g;
        assert_int_equal(tt_golden_load(files[i], &g), 0);
        run_cfg cfg = { 0 };
        char buf[256];
        const char *mode = tt_golden_meta(&g, "mode", buf, sizeof buf);
        assert_non_null(mode);
        cfg.mode = strcmp(mode, "midstream") == 0 ? MODE_MIDSTREAM : strcmp(mode, "upgrade") == 0 ? MODE_UPGRADE
                                                                                                   : MODE_PRIOR;
        const char *up = tt_golden_meta(&g, "upgrade", buf, sizeof buf);
        if (up) snprintf(cfg.upgrade, sizeof cfg.upgrade, "%s", up);
        if (getenv("H2_PRINT")) {
            char *t = h2_run_script(&cfg, g.input, g.input_len, 0, false);
            fprintf(stderr, "=== %s\n%s", files[i], t);
            free(t);
        }
        bad += h2_check_all_cuts(&cfg, g.input, g.input_len, g.expect, g.path);
        tt_golden_free(&g);
    }
    tt_golden_list_free(files, n);
    assert_int_equal(bad, 0);
}

/* The generated cases decode to what was deflated, through any cut
 * (independent of the golden files: a different nghttp2 may deflate
 * differently). */
static void test_generated_cases_cut_invariant(void **state)
{
    int bad = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        gen g;
        cases[i](&g);
        char *whole = h2_run_script(&g.cfg, g.sc.p, g.sc.n, 0, false);
        bad += h2_check_all_cuts(&g.cfg, g.sc.p, g.sc.n, whole, g.name);
        free(whole);
        g_free(&g);
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_cases),
        cmocka_unit_test(test_generated_cases_cut_invariant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
