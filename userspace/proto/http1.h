/* http1.h - incremental HTTP/1.1 parser for one direction of a connection.
 *
 * One parser per direction: a REQUEST parser reads what the client sent, a
 * RESPONSE parser what the server sent. Feed bytes in stream order with the
 * instant they were seen; the parser reports message heads, decoded body
 * bytes (chunked transfer coding and gzip/deflate content coding removed)
 * and message ends through callbacks. Keep-alive and pipelining: any number
 * of messages follow each other on one parser.
 *
 * Pointers handed to callbacks are valid only during the callback.
 * Callbacks must not feed, gap, eof or free the parser that called them.
 *
 * Decisions the RFCs leave open (RFC 9112 framing, section 6.3):
 * - Empty lines (CRLF or LF) before a start line are skipped. Heads accept
 *   CRLF or bare LF line ends; a CR elsewhere in a head is malformed.
 *   Obsolete line folding (a header line starting with SP/HT) is rejected
 *   as MALFORMED. A head is limited to TT_HTTP1_MAX_HEAD bytes and
 *   TT_HTTP1_MAX_HEADERS header lines (else TOO_LARGE).
 * - Transfer-Encoding ending in "chunked" wins over Content-Length and
 *   head.content_length is then -1. A request whose Transfer-Encoding does
 *   not end in chunked is MALFORMED; such a response is close-delimited.
 *   Content-Length values ("5", "5, 5", repeated headers) must all agree.
 * - Chunk sizes above 2^62 are MALFORMED; chunk extensions are skipped;
 *   trailer fields are read and discarded.
 * - A 1xx other than 101 is reported with interim=true and ends at once.
 *   101, and a 2xx answering a CONNECT, end at once and are followed by
 *   on_error(UNSUPPORTED, "upgraded to <Upgrade value>" / "CONNECT tunnel").
 * - Content-Encoding: one of gzip/x-gzip/deflate ("identity" elements are
 *   ignored) is decoded; anything else is TT_CODING_OTHER and passed through.
 *   A compressed body that ends inside its stream is DECODE-failed when its
 *   framing said it was whole; a close-delimited one ends TRUNCATED.
 * - Offsets: head.first_off is the first byte of the start line. end.last_off
 *   is just past the message's last byte (gap bytes inside a Content-Length
 *   body included); for an END_ERROR it is the stream offset given to
 *   on_error; for a gap that abandons the direction inside a chunked or
 *   close-delimited body, where the gap began (gap_bytes then counts the
 *   whole gap). end.last_ns is the instant of the feed (or gap) that
 *   carried that last byte, also for END_EOF / END_TRUNCATED.
 *   end.wire_body_bytes counts body bytes as framed on the wire (chunk
 *   framing and trailers included), lost bytes excluded.
 * - Errors inside a message: on_error, then that message's on_end (ERROR,
 *   or GAP for a gap). A gap running past the end of a Content-Length body
 *   ends the message (GAP) first, then on_error(GAP).
 * - Lost bytes (tt_http1_gap) abandon only what they cut. Inside a
 *   Content-Length body they are skipped. Anywhere else but a
 *   close-delimited body (after which nothing can follow) the parser
 *   reports on_error(GAP) and resynchronises: it examines the stream line by
 *   line and starts a head at the next start line it recognises
 *   (tt_http1_start_line_in, http1_head.h: a status line at the start of a
 *   line; a request line with a registered method, also right after the
 *   tail of a body). A head so found that then fails to parse was not one:
 *   dropped without a report, the search goes on. Expected responses
 *   queued before the loss are forgotten (a HEAD's or CONNECT's answer
 *   after it is read as an ordinary response). on_error(GAP) comes once per
 *   loss that cuts the framing, so more than once on one parser.
 * - tt_http1_eof: clean ends a close-delimited body with END_EOF, a reset
 *   with END_TRUNCATED; any other message in progress is TRUNCATED. A partly
 *   received head is dropped silently (no head was reported). Later feeds
 *   are ignored. */
#ifndef TT_HTTP1_H
#define TT_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TT_HTTP1_MAX_HEAD (64u * 1024u)
#define TT_HTTP1_MAX_HEADERS 128

typedef enum tt_http_role { TT_HTTP_REQUEST = 0, TT_HTTP_RESPONSE = 1 } tt_http_role;

typedef enum tt_content_coding {
    TT_CODING_IDENTITY = 0,
    TT_CODING_GZIP,
    TT_CODING_DEFLATE,
    TT_CODING_OTHER /* passed through undecoded; on_head reports it */
} tt_content_coding;

typedef struct tt_http_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} tt_http_header;

