/* http2.h - passive HTTP/2 framing parser for one connection (RFC 9113),
 * HPACK (RFC 7541) through nghttp2's header inflater.
 *
 * One parser per connection; each direction is fed separately, in stream
 * order, with the instant its bytes were seen (frames are per direction).
 * The parser reports header blocks after HPACK (pseudo-headers included),
 * per-stream DATA payload (padding removed), stream ends, connection
 * errors, and optionally every frame, SETTINGS, PING, GOAWAY and
 * WINDOW_UPDATE. It never writes to the connection: it only watches.
 *
 * Pointers handed to callbacks are valid only during the callback.
 * Callbacks must not feed, gap, eof or free the parser that called them.
 *
 * Modes (how the connection began):
 * - tt_http2_new: the capture starts at the beginning. The client->server
 *   direction starts with the preface "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
 *   (h2c with prior knowledge, and h2 inside TLS after ALPN: the plaintext
 *   is the same), then a SETTINGS frame; server->client starts with a
 *   SETTINGS frame. Anything else is TT_H2_ERR_PREFACE.
 * - tt_http2_start_upgrade, right after tt_http2_new: h2c upgrade from
 *   HTTP/1.1 (RFC 7540 3.2). Feed each direction from the first byte after
 *   the HTTP/1.1 exchange (c2s: after the upgrade request and its body,
 *   where the preface begins; s2c: after the 101 response). Stream 1 is
 *   the upgraded request: its request half is not reported (the HTTP/1
 *   parser reported it), its response half is. The HTTP2-Settings value
 *   (base64url SETTINGS payload, the client's settings, acknowledged by
 *   the 101) applies at once to the server->client direction.
 * - tt_http2_new_midstream: the capture starts inside the connection. No
 *   preface is expected and both directions are parsed as frames from
 *   their first byte: THE CALLER MUST START EACH DIRECTION AT A FRAME
 *   BOUNDARY (bytes that are not frames give errors). Streams are known
 *   from the first frame that names them; the SETTINGS in effect are not
 *   known (frame sizes are not checked until a SETTINGS is acknowledged),
 *   and HPACK runs tolerant (below).
 *
 * Streams. A stream becomes known at the first HEADERS, DATA or
 * PUSH_PROMISE (its promised stream) that names it. A known stream has two
 * halves, TT_DIR_C2S (the request) and TT_DIR_S2C (the response); each
 * half gets exactly one on_stream_end (except the request half of stream 1
 * after an upgrade), whatever happens:
 *   END_STREAM  the END_STREAM flag in that direction;
 *   RST         an RST_STREAM (either direction) ends both halves still open;
 *   GOAWAY      a GOAWAY ends both halves of the streams it says were not
 *               processed (id above its last stream id, initiated by the
 *               GOAWAY's receiver); the others go on;
 *   GAP/ERROR   the direction was abandoned (lost bytes / a connection
 *               error): its open halves end, and so does, at once, the half
 *               in that direction of any stream known later;
 *   EOF         tt_http2_eof for that direction with the half open (same
 *               for streams known later);
 *   LIMIT       evicted: more than TT_HTTP2_MAX_STREAMS streams open (the
 *               lowest id goes first).
 * A promised stream's request half ends (END_STREAM) at its PUSH_PROMISE.
 * Once both halves ended the stream is forgotten; later frames naming it
 * are counted (stats.late_frames) and ignored. Stream ids are validated:
 * a client opens odd ids (HEADERS on an even id in c2s is a PROTOCOL
 * error), only the server promises (PUSH_PROMISE in c2s is an error), a
 * stream opened before another must have a lower id: when the capture
 * began at the start, a frame on a lower unknown id is late, and the
 * server's HEADERS/DATA on an idle stream (one the client never opened) is
 * a PROTOCOL error, unless the client's direction is abandoned (its
 * HEADERS may be what was lost). In midstream mode an unknown id is taken
 * as a stream begun before the capture, unless it is one of the last
 * TT_HTTP2_CLOSED_RING ids that ended (a late frame).
 *
 * Instants. A DATA frame's payload is handed over when the frame is
 * complete, with the instant of the feed that completed the frame (the
 * receiving HTTP/2 stack cannot act on it before) - except a frame whose
 * payload exceeds TT_HTTP2_DATA_PIECE, handed over in pieces of that size,
 * each with the instant of the feed that completed the piece. body_off
 * counts the payload bytes of the half already handed over (contiguous,
 * padding excluded). A header block is reported when its END_HEADERS
 * frame is complete: first_ns is the instant of the feed holding the
 * HEADERS frame's first byte, last_ns of the feed completing the block.
 * Stream ends carry the instant of what ended them.
 *
 * HPACK. One nghttp2 inflater per direction: the inflater of direction X
 * decodes the header blocks of X's sender. SETTINGS_HEADER_TABLE_SIZE
 * (RFC 9113 6.5.2) is the size of the table its *sender* will use to
 * decode: the client's value bounds the server's encoder. So a SETTINGS
 * seen in c2s applies to the s2c inflater, and it applies where the
 * server acknowledged it: at the SETTINGS ACK in s2c (the encoder must
 * signal a smaller size at the start of its first header block after the
 * ACK, RFC 7541 4.2), exactly as nghttp2's own session does
 * (nghttp2_session_update_local_settings on the ACK: the minimum of the
 * values in that SETTINGS, then the last, through
 * nghttp2_hd_inflate_change_table_size). Values above
 * TT_HTTP2_MAX_TABLE_SIZE are applied as that cap (bounded memory); a size
 * update the announced value allows but the cap does not is clamped to
 * the cap. The same ACK rule applies SETTINGS_MAX_FRAME_SIZE and
 * SETTINGS_INITIAL_WINDOW_SIZE (frames up to the largest value announced
 * but not yet acknowledged are accepted too).
 *
 * Unknown dynamic-table indexes. nghttp2's inflater fails on an index
 * beyond its table (NGHTTP2_ERR_HEADER_COMP) and is then unusable for good
 * (ctx.bad). So each header block is walked representation by
 * representation here first, and only representations the inflater can
 * take are given to it: an indexed field naming an unknown entry is
 * reported as a header with TT_H2_HDR_NAME_UNKNOWN|TT_H2_HDR_VALUE_UNKNOWN
 * (and its index) and not given to the inflater (it changes no table); a
 * literal whose name is an unknown entry is rewritten with a placeholder
 * name, so that the inflater decodes its value (Huffman) and, for
 * incremental indexing, inserts the entry as the encoder did: reported
 * with TT_H2_HDR_NAME_UNKNOWN, as is any later reference to that entry.
 * Nothing is ever reported wrong: the inflater's table always holds the
 * newest entries of the encoder's table, in the same order (entries older
 * than what was seen, or evicted sooner because a placeholder's size
 * differed, are only ever reported unknown). This is Wireshark's behaviour
 * (unknown, not a broken connection) without its permanent loss: entries
 * inserted after the capture began decode normally. In every mode an
 * unknown index is reported this way, never as a connection error.
 * Tolerant HPACK (midstream mode, and after an HPACK reset): the
 * inflater's table is raised to TT_HTTP2_MAX_TABLE_SIZE at once (a table
 * larger than the encoder's only keeps entries it never references), any
 * size update up to it is taken, larger ones are clamped, and
 * SETTINGS_HEADER_TABLE_SIZE is not enforced.
 * HPACK reset: a header block larger than TT_HTTP2_MAX_HEADER_BLOCK is not
 * decoded; it is reported with `skipped` set and no headers, and the
 * direction's inflater is replaced by a tolerant one (the block's
 * insertions are unknown, so every older entry becomes unknown).
 * Any other HPACK failure (bad Huffman, bad integer, a size update beyond
 * the settings, a missing required size update) is a connection error
 * (TT_H2_ERR_HPACK). Decoded header lists are bounded
 * (TT_HTTP2_MAX_HEADERS fields, TT_HTTP2_MAX_DECODED bytes): beyond, the
 * block is still decoded (the table stays in step) but the list is cut
 * (`truncated`).
 *
 * Connection errors (on_error): the direction cannot be parsed further,
 * its open halves end ERROR (GAP for TT_H2_ERR_GAP), later feeds are
 * ignored; the other direction goes on. They are: a bad preface, a frame
 * longer than SETTINGS_MAX_FRAME_SIZE (TT_H2_ERR_FRAME_SIZE, also a
 * control frame of the wrong length), a PROTOCOL violation of the framing
 * (CONTINUATION sequence broken, frame type on the wrong stream, bad
 * padding, bad stream id), and HPACK failures other than unknown indexes.
 *
 * Lost bytes (tt_http2_gap): HTTP/2 has no marker to resynchronise on (a
 * frame header is 9 arbitrary bytes, and a lost header block leaves HPACK
 * unknowable), so the direction is abandoned: on_error(TT_H2_ERR_GAP),
 * its open halves end GAP. The other direction goes on: a response still
 * streams when request bytes were lost. (Skipping a gap that falls inside
 * a DATA payload of known length would keep the framing; not done yet.)
 *
 * tt_http2_eof: that direction's open halves end EOF; a partial frame is
 * dropped; later feeds are ignored.
 *
 * Bounds: TT_HTTP2_MAX_HEADER_BLOCK of compressed header block,
 * TT_HTTP2_MAX_DECODED of decoded fields, TT_HTTP2_DATA_PIECE of buffered
 * DATA, TT_HTTP2_MAX_TABLE_SIZE of HPACK table per direction,
 * TT_HTTP2_MAX_STREAMS open streams. */
