/* h2_exchange.h - the HTTP/2 exchange the tracker tests share
 * (test_tracker_h2.c, test_tracker_h2_mid.c): writes of both directions
 * built from frames (header blocks from nghttp2's HPACK deflater), each at
 * an instant chosen here, and how they are fed to the connection tracker
 * as chunks of one connection. */
#ifndef TT_TEST_H2_EXCHANGE_H
#define TT_TEST_H2_EXCHANGE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "h2_script.h"
#include "proto/http2.h"
#include "timeline/conn_tracker.h"

/* ---- the exchange ---- */

#define MS 1000000ull
#define CHAT_BODY "{\"model\":\"m-%s\",\"stream\":true,\"max_tokens\":2}"

static const char *const RESP_SSE[] = {":status", "200", "content-type", "text/event-stream", NULL};
static const char *const RESP_NDJSON[] = {":status", "200", "content-type", "application/x-ndjson", NULL};

static inline void chat_request(h2_script *s, h2_write *w, uint32_t sid, const char *path, const char *id)
{
    const char *nv[] = {":method", "POST", ":scheme", "http", ":authority", "localhost:8000", ":path", path,
                        "content-type", "application/json", "x-request-id", id, NULL};
    h2_headers(s, w, sid, 0, nv);
    char body[128];
    snprintf(body, sizeof body, CHAT_BODY, id);
    h2_data(w, sid, TT_H2_FLAG_END_STREAM, body);
}

static const char *tok(const char *word)
{
    static char buf[8][160];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 160, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n", word);
    return b;
}

/* Instants (ms): the server's SETTINGS comes before the client's preface;
 * streams 1 and 3 (chat, SSE) interleave; stream 1's second token spans
 * two DATA frames written 1 ms apart; stream 5 (ollama, NDJSON) has two
 * lines in one frame; stream 7 is reset by the client mid-response. */
static inline void build(h2_script *s)
{
    h2_script_init(s);
    h2_write *w = h2_write_at(s, TT_DIR_S2C, 1 * MS);
    h2_frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    w = h2_write_at(s, TT_DIR_C2S, 2 * MS);
    h2_put(w, TT_HTTP2_PREFACE, TT_HTTP2_PREFACE_LEN);
    h2_frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    chat_request(s, w, 1, "/v1/chat/completions", "r1");
    w = h2_write_at(s, TT_DIR_S2C, 3 * MS);
    h2_frame(w, TT_H2_SETTINGS, TT_H2_FLAG_ACK, 0, NULL, 0);
    w = h2_write_at(s, TT_DIR_C2S, 4 * MS);
    h2_frame(w, TT_H2_SETTINGS, TT_H2_FLAG_ACK, 0, NULL, 0);
    chat_request(s, w, 3, "/v1/chat/completions", "r3");
    w = h2_write_at(s, TT_DIR_C2S, 5 * MS);
    {
        const char *nv[] = {":method", "POST", ":scheme", "http", ":authority", "localhost:8000", ":path",
                            "/api/generate", "x-request-id", "r5", NULL};
        h2_headers(s, w, 5, 0, nv);
        h2_data(w, 5, TT_H2_FLAG_END_STREAM, "{\"model\":\"m-r5\",\"prompt\":\"x\"}");
    }
    chat_request(s, h2_write_at(s, TT_DIR_C2S, 6 * MS), 7, "/v1/chat/completions", "r7");

    w = h2_write_at(s, TT_DIR_S2C, 10 * MS);
    h2_headers(s, w, 1, 0, RESP_SSE);
    h2_headers(s, w, 3, 0, RESP_SSE);
    h2_data(h2_write_at(s, TT_DIR_S2C, 20 * MS), 1, 0, tok("a"));   /* r1 token 1 at 20 */
    h2_data(h2_write_at(s, TT_DIR_S2C, 21 * MS), 3, 0, tok("b"));   /* r3 token 1 at 21 */
    h2_headers(s, h2_write_at(s, TT_DIR_S2C, 22 * MS), 5, 0, RESP_NDJSON);
    h2_data(h2_write_at(s, TT_DIR_S2C, 23 * MS), 5, 0,
         "{\"model\":\"m\",\"response\":\"x\",\"done\":false}\n{\"model\":\"m\",\"response\":\"y\",\"done\":false}\n");
    const char *t2 = tok("c");
    char half[160];
    size_t h = strlen(t2) / 2;
    memcpy(half, t2, h);
    half[h] = 0;
    h2_data(h2_write_at(s, TT_DIR_S2C, 30 * MS), 1, 0, half);     /* r1 token 2 begins at 30 */
    w = h2_write_at(s, TT_DIR_S2C, 31 * MS);
    h2_data(w, 1, 0, t2 + h);                                  /* ... and is whole at 31 */
    h2_data(w, 3, 0, tok("d"));                                /* r3 token 2 at 31 */
    h2_headers(s, h2_write_at(s, TT_DIR_S2C, 32 * MS), 7, 0, RESP_SSE);
    h2_data(h2_write_at(s, TT_DIR_S2C, 33 * MS), 7, 0, tok("e"));   /* r7 token 1 at 33 */
    h2_data(h2_write_at(s, TT_DIR_S2C, 40 * MS), 1, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");
    h2_data(h2_write_at(s, TT_DIR_S2C, 41 * MS), 3, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");
    h2_data(h2_write_at(s, TT_DIR_S2C, 42 * MS), 5, TT_H2_FLAG_END_STREAM,
         "{\"model\":\"m\",\"response\":\"\",\"done\":true,\"eval_count\":2}\n");
    uint8_t cancel[4] = {0, 0, 0, 8};
    h2_frame(h2_write_at(s, TT_DIR_C2S, 43 * MS), TT_H2_RST_STREAM, 0, 7, cancel, 4);
}


#endif