typedef struct tt_http_head {
    tt_http_role role;
    const char *method; size_t method_len; /* requests */
    const char *target; size_t target_len; /* requests: the request-target */
    int status;                            /* responses */
    const char *reason; size_t reason_len; /* responses */
    int version_minor;                     /* HTTP/1.x */
    const tt_http_header *headers;
    size_t n_headers;
    int64_t content_length;                /* -1 when absent */
    bool chunked;                          /* Transfer-Encoding ends in chunked */
    tt_content_coding coding;
    bool keep_alive;
    bool interim;                          /* a 1xx response: more heads follow for the same request */
    uint64_t first_off, first_ns;          /* stream offset and instant of the head's first byte */
    uint64_t head_end_off, head_end_ns;    /* just past the blank line ending the head */
} tt_http_head;

typedef enum tt_http_end {
    TT_HTTP_END_COMPLETE = 0, /* framing said the message is whole */
    TT_HTTP_END_EOF,          /* close-delimited body ended at FIN: complete */
    TT_HTTP_END_TRUNCATED,    /* the stream ended inside the message */
    TT_HTTP_END_GAP,          /* bytes of the message were lost; see gap_bytes */
    TT_HTTP_END_ERROR         /* malformed; the direction is abandoned */
} tt_http_end;

typedef struct tt_http_msg_end {
    tt_http_end how;
    uint64_t last_off, last_ns; /* stream offset just past, and instant of, its last byte seen */
    uint64_t body_bytes;        /* decoded body bytes delivered */
    uint64_t wire_body_bytes;   /* body bytes on the wire (before decoding) */
    uint64_t gap_bytes;         /* bytes lost inside this message */
} tt_http_msg_end;

typedef enum tt_http_error {
    TT_HTTP_ERR_NONE = 0,
    TT_HTTP_ERR_MALFORMED,   /* not valid HTTP/1.x */
    TT_HTTP_ERR_UNSUPPORTED, /* HTTP/2 preface, TLS record, HTTP/0.9 ... */
    TT_HTTP_ERR_TOO_LARGE,   /* a head beyond the parser's limit */
    TT_HTTP_ERR_DECODE,      /* gzip/deflate stream corrupt */
    TT_HTTP_ERR_GAP          /* lost bytes cut the framing: resynchronising */
} tt_http_error;

typedef struct tt_http_callbacks {
    /* A message head is complete. */
    void (*on_head)(void *ud, const tt_http_head *head);
    /* Decoded body bytes; body_off is the decoded body offset of data[0]. */
    void (*on_body)(void *ud, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns);
    /* The message ended (every message whose head was reported gets exactly one). */
    void (*on_end)(void *ud, const tt_http_msg_end *end);
    /* Called before any on_end it causes. The direction cannot be parsed
     * further (and no more calls come), except for TT_HTTP_ERR_GAP: the
     * parser resynchronises (above) and may report later losses too. */
    void (*on_error)(void *ud, tt_http_error code, const char *msg, uint64_t stream_off);
} tt_http_callbacks;

typedef struct tt_http1_parser tt_http1_parser;

/* Allocate a parser for one direction; NULL on allocation failure. */
tt_http1_parser *tt_http1_new(tt_http_role role, const tt_http_callbacks *cb, void *ud);
void tt_http1_free(tt_http1_parser *p);

/* Feed the next bytes of the stream, seen at mono_ns. Returns 0, or -1 when
 * the parser is (now) in its error state; later calls are then ignored. */
int tt_http1_feed(tt_http1_parser *p, const uint8_t *data, size_t len, uint64_t mono_ns);

/* `missing` bytes of the stream were lost here. A gap inside a body whose
 * length is known (Content-Length) is skipped and the message ends with
 * TT_HTTP_END_GAP; anywhere else the message in progress ends GAP and the
 * parser resynchronises at the next start line (above), except inside a
 * close-delimited body, where the direction is abandoned. */
void tt_http1_gap(tt_http1_parser *p, uint64_t missing, uint64_t mono_ns);

/* The direction ended (FIN, RST or end of capture; `clean` true for FIN).
 * Ends a close-delimited body, or truncates a message in progress. */
void tt_http1_eof(tt_http1_parser *p, bool clean, uint64_t mono_ns);

/* The bytes to come start somewhere inside the stream (its beginning was
 * not seen, or was let go): look for the next start line as after lost
 * bytes, without reporting a loss. Call before the first feed. */
void tt_http1_begin_midstream(tt_http1_parser *p);

/* Response parsers only: the next response answers a HEAD request (no body),
 * or a CONNECT. Call once per request, in request order, as requests are seen. */
void tt_http1_expect_response(tt_http1_parser *p, bool head_request);

/* Response parsers only: the next response answers a CONNECT. Takes one
 * place in the same queue as tt_http1_expect_response; a 2xx answer turns
 * the direction into a tunnel (see above), any other is parsed normally. */
void tt_http1_expect_connect(tt_http1_parser *p);

/* Case-insensitive header lookup on a head; NULL when absent. */
const tt_http_header *tt_http_find_header(const tt_http_head *head, const char *name);

/* The header's value, a comma-separated list (Upgrade, Connection ...),
 * names token (case-insensitive, blanks around items ignored); false for
 * a NULL header. */
bool tt_http_header_lists(const tt_http_header *h, const char *token);

#endif