#ifndef TT_HTTP2_H
#define TT_HTTP2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tt_types.h"

#define TT_HTTP2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define TT_HTTP2_PREFACE_LEN 24u
#define TT_HTTP2_MAX_HEADER_BLOCK (64u * 1024u)
#define TT_HTTP2_MAX_DECODED (256u * 1024u)
#define TT_HTTP2_MAX_HEADERS 512u
#define TT_HTTP2_MAX_TABLE_SIZE (64u * 1024u)
#define TT_HTTP2_DATA_PIECE (64u * 1024u)
#define TT_HTTP2_MAX_STREAMS 4096u
#define TT_HTTP2_CLOSED_RING 256u
#define TT_HTTP2_DEFAULT_MAX_FRAME 16384u

/* frame types (RFC 9113 6) */
enum {
    TT_H2_DATA = 0x0,
    TT_H2_HEADERS = 0x1,
    TT_H2_PRIORITY = 0x2,
    TT_H2_RST_STREAM = 0x3,
    TT_H2_SETTINGS = 0x4,
    TT_H2_PUSH_PROMISE = 0x5,
    TT_H2_PING = 0x6,
    TT_H2_GOAWAY = 0x7,
    TT_H2_WINDOW_UPDATE = 0x8,
    TT_H2_CONTINUATION = 0x9
};
/* flags */
enum {
    TT_H2_FLAG_END_STREAM = 0x1,
    TT_H2_FLAG_ACK = 0x1,
    TT_H2_FLAG_END_HEADERS = 0x4,
    TT_H2_FLAG_PADDED = 0x8,
    TT_H2_FLAG_PRIORITY = 0x20
};
/* settings identifiers */
enum {
    TT_H2_SETTINGS_HEADER_TABLE_SIZE = 0x1,
    TT_H2_SETTINGS_ENABLE_PUSH = 0x2,
    TT_H2_SETTINGS_MAX_CONCURRENT_STREAMS = 0x3,
    TT_H2_SETTINGS_INITIAL_WINDOW_SIZE = 0x4,
    TT_H2_SETTINGS_MAX_FRAME_SIZE = 0x5,
    TT_H2_SETTINGS_MAX_HEADER_LIST_SIZE = 0x6
};

