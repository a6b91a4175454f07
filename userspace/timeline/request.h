/* request.h - one request/response exchange as one vantage saw it: the
 * request's fields, the named instants, and every framed event of the
 * response with its meaning and framing facts. Built by the connection
 * tracker (conn_tracker.h); read by metrics, lint and reports. */
#ifndef TT_REQUEST_H
#define TT_REQUEST_H

#include "core/tt_types.h"
#include "dialect/dialect.h"
#include "proto/framer.h"
#include "proto/http1.h"

#define TT_NS_NONE UINT64_MAX /* an instant that was not seen */

/* One framed event of a response body (SSE event or NDJSON line). */
typedef struct tt_event_rec {
    uint64_t first_ns, dispatch_ns;
    uint64_t ready_ns;       /* the kernel made its last byte readable at this vantage's socket
                                (TT_NS_NONE: unknown, e.g. the wire, the probe, no kernel support) */
    uint64_t dispatch_stream_off; /* stream offset of its last byte (TT_NS_NONE: not in the
                                     stream as such, e.g. decoded from a compressed body) */
    uint64_t first_off, dispatch_off;
    uint64_t text_hash;
    uint32_t text_bytes, reasoning_bytes;
    uint32_t has;            /* TT_HAS_* */
    uint32_t frame_flags;    /* TT_FRAME_* */
    uint32_t first_chunk, last_chunk;
    uint32_t data_len;
    uint32_t text_off;       /* offset of its text in the request's text, when text is kept */
    uint16_t type_id;        /* index into the tracker's interned event-type names; 0 = none */
    uint8_t kind;            /* tt_event_kind */
    uint8_t terminators;     /* TT_TERM_* */
    uint8_t fields;          /* TT_FIELD_* */
    uint8_t json_ok;
    uint16_t lines, comment_lines;
    uint16_t shared_chunk;   /* other events with bytes in the chunks this one touched */
    int32_t usage_completion_tokens; /* -1 when the event carries none */
    uint32_t cr_rel;         /* first CR terminator's offset from first_off (when terminators has CR or CRLF) */
} tt_event_rec;

typedef enum tt_tristate { TT_UNKNOWN = -1, TT_FALSE = 0, TT_TRUE = 1 } tt_tristate;

/* What the request body asked for. */
typedef struct tt_request_fields {
    char model[128];
    tt_tristate stream;
    int64_t max_tokens;          /* -1 when absent */
    char max_tokens_field[32];   /* which spelling carried it */
    int64_t min_tokens;          /* -1 when absent */
    tt_tristate ignore_eos;
    tt_tristate include_usage;   /* stream_options.include_usage */
    bool body_json_ok;           /* the body parsed as a JSON object */
    bool body_seen;
} tt_request_fields;

/* Why a request is not measured as whole (bitmask). */
enum {
    TT_INC_REQUEST_NOT_SEEN = 1u << 0,  /* capture began after the request */
    TT_INC_REQUEST_CUT = 1u << 1,       /* request ended early or crossed a gap */
    TT_INC_NO_RESPONSE = 1u << 2,       /* no response head seen */
    TT_INC_RESPONSE_CUT = 1u << 3,      /* response ended before its framing said it was whole */
    TT_INC_GAP = 1u << 4,               /* bytes lost inside the exchange */
    TT_INC_HTTP_ERROR = 1u << 5,        /* the HTTP parser gave up on the connection */
    TT_INC_EVICTED = 1u << 6,           /* its connection was evicted to bound memory */
};

