/* sse.h - incremental text/event-stream parser (WHATWG HTML, "Parsing an
 * event stream"): LF, CR and CRLF line ends (a CR ending one feed and its LF
 * starting the next is one CRLF), a leading UTF-8 BOM, comments, multi-line
 * data, one optional space after the colon, an event dispatched by a blank
 * line only when its data buffer is non-empty, and an unterminated last event
 * discarded but reported.
 *
 * The parser copies the event's bytes into its own growing buffer (bounded by
 * TT_SSE_MAX_EVENT; beyond it data is cut and the event flagged TRUNCATED),
 * except an event of one data line dispatched by the feed that carried it,
 * which on_event reads in the fed bytes.
 *
 * How the record is filled (decisions the spec leaves open):
 * - first_off/first_ns/first_chunk: the first byte of the event's first
 *   non-blank line, comment lines included. A blank line with an empty data
 *   buffer resets everything (comments seen so far belong to no event).
 * - dispatch_off: just past the byte that ended the blank line; for CRLF that
 *   is just past the CR (the LF is swallowed), so the value never depends on
 *   where the feeds were cut.
 * - terminators: the terminators of the event's lines and of its dispatching
 *   blank line. When a CR is the last byte of a feed, the next feed's first
 *   byte decides CR or CRLF; if that CR ended the dispatching blank line the
 *   on_event callback is held until that byte (or finish) arrives. Instants,
 *   offsets and ordinals still name the CR's feed.
 * - cr_off: the body offset of the first CR among the event's terminators
 *   (lines and dispatching blank line), whichever feed carried it.
 * - id/id_len: the "last event ID buffer", which persists across events per
 *   the spec (NULL until any id field was accepted); has_id only when this
 *   event carried an accepted id field. An id value containing NUL is
 *   ignored (fields still gets TT_FIELD_ID).
 * - retry_ms: this event's last valid retry value (ASCII digits only, fits
 *   int64), else -1. fields gets TT_FIELD_RETRY for any retry line.
 * - flags: DATA_NO_SPACE when a data line has a colon followed by a
 *   non-empty value that does not start with a space ("data:" alone is only
 *   EMPTY_DATA_LINE); BOM goes on the first event reported after the BOM.
 * - Bytes are not UTF-8 validated or replaced; NUL bytes pass through.
 * - At finish, a last line without terminator is folded into the pending
 *   event (a comment there is counted but not reported via on_comment); the
 *   pending event is reported with TT_FRAME_UNTERMINATED only when it had a
 *   field line (comment-only leftovers are dropped). Its dispatch_off is the
 *   body end, dispatch_ns the instant given to finish.
 *
 * All pointers handed to callbacks are valid only during the callback.
 * Callbacks must not feed the same parser. */
#ifndef TT_SSE_H
#define TT_SSE_H

#include "event_frame.h"

#define TT_SSE_MAX_EVENT (4u << 20)
/* Bound on the event type and the id value; longer ones are cut (TRUNCATED). */
#define TT_SSE_MAX_FIELD (64u << 10)

typedef struct tt_frame_callbacks {
    /* An event was dispatched (or, with TT_FRAME_UNTERMINATED, discarded at finish). */
    void (*on_event)(void *ud, const tt_event_frame *ev);
    /* A comment line (text after the colon, without terminator). off and
     * mono_ns are those of the line's first byte (the colon). */
    void (*on_comment)(void *ud, const char *text, size_t len, uint64_t off, uint64_t mono_ns);
} tt_frame_callbacks;

typedef struct tt_sse_parser tt_sse_parser;

/* A new parser at stream start; cb is copied, either callback may be NULL.
 * Returns NULL when out of memory. */
tt_sse_parser *tt_sse_new(const tt_frame_callbacks *cb, void *ud);
/* Frees the parser and its buffers; NULL is accepted. */
void tt_sse_free(tt_sse_parser *p);

/* Feed the next decoded body bytes; body_off is the body offset of data[0]
 * (must continue where the last feed ended). Each call is one "chunk" for the
 * first_chunk/last_chunk ordinals. */
void tt_sse_feed(tt_sse_parser *p, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns);

/* The body ended. A pending event that saw no dispatching blank line is
 * reported with TT_FRAME_UNTERMINATED (not dispatched, per the spec).
 * Afterwards the parser is back at stream start (BOM check, chunk ordinal 0,
 * no last event ID) and may parse another body. */
void tt_sse_finish(tt_sse_parser *p, uint64_t mono_ns);

#endif