/* header flags */
#define TT_H2_HDR_NAME_UNKNOWN 0x1  /* an HPACK table entry from before the capture (or an HPACK reset) */
#define TT_H2_HDR_VALUE_UNKNOWN 0x2
#define TT_H2_HDR_NEVER_INDEXED 0x4 /* sent as "never indexed" (sensitive) */

typedef struct tt_h2_header {
    const char *name;   /* "" when unknown */
    size_t name_len;
    const char *value;  /* "" when unknown */
    size_t value_len;
    uint8_t flags;      /* TT_H2_HDR_* */
    uint32_t index;     /* the HPACK index an unknown name or field referred to; else 0 */
} tt_h2_header;

typedef struct tt_h2_headers {
    uint32_t stream_id;        /* for a PUSH_PROMISE: the promised stream */
    tt_direction dir;
    const tt_h2_header *headers;
    size_t n_headers;
    size_t n_unknown;          /* headers with an unknown name or value */
    int status;                /* :status as a number, -1 when absent or not 3 digits */
    bool end_stream;
    bool interim;              /* a 1xx response: the final HEADERS follows */
    bool trailers;             /* a later HEADERS on a half that already had its head */
    bool promise;              /* from a PUSH_PROMISE; assoc_stream_id is the stream it came on */
    uint32_t assoc_stream_id;
    bool skipped;              /* block over TT_HTTP2_MAX_HEADER_BLOCK: not decoded, HPACK reset */
    bool truncated;            /* decoded list cut at TT_HTTP2_MAX_HEADERS / TT_HTTP2_MAX_DECODED */
    bool has_priority;         /* PRIORITY flag: */
    bool exclusive;
    uint32_t depends_on;
    uint16_t weight;           /* 1..256 */
    size_t block_len;          /* compressed bytes */
    unsigned frames;           /* HEADERS/PUSH_PROMISE + CONTINUATION frames */
    uint64_t first_off, first_ns; /* the first frame's first byte */
    uint64_t last_off, last_ns;   /* just past the END_HEADERS frame; its completing feed */
} tt_h2_headers;

