/* content_decode.h - incremental gzip / deflate body decoding with zlib.
 *
 * One decoder per HTTP parser, reused message after message. Output is
 * produced into a fixed buffer and handed to a sink in pieces of at most
 * TT_DECODE_PIECE bytes, so a decompression bomb costs time, never memory.
 *
 * gzip: one or more gzip members back to back (RFC 1952).
 * deflate: the first two bytes decide: a valid zlib header (RFC 1950) means
 * zlib-wrapped, anything else raw deflate (RFC 1951), as sent by some
 * servers. Bytes after the end of a deflate stream are an error. */
#ifndef TT_CONTENT_DECODE_H
#define TT_CONTENT_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/http1.h"

#define TT_DECODE_PIECE (16u * 1024u)

typedef struct tt_content_decoder tt_content_decoder;

/* Receives decoded bytes; data is valid only during the call. */
typedef void (*tt_decode_sink)(void *ctx, const uint8_t *data, size_t len);

/* Allocate an idle decoder; NULL on allocation failure. */
tt_content_decoder *tt_decoder_new(void);
void tt_decoder_free(tt_content_decoder *d);

/* Start a new body coded with `coding` (GZIP or DEFLATE). Returns 0, or -1
 * when zlib could not be set up. */
int tt_decoder_begin(tt_content_decoder *d, tt_content_coding coding);

/* Decode the next n compressed bytes, calling sink for every output piece.
 * Returns 0, or -1 on a corrupt stream: then *consumed is how many of the n
 * bytes were read before the error was found and tt_decoder_error says why. */
int tt_decoder_feed(tt_content_decoder *d, const uint8_t *in, size_t n,
                    tt_decode_sink sink, void *ctx, size_t *consumed);

/* True when no compressed byte was fed since begin, or the last stream
 * (member) ended exactly: the body is whole. */
bool tt_decoder_at_end(const tt_content_decoder *d);

/* A short static description of the last error. */
const char *tt_decoder_error(const tt_content_decoder *d);

#endif
