/* pcap_walk.h - one walk of a capture file's records, shared by the
 * threads that reassemble its shares (analyze --jobs).
 *
 * The file (classic pcap or pcapng) is read in chunks of about
 * chunk_bytes, each into a buffer of its own: whichever reader needs a
 * chunk nobody has walked yet reads and walks it and a few after it (the
 * others wait only while a chunk they need is being walked), reading each
 * record's header, stamping its instant and finding which share owns its
 * packet (packet_parse.h); each record goes into its owner's list for that
 * chunk. Every reader then goes through its own list of every chunk in
 * order and parses its packets in the chunk's buffer: the file is read
 * once, not once per reader.
 *
 * Chunks live in a ring of WALK_SLOTS slots; a slot is walked again only
 * once every reader has gone through it. So all `shares` readers must run
 * at once, each on its own thread: one that waits for another that never
 * runs waits for ever. */
#ifndef TT_PCAP_WALK_H
#define TT_PCAP_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture_record.h"
#include "pcapng_map.h"

typedef struct tt_pcap_walk tt_pcap_walk;

/* The file's format, as its reader (pcap_source.c) found it at open. */
typedef struct tt_walk_format {
    bool pcapng;
    const tt_pcapng_map *ng; /* pcapng: the reader as it stands at data_start (copied) */
    bool swapped, nano;      /* classic pcap */
    int linktype;            /* every interface's, for pcapng */
} tt_walk_format;

/* One record of a chunk, in its owner's list. */
typedef struct tt_walk_record {
    uint64_t ts_ns;    /* on the reference clock (tt_capture_instant) */
    uint32_t data_off; /* the frame, in the chunk's buffer */
    uint32_t caplen, len;
    uint32_t index;    /* the packet's 1-based index in the file, less the chunk's first_index */
} tt_walk_record;

/* A reader's part of one chunk. */
typedef struct tt_walk_view {
    const uint8_t *chunk; /* the chunk's buffer: its first byte is the file's at the chunk's start */
    const tt_walk_record *recs;
    size_t n;
    uint64_t first_index; /* packets before the chunk */
    uint64_t end_off;     /* the file offset the walk reached at the chunk's end */
    bool last;            /* no chunk follows (the file ended, or was damaged: tt_pcap_walk_totals) */
} tt_walk_view;

/* What the walk counted over the whole file, final once a reader has had
 * the view of the last chunk. */
typedef struct tt_walk_totals {
    uint64_t packets, bytes, snapped; /* snapped: caplen < len */
    uint64_t first_ns, last_ns;       /* on the reference clock */
    bool failed;                      /* the walk stopped at damage, a failed read or want of memory: err */
    char err[256];
} tt_walk_totals;

/* A walk of the file fd (file_size bytes at open; read with pread, so
 * its offset is left alone) for `shares` readers (at least 2), its records
 * read in chunks of chunk_bytes (0: 256 KiB) from data_start (the first
 * record's, or block's, offset) with instants on *clock (read as the walk
 * goes: it must outlive the walk). NULL when memory runs out (the readers
 * then walk the file each). */
tt_pcap_walk *tt_pcap_walk_new(int fd, uint64_t file_size, const tt_walk_format *format, uint64_t data_start,
                               const tt_capture_clock *clock, unsigned shares, size_t chunk_bytes);

/* Reader `share`'s part of chunk number seq (0, 1, 2 ... in turn, until a
 * view says last): waits until the chunk is walked, walking it when no one
 * is. The view stays valid until tt_pcap_walk_put(w, seq). */
void tt_pcap_walk_get(tt_pcap_walk *w, unsigned share, uint64_t seq, tt_walk_view *view);

/* Reader is done with chunk seq. */
void tt_pcap_walk_put(tt_pcap_walk *w, uint64_t seq);

const tt_walk_totals *tt_pcap_walk_totals(const tt_pcap_walk *w);

/* Free, once every reader is done; NULL is ignored. */
void tt_pcap_walk_free(tt_pcap_walk *w);

#endif