typedef enum tt_h2_end {
    TT_H2_END_STREAM = 0, /* END_STREAM flag */
    TT_H2_END_RST,        /* RST_STREAM; error_code, by */
    TT_H2_END_GOAWAY,     /* not processed per a GOAWAY; error_code, by */
    TT_H2_END_GAP,        /* the direction lost bytes */
    TT_H2_END_ERROR,      /* the direction had a connection error */
    TT_H2_END_EOF,        /* the direction ended with the half open */
    TT_H2_END_LIMIT       /* evicted: too many open streams */
} tt_h2_end;

typedef struct tt_h2_stream_end {
    uint32_t stream_id;
    tt_direction dir;          /* the half that ended */
    tt_h2_end how;
    uint32_t error_code;       /* RST_STREAM / GOAWAY error code */
    tt_direction by;           /* direction of the frame, gap or eof that ended it */
    uint64_t off, mono_ns;     /* stream offset (in `by`) just past what ended it, and its instant */
    uint64_t last_ns;          /* instant of this half's last frame (0: none) */
    uint64_t body_bytes;       /* DATA payload handed over */
    uint64_t data_frames, pad_bytes, header_blocks;
    uint32_t window_updates;   /* WINDOW_UPDATEs the receiver of this half sent on the stream */
    uint64_t window_credit;    /* their increments, summed */
} tt_h2_stream_end;

typedef enum tt_h2_error {
    TT_H2_ERR_NONE = 0,
    TT_H2_ERR_PREFACE,    /* not the client preface / server's first frame not SETTINGS */
    TT_H2_ERR_FRAME_SIZE, /* over SETTINGS_MAX_FRAME_SIZE, or a control frame of the wrong length */
    TT_H2_ERR_PROTOCOL,   /* framing rules broken */
    TT_H2_ERR_HPACK,      /* header block undecodable (not an unknown index) */
    TT_H2_ERR_GAP         /* bytes lost: the direction is abandoned */
} tt_h2_error;

