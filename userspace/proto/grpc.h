/* grpc.h - gRPC message framing of a response body: the sequence of
 * Length-Prefixed-Messages that gRPC over HTTP/2 carries in a stream's DATA
 * (grpc/grpc doc/PROTOCOL-HTTP2.md): a Compressed-Flag byte (0 or 1), a
 * Message-Length (4 bytes, unsigned, big-endian), then that many message
 * bytes. Same callbacks and record as sse.h; on_comment is never called.
 *
 * Standalone: it is fed body bytes (later, an HTTP/2 stream's DATA payload)
 * and knows nothing of HTTP/2, trailers or grpc-status.
 *
 * Record per message (decisions the framing leaves open):
 * - type NULL, type_len 0, id NULL, has_id false, retry_ms -1, fields 0,
 *   terminators 0, cr_off 0, comment_lines 0.
 * - data/data_len: the message bytes as they are on the wire (binary, NUL
 *   included; never decompressed, never parsed as protobuf). A zero-length
 *   message is an event with data "" and data_len 0.
 * - lines = data_lines = 1 for an event that carries a message (even an
 *   empty or partial one); 0 for one that carries only a prefix (a bad flag
 *   byte, or a prefix cut short by the body end).
 * - first_off/first_ns/first_chunk: the prefix's flag byte.
 * - dispatch_off/dispatch_ns/last_chunk: just past the message's last byte
 *   (for a zero-length message, just past the prefix's last length byte).
 *   An event is delivered only once its whole message went by, so these
 *   never depend on where the feeds were cut.
 * - flags: TT_FRAME_COMPRESSED when the flag byte was 1 (the data are then
 *   the compressed bytes, with whatever grpc-encoding the headers named).
 * - A message longer than TT_SSE_MAX_EVENT: its first TT_SSE_MAX_EVENT
 *   bytes are delivered flagged TT_FRAME_TRUNCATED when the message ends;
 *   the rest is skipped by its known length, so the next prefix is found.
 *   Memory is at most TT_SSE_MAX_EVENT for the kept bytes plus the parser.
 * - A flag byte other than 0 or 1: the framing is lost (gRPC defines no
 *   other value, and a length read from there would be a guess). One event
 *   flagged TT_FRAME_BAD_PREFIX is reported, data_len 0, first_off the bad
 *   byte, dispatch_off just past it (in that byte's feed). Every byte from
 *   the bad one to the body end is then ignored and counted
 *   (tt_grpc_ignored_bytes); no further event comes for this body, not even
 *   at finish. The flag byte is checked as soon as it arrives.
 * - At finish, a prefix or message the body end cut short is one event
 *   flagged TT_FRAME_UNTERMINATED: the bytes of the message that arrived
 *   (at most TT_SSE_MAX_EVENT, else TRUNCATED too), COMPRESSED when its flag
 *   byte said so, dispatch_off the body end, dispatch_ns the instant given
 *   to finish, last_chunk the feed that carried the last body byte.
 *
 * Pointers handed to callbacks are valid only during the callback.
 * Callbacks must not feed the same parser. */
#ifndef TT_GRPC_H
#define TT_GRPC_H

#include "sse.h"

/* Bytes of one Length-Prefixed-Message's prefix. */
#define TT_GRPC_PREFIX_LEN 5u

typedef struct tt_grpc_parser tt_grpc_parser;

/* A new parser at body start; cb is copied, either callback may be NULL
 * (cb itself may be NULL). NULL when out of memory. */
tt_grpc_parser *tt_grpc_new(const tt_frame_callbacks *cb, void *ud);
/* Frees the parser and its buffer; NULL is accepted. */
void tt_grpc_free(tt_grpc_parser *p);
/* Feed the next body bytes; body_off is the body offset of data[0] (it must
 * continue where the last feed ended). Each call, empty ones included, is
 * one chunk for the first_chunk/last_chunk ordinals. NULL p or data is
 * accepted (data NULL counts as an empty feed). */
void tt_grpc_feed(tt_grpc_parser *p, const uint8_t *data, size_t len, uint64_t body_off, uint64_t mono_ns);
/* The body ended: a cut prefix or message is reported with
 * TT_FRAME_UNTERMINATED. Afterwards the parser is back at body start (chunk
 * ordinal 0, framing in sync) and may parse another body. */
void tt_grpc_finish(tt_grpc_parser *p, uint64_t mono_ns);
/* Body bytes ignored because a bad flag byte lost the framing (that byte
 * included): for the body being parsed, or after finish for the body just
 * finished, until the next body's first feed. 0 for NULL. */
uint64_t tt_grpc_ignored_bytes(const tt_grpc_parser *p);

#endif
