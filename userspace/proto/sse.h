/* sse.h - incremental text/event-stream parser (WHATWG HTML, "Parsing an
 * event stream"): LF, CR and CRLF line ends (a CR ending one feed and its LF
 * starting the next is one CRLF), a leading UTF-8 BOM, comments, multi-line
 * data, one optional space after the colon, an event dispatched by a blank
 * line only when its data buffer is non-empty, and an unterminated last event
 * discarded but reported.
 *
 * The parser copies the event's bytes into its own growing buffer (bounded by
 * TT_SSE_MAX_EVENT; beyond it data is cut and the event flagged TRUNCATED). */
#ifndef TT_SSE_H
#define TT_SSE_H

#include "event_frame.h"

#define TT_SSE_MAX_EVENT (4u << 20)

typedef struct tt_frame_callbacks {
    /* An event was dispatched (or, with TT_FRAME_UNTERMINATED, discarded at finish). */
    void (*on_event)(void *ud, const tt_event_frame *ev);
    /* A comment line (text after the colon, without terminator). */
    void (*on_comment)(void *ud, const char *text, size_t len, uint64_t off, uint64_t mono_ns);
} tt_frame_callbacks;

typedef struct tt_sse_parser tt_sse_parser;

tt_sse_parser *tt_sse_new(const tt_frame_callbacks *cb, void *ud);
void tt_sse_free(tt_sse_parser *p);

/* Feed the next decoded body bytes; body_off is the body offset of data[0]
 * (must continue where the last feed ended). Each call is one "chunk" for the
 * first_chunk/last_chunk ordinals. */
void tt_sse_feed(tt_sse_parser *p, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns);

/* The body ended. A pending event that saw no dispatching blank line is
 * reported with TT_FRAME_UNTERMINATED (not dispatched, per the spec). */
void tt_sse_finish(tt_sse_parser *p, uint64_t mono_ns);

#endif
