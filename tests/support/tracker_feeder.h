/* tracker_feeder.h - hand-made chunks for the connection tracker's tests:
 * one connection's two directions fed at chosen instants (the stream
 * offsets kept here), and an OpenAI chat request and its streamed events.
 * Header-only. */
#ifndef TT_TRACKER_FEEDER_H
#define TT_TRACKER_FEEDER_H

#include <stdio.h>
#include <string.h>

#include "timeline/conn_tracker.h"

typedef struct feeder {
    tt_tracker *t;
    tt_conn_info conn;
    uint64_t off[2];
} feeder;

static inline void feeder_init(feeder *f, uint64_t conn_id)
{
    memset(f, 0, sizeof *f);
    f->t = tt_tracker_new(NULL);
    f->conn.conn_id = conn_id;
    f->conn.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
    f->conn.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
}

static inline void chunk(feeder *f, tt_direction dir, tt_chunk_kind kind, const char *data, size_t len, uint64_t ns)
{
    tt_chunk c = {.conn = &f->conn, .vantage = TT_VANTAGE_WIRE, .dir = dir, .kind = kind, .mono_ns = ns,
                  .offset = f->off[dir], .data = (const uint8_t *)data, .len = len};
    tt_tracker_chunk(f->t, &c);
    if (kind == TT_CHUNK_DATA || kind == TT_CHUNK_GAP) f->off[dir] += len;
}

static inline void send_str(feeder *f, tt_direction dir, const char *s, uint64_t ns)
{
    chunk(f, dir, TT_CHUNK_DATA, s, strlen(s), ns);
}

static inline void finish(feeder *f, uint64_t ns)
{
    chunk(f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, ns);
    chunk(f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, ns);
    chunk(f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, ns);
    tt_tracker_sort(f->t);
}

#define CHAT_REQ_BODY "{\"model\":\"m\",\"stream\":true,\"max_tokens\":3,\"stream_options\":{\"include_usage\":true}}"

static inline char *chat_request(const char *id)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id: %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
             id, strlen(CHAT_REQ_BODY), CHAT_REQ_BODY);
    return buf;
}


static const char *const chat_events[] = {
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"length\"}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3}}\n\n",
    "data: [DONE]\n\n",
};
#define N_CHAT (sizeof chat_events / sizeof *chat_events)

#endif
