/* ndjson.h - newline-delimited JSON framing (Ollama's streaming bodies).
 * Each non-empty line is one event; a CR before the LF is tolerated and
 * recorded as a CRLF terminator. Same callbacks and record as sse.h. */
#ifndef TT_NDJSON_H
#define TT_NDJSON_H

#include "sse.h"

typedef struct tt_ndjson_parser tt_ndjson_parser;

tt_ndjson_parser *tt_ndjson_new(const tt_frame_callbacks *cb, void *ud);
void tt_ndjson_free(tt_ndjson_parser *p);
void tt_ndjson_feed(tt_ndjson_parser *p, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns);
/* A last line without its newline is reported with TT_FRAME_UNTERMINATED. */
void tt_ndjson_finish(tt_ndjson_parser *p, uint64_t mono_ns);

#endif