typedef struct tt_h2_frame {
    tt_direction dir;
    uint8_t type, flags;
    uint32_t stream_id;
    uint32_t length;           /* payload length */
    uint64_t off;              /* stream offset of the frame header */
    uint64_t first_ns, last_ns;
} tt_h2_frame;

typedef struct tt_h2_setting {
    uint16_t id;
    uint32_t value;
} tt_h2_setting;

typedef struct tt_h2_window_update {
    tt_direction dir;          /* direction of the WINDOW_UPDATE frame (the receiver granting credit) */
    uint32_t stream_id;        /* 0: the connection */
    uint32_t increment;
    uint64_t off, mono_ns;
    uint32_t count;            /* WINDOW_UPDATEs so far in dir on this stream (connection), this one included */
    uint64_t total;            /* their increments, summed */
    bool window_known;         /* the peer's send window is known (not in midstream mode) */
    int64_t window;            /* the peer's send window after it (stream's, or connection's) */
} tt_h2_window_update;

typedef struct tt_http2_callbacks {
    void (*on_headers)(void *ud, const tt_h2_headers *h);
    void (*on_data)(void *ud, uint32_t stream_id, tt_direction dir, const uint8_t *data, size_t len,
                    uint64_t body_off, uint64_t mono_ns);
    void (*on_stream_end)(void *ud, const tt_h2_stream_end *e);
    /* A connection error: called before the stream ends it causes. */
    void (*on_error)(void *ud, tt_direction dir, tt_h2_error code, const char *msg, uint64_t stream_off);
    /* Optional. */
    void (*on_frame)(void *ud, const tt_h2_frame *f); /* every complete frame, before what it causes */
    void (*on_settings)(void *ud, tt_direction dir, bool ack, const tt_h2_setting *s, size_t n, uint64_t mono_ns);
    void (*on_ping)(void *ud, tt_direction dir, bool ack, const uint8_t opaque[8], uint64_t mono_ns);
    void (*on_goaway)(void *ud, tt_direction dir, uint32_t last_stream_id, uint32_t error_code,
                      const uint8_t *debug, size_t debug_len, uint64_t mono_ns);
    void (*on_window_update)(void *ud, const tt_h2_window_update *w);
} tt_http2_callbacks;

typedef struct tt_h2_dir_stats {
    uint64_t bytes, frames;
    uint64_t frames_by_type[10]; /* by type; unknown types in `unknown_frames` */
    uint64_t unknown_frames;
    uint64_t data_bytes, pad_bytes, header_blocks;
    uint64_t late_frames;        /* frames on forgotten or ended streams, ignored */
    uint64_t hpack_unknown;      /* header fields reported with an unknown part */
    uint64_t hpack_resets;
    uint32_t conn_window_updates;    /* WINDOW_UPDATEs on stream 0 sent in this direction */
    uint64_t conn_window_credit;
    uint64_t conn_window_update_first_ns, conn_window_update_last_ns;
    uint32_t stream_window_updates;  /* on streams */
    uint64_t stream_window_credit;
} tt_h2_dir_stats;

typedef struct tt_http2_conn tt_http2_conn;

/* A connection seen from its start (prior knowledge, TLS with ALPN h2);
 * NULL on allocation failure. */
tt_http2_conn *tt_http2_new(const tt_http2_callbacks *cb, void *ud);

/* A connection whose start was not seen: see "Modes". */
tt_http2_conn *tt_http2_new_midstream(const tt_http2_callbacks *cb, void *ud);

/* h2c upgrade: call right after tt_http2_new, before any feed. settings_b64
 * is the request's HTTP2-Settings value (base64url, padding optional; NULL
 * or empty: none). Returns 0, or -1 when the value does not decode to a
 * SETTINGS payload (the parser is then still usable, with default
 * settings). */