typedef struct tt_request {
    /* identity */
    uint64_t conn_id;
    tt_endpoint client, server;
    uint32_t ordinal;             /* 0-based position on its connection */
    uint32_t stream_id;           /* HTTP/2 stream id, 0 for HTTP/1.x */
    char method[16];
    char path[256];
    char request_id[128];         /* x-request-id, "" when absent */
    char correlation_id[128];     /* x-correlation-id, "" when absent */
    char response_id[96];         /* from the events, "" when none */
    tt_request_fields fields;

    /* response */
    int status;                   /* 0 when no response head */
    int grpc_status;              /* gRPC status code of the trailers (or a trailers-only answer), -1 when none */
    char grpc_message[128];       /* its grpc-message, percent-decoded, "" when none */
    char content_type[64];
    tt_content_coding coding;
    tt_dialect dialect;
    tt_framing framing;

    /* instants (TT_NS_NONE when not seen) */
    uint64_t req_first_ns, req_last_ns;
    uint64_t resp_first_ns, resp_headers_ns;
    uint64_t first_event_ns, first_token_ns, last_token_ns, terminal_ns;
    uint64_t resp_last_ns;        /* last byte of the response */
    /* readable at this vantage's socket (kernel instants, TT_NS_NONE when
     * unknown): the request's first byte (server vantage), and the last
     * byte of the first and of the last token event (client vantage) */
    uint64_t req_ready_ns, first_token_ready_ns, last_token_ready_ns;
    uint64_t req_first_off;       /* stream offset of the request's first byte */
    bool req_seq_known;           /* req_seq is the real TCP sequence number of that byte */
    uint32_t req_seq;             /* (tt_conn_info.seq_base): the same at both ends of the connection */

    /* events */
    tt_event_rec *events;
    uint32_t n_events;
    size_t cap_events;
    uint32_t token_events;
    uint32_t kind_counts[TT_EV_COUNT];
    /* the tracker's own: this request's absolute index plus one, and the
     * request filed before it on its connection as the same (0: none);
     * see conn_internal.h, conn_state.last_filed */
    uint64_t filed_at, prev_filed;
    uint32_t comments;            /* SSE comment lines (keep-alives) */
    uint64_t text_bytes, reasoning_bytes;
    int64_t usage_completion_tokens; /* last usage seen, -1 when none */
    int64_t usage_prompt_tokens;
    char finish_reason[32];
    char error_message[128];      /* first error event's message */
    bool terminal_seen;
    bool data_after_terminal;

    char *text;                   /* generated text, only when the tracker keeps it */
    size_t text_len, text_cap;

    /* completeness */
    uint32_t incomplete;          /* TT_INC_* */
    uint64_t gap_bytes;
    tt_http_end response_end;
    char http_error[96];

    /* evidence for lint (lint/lint.h) */
    uint8_t h2_reset_by;          /* HTTP/2: 0, or the RST_STREAM that ended the stream came from 1 the client, 2 the server */
    uint32_t h2_reset_code;       /* its error code */
    uint32_t h2_window_stalls;    /* HTTP/2: times the server's send window was closed until the client's WINDOW_UPDATE */
    uint64_t h2_window_closed_ns; /* how long it stayed closed, summed */
    uint64_t h2_first_stall_ns;   /* when it first closed (TT_NS_NONE: never) */
    uint64_t first_comment_off;   /* body offset of the first SSE comment line, TT_NS_NONE when none */
    uint64_t first_comment_ns;
    bool cut_event;               /* the body ended inside an event, which was discarded */
    uint64_t cut_event_off, cut_event_end, cut_event_ns; /* its first byte, the body end, its first instant */
    uint8_t *body;                /* the decoded response body, only when the tracker keeps bodies */
    size_t body_len, body_cap;
    bool body_cut;                /* bytes past body_len were not kept (limit or a hole) */

    /* consumer's */
    bool events_released;         /* events, text and body were let go once filed
                                     (tt_request_release_events): events NULL, n_events 0 */
    uint64_t consumer_tag;        /* set by the tracker's on_file hook; the tracker never reads it */
} tt_request;

/* True when nothing makes the request unmeasurable. */
static inline bool tt_request_complete(const tt_request *r) { return r->incomplete == 0; }

#endif
