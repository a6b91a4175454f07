/* http1_internal.h - the HTTP/1.x parser's state, shared by http1.c
 * (bodies, chunked framing, feeding, gaps and ends) and
 * http1_head_states.c (what comes before a body: the bytes between
 * messages, the head, the search for a start line after lost bytes, and
 * the responses a request stream announced). Internal to proto/. */
#ifndef TT_HTTP1_INTERNAL_H
#define TT_HTTP1_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/content_decode.h"
#include "proto/http1.h"
#include "proto/http1_head.h"

#define CHUNK_SIZE_LIMIT ((uint64_t)1 << 62)
#define CHUNK_LINE_LIMIT 4096u
#define TRAILER_LIMIT TT_HTTP1_MAX_HEAD
#define METHOD_LIMIT 32u
#define EXPECT_QUEUE_LIMIT 65536u

enum parse_state {
    ST_IDLE,          /* between messages: skipping empty lines */
    ST_HEAD,          /* buffering a head until its blank line */
    ST_BODY_LENGTH,   /* Content-Length body, `remaining` left */
    ST_BODY_CLOSE,    /* close-delimited body */
    ST_CHUNK_SIZE,    /* hex digits of a chunk size */
    ST_CHUNK_SIZE_WS, /* blanks after the digits */
    ST_CHUNK_EXT,     /* chunk extensions up to LF */
    ST_CHUNK_SIZE_LF, /* CR seen after the size line */
    ST_CHUNK_DATA,    /* chunk data, `remaining` left */
    ST_CHUNK_DATA_END,/* CRLF after chunk data */
    ST_CHUNK_DATA_LF,
    ST_TRAILER_START, /* start of a trailer line (or the final blank line) */
    ST_TRAILER_LINE,
    ST_TRAILER_END_LF,
    ST_RESYNC,        /* bytes were lost: looking for the next start line */
    ST_DEAD,          /* error reported: input ignored */
    ST_CLOSED         /* eof seen: input ignored */
};

enum expect_kind { EXPECT_BODY = 0, EXPECT_NO_BODY, EXPECT_CONNECT };

struct tt_http1_parser {
    tt_http_role role;
    tt_http_callbacks cb;
    void *ud;
    enum parse_state state;
    uint64_t off; /* stream offset of the next byte fed */

    uint8_t *head_buf;
    size_t head_len, head_cap, line_start;
    bool start_checked;
    bool head_from_resync; /* the head being buffered was found by resynchronising */
    tt_http_head head;
    tt_http_header headers[TT_HTTP1_MAX_HEADERS];

    bool in_message; /* head reported, on_end not yet */
    uint64_t remaining;
    uint64_t chunk_size;
    unsigned chunk_digits;
    size_t line_bytes;
    uint64_t body_off, body_bytes, wire_bytes, gap_bytes;
    uint64_t last_off, last_ns;

    bool decoding, decode_lost;
    tt_content_decoder *decoder;
    uint64_t decode_ns;

    uint8_t *expect;
    size_t expect_first, expect_count, expect_cap;

    /* ST_RESYNC: the line being examined, where it began, and the run of
     * capitals before each of its last two spaces (a request's method). */
    struct resync_line {
        uint8_t *buf;
        size_t len;
        bool line_start, overlong;
        uint64_t off, ns;
        size_t caps_pos;
        uint64_t caps_ns;
        struct { size_t pos; uint64_t ns; bool valid; } before_sp[2]; /* [1]: the last space */
    } rs;

    char msg[128];
};

/* http1.c */

/* The message in progress ends (on_end) as `how`, its last byte at
 * last_off; the parser waits for the next one unless it is dead or closed. */
void http1_end_message(tt_http1_parser *p, tt_http_end how, uint64_t last_off, uint64_t last_ns);

/* Abandon the direction (on_error); a message in progress ends with
 * END_ERROR at off. */
void http1_fail(tt_http1_parser *p, tt_http_error code, const char *msg, uint64_t off, uint64_t ns);

/* http1_head_states.c: the states before a body. Each takes bytes d (n
 * of them, stream offset off, at ns) and returns how many it read. */
size_t http1_step_idle(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns);
size_t http1_step_head(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns);
size_t http1_step_resync(tt_http1_parser *p, const uint8_t *d, size_t n, uint64_t off, uint64_t ns);

/* The search for a start line begins again on a new line (line_start: the
 * next byte begins one) with nothing of the line kept. */
void http1_resync_line_reset(tt_http1_parser *p, bool line_start);

#endif
