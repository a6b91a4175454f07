/* probe_recs.h - records as probe/probe.c writes them, and chunks as one
 * trace line each, for the tests of the probe's reader
 * (source/probe_source.h). */
#ifndef TT_PROBE_RECS_H
#define TT_PROBE_RECS_H

#include <stddef.h>
#include <stdint.h>

#include "stream/tcp_reasm.h"

/* A record as the probe writes it, into out (room for the record and
 * data): 10.0.0.1:40000 -> 10.0.0.2:8000 locally, `data` (NULL: none) its
 * bytes, total the call's length (0: data's; more: the record is cut).
 * Returns its size. */
size_t probe_rec(uint8_t *out, uint8_t kind, uint8_t dir, uint8_t role, uint8_t layer, int fd, uint64_t sock,
                 uint64_t ts, const char *data, uint32_t total);

/* A chunk sink (ctx: a tt_strbuf) writing every chunk as one trace line. */
void trace_chunk(void *ctx, const tt_chunk *c);

#endif
