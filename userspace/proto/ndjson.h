/* ndjson.h - newline-delimited JSON framing (Ollama's streaming bodies).
 * Each non-empty line is one event; a CR before the LF is tolerated and
 * recorded as a CRLF terminator (cr_off: that CR's body offset). Same callbacks and record as sse.h.
 *
 * Record per line: type NULL, data = the line without LF/CRLF, lines = 1,
 * data_lines = 1, fields = 0, has_id false, retry_ms -1, first_off the line's
 * first byte, dispatch_off just past its LF. A lone CR is an ordinary byte.
 * A line empty after removing CR is skipped (a whitespace-only line is not).
 * Lines longer than TT_SSE_MAX_EVENT are cut there and flagged TRUNCATED;
 * raw U+2028/U+2029/U+0085 in a line set TT_FRAME_RAW_LINE_SEP.
 * Pointers handed to callbacks are valid only during the callback;
 * on_comment is never called. */
#ifndef TT_NDJSON_H
#define TT_NDJSON_H

#include "sse.h"

typedef struct tt_ndjson_parser tt_ndjson_parser;

/* A new parser at body start; cb is copied. NULL when out of memory. */
tt_ndjson_parser *tt_ndjson_new(const tt_frame_callbacks *cb, void *ud);
/* Frees the parser; NULL is accepted. */
void tt_ndjson_free(tt_ndjson_parser *p);
/* Feed the next decoded body bytes at body offset body_off (continuing the
 * last feed); each call is one chunk for the first_chunk/last_chunk ordinals. */
void tt_ndjson_feed(tt_ndjson_parser *p, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns);
/* A last line without its newline is reported with TT_FRAME_UNTERMINATED
 * (dispatch_off the body end, dispatch_ns mono_ns). Afterwards the parser is
 * back at body start and may parse another body. */
void tt_ndjson_finish(tt_ndjson_parser *p, uint64_t mono_ns);

#endif
