/* event_frame.h - one framed event of a response body, as SSE, NDJSON or
 * gRPC message framing delivered it, before any JSON is looked at.
 *
 * Offsets are offsets into the decoded response body (after chunked transfer
 * coding and content coding are removed). Instants are those of the chunk
 * that carried the byte in question. */
#ifndef TT_EVENT_FRAME_H
#define TT_EVENT_FRAME_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

/* Line terminators an event used (bitmask). */
enum {
    TT_TERM_LF = 1u << 0,
    TT_TERM_CR = 1u << 1,
    TT_TERM_CRLF = 1u << 2,
};

/* SSE field names present in an event (bitmask). */
enum {
    TT_FIELD_DATA = 1u << 0,
    TT_FIELD_EVENT = 1u << 1,
    TT_FIELD_ID = 1u << 2,
    TT_FIELD_RETRY = 1u << 3,
    TT_FIELD_OTHER = 1u << 4, /* a field name the spec ignores */
};

/* Framing facts worth a lint finding (bitmask). */
enum {
    TT_FRAME_DATA_NO_SPACE = 1u << 0,   /* a "data:" line with no space after the colon */
    TT_FRAME_BOM = 1u << 1,             /* a UTF-8 BOM opened the stream before this event */
    TT_FRAME_EMPTY_DATA_LINE = 1u << 2, /* a data line with an empty value */
    TT_FRAME_RAW_LINE_SEP = 1u << 3,    /* raw U+2028, U+2029 or U+0085 inside data */
    TT_FRAME_UNTERMINATED = 1u << 4,    /* stream ended before the dispatching blank line / newline */
    TT_FRAME_TRUNCATED = 1u << 5,       /* data exceeded the parser's limit and was cut */
    TT_FRAME_COMPRESSED = 1u << 6,      /* gRPC: Compressed-Flag 1, data are the still-compressed bytes */
    TT_FRAME_BAD_PREFIX = 1u << 7,      /* gRPC: a flag byte other than 0/1 lost the framing; data_len 0 */
};

typedef struct tt_event_frame {
    const char *type;      /* SSE event type ("message" when no event: field); NULL for NDJSON, gRPC */
    size_t type_len;
    const char *data;      /* SSE: data lines joined by \n; NDJSON: the line without its terminator;
                              gRPC: the message bytes (binary) */
    size_t data_len;
    const char *id;        /* SSE id field value, when has_id */
    size_t id_len;
    bool has_id;
    int64_t retry_ms;      /* SSE retry value, -1 when absent or invalid */

    uint64_t first_off;    /* body offset of the event's first byte (its first line, comments included) */
    uint64_t dispatch_off; /* body offset just past the byte that dispatched it */
    uint64_t first_ns;     /* instant of the chunk that carried first_off */
    uint64_t dispatch_ns;  /* instant of the chunk that carried the dispatching byte */
    uint32_t first_chunk;  /* ordinal (0-based) of the feed() call carrying first_off */
    uint32_t last_chunk;   /* ordinal of the feed() call carrying the dispatching byte */

    uint32_t terminators;  /* TT_TERM_* seen on this event's lines */
    uint32_t fields;       /* TT_FIELD_* seen */
    uint32_t flags;        /* TT_FRAME_* */
    uint16_t lines;        /* lines in the event, blank dispatching line excluded */
    uint16_t comment_lines;
    uint16_t data_lines;
    uint64_t cr_off;       /* body offset of the first CR that ended one of the event's lines
                              (its dispatching blank line included); meaningful only when
                              terminators has TT_TERM_CR or TT_TERM_CRLF */
} tt_event_frame;

/* True when v[0..n) holds a raw UTF-8 U+2028 (E2 80 A8), U+2029 (E2 80 A9)
 * or U+0085 (C2 85): characters some clients split lines on. */
bool tt_frame_has_raw_line_sep(const uint8_t *v, size_t n);

#endif