int tt_http2_start_upgrade(tt_http2_conn *c, const char *settings_b64, size_t len, uint64_t mono_ns);

void tt_http2_free(tt_http2_conn *c);

/* The next bytes of direction dir, seen at mono_ns. Returns 0, or -1 when
 * the direction is (now) abandoned or ended; later calls are then ignored. */
int tt_http2_feed(tt_http2_conn *c, tt_direction dir, const uint8_t *data, size_t len, uint64_t mono_ns);

/* `missing` bytes of direction dir were lost here: the direction is abandoned. */
void tt_http2_gap(tt_http2_conn *c, tt_direction dir, uint64_t missing, uint64_t mono_ns);

/* Direction dir ended (FIN, RST, end of capture; clean for FIN). */
void tt_http2_eof(tt_http2_conn *c, tt_direction dir, bool clean, uint64_t mono_ns);

/* The parser's offset in dir: the bytes fed to it plus those it was told
 * were lost, since tt_http2_new. Inside on_data, it is just past the DATA
 * payload handed over (past the whole frame when the frame is complete). */
uint64_t tt_http2_offset(const tt_http2_conn *c, tt_direction dir);

/* Counters of one direction. */
const tt_h2_dir_stats *tt_http2_stats(const tt_http2_conn *c, tt_direction dir);

/* The send windows, as this parser estimates them, of the sender of dir
 * on a stream (after the frames fed so far): false when unknown (midstream
 * mode, stream not open). Usable inside on_data. */
bool tt_http2_send_window(const tt_http2_conn *c, tt_direction dir, uint32_t stream_id, int64_t *conn_window,
                          int64_t *stream_window);

/* Resynchronising on bytes that start inside a connection (midstream):
 * the first offset >= *from of p[0..n) where a chain of plausible frames of
 * direction dir begins, or -1 when there is none yet (*from then says where
 * the next call, on the same bytes with more appended, resumes). A frame is
 * plausible when its type is known (not a CONTINUATION outside a header
 * block), its length at most TT_HTTP2_DEFAULT_MAX_FRAME and right for its
 * type, its flags among those its type defines, the reserved bit clear, its
 * stream id right for its type and, from the client, odd where the client
 * opens it (what of its payload is at hand is checked too: padding,
 * SETTINGS values, WINDOW_UPDATE increment, promised id). The chain is
 * confirmed by TT_HTTP2_SYNC_FRAMES frames in a row, or by frames ending
 * exactly at n: one when the chain begins at p[0], two otherwise (weak:
 * not taken while an earlier candidate needs more bytes to be judged; a
 * true boundary behind the first one always has a chain as long, so only
 * false candidates are passed over). HTTP/1.1
 * text never passes (its first three bytes read as a length over 600000). */
#define TT_HTTP2_SYNC_FRAMES 3u
long tt_http2_find_sync(const uint8_t *p, size_t n, tt_direction dir, size_t *from);

/* Which end sent the frames from p[0] (a frame boundary, as found by
 * tt_http2_find_sync): 1 the client, -1 the server, 0 cannot tell. Votes
 * of the complete frames: a header block opening with a request
 * pseudo-header from the static table (:method, :path, :scheme,
 * :authority) is the client's, with :status the server's; a DATA payload
 * opening "data:" or "event" (an event stream) and a PUSH_PROMISE are the
 * server's. For connections whose start (and SYN) was not seen, where the
 * source guessed which end is the client. */
int tt_http2_guess_role(const uint8_t *p, size_t n);

/* First header named `name` (exact, HTTP/2 names are lowercase); NULL when absent. */
const tt_h2_header *tt_http2_find_header(const tt_h2_headers *h, const char *name);

const char *tt_http2_frame_name(uint8_t type);
const char *tt_http2_error_name(tt_h2_error e);
const char *tt_http2_end_name(tt_h2_end e);

#endif
