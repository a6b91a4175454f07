/* capture_record.h - what the readers of a capture file (pcap_source.c)
 * and the walk they share (pcap_walk.c) agree on: a classic pcap record's
 * header, the one-line reasons a record cannot be read, and the capture's
 * clock put on the reference clock. */
#ifndef TT_CAPTURE_RECORD_H
#define TT_CAPTURE_RECORD_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { TT_CLASSIC_HEADER = 24, TT_RECORD_HEADER = 16, TT_CLASSIC_MAX_RECORD = 256 << 20 };

static inline uint32_t tt_read32(const uint8_t *p, bool swapped)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap32(v) : v;
}

/* A classic pcap record's header. */
typedef struct tt_classic_record {
    uint64_t wall_ns; /* the capture's instant, ns */
    uint32_t caplen, len;
} tt_classic_record;

static inline tt_classic_record tt_classic_record_read(const uint8_t *h, bool swapped, bool nano)
{
    uint64_t frac = tt_read32(h + 4, swapped);
    return (tt_classic_record){
        .wall_ns = (uint64_t)tt_read32(h, swapped) * 1000000000u + frac * (nano ? 1 : 1000),
        .caplen = tt_read32(h + 8, swapped),
        .len = tt_read32(h + 12, swapped),
    };
}

/* Whether the record header at file offset pos of a classic pcap
 * file_size bytes long is cut short by the file's end; if so, the one-line
 * reason in err (after `packets` packets). */
static inline bool tt_classic_header_cut(uint64_t file_size, uint64_t pos, uint64_t packets, char *err,
                                         size_t errlen)
{
    if (file_size - pos >= TT_RECORD_HEADER) return false;
    snprintf(err, errlen, "truncated capture after %llu packets (the file ends inside a record header)",
             (unsigned long long)packets);
    return true;
}

/* Whether the record at pos whose header claims caplen bytes cannot be
 * read whole (a claim past any sane size, or past the file's end); if so,
 * the one-line reason in err. */
static inline bool tt_classic_record_cut(uint64_t file_size, uint64_t pos, uint32_t caplen, uint64_t packets,
                                         char *err, size_t errlen)
{
    if (caplen > TT_CLASSIC_MAX_RECORD)
        snprintf(err, errlen, "damaged capture after %llu packets (a record claims %u bytes)",
                 (unsigned long long)packets, caplen);
    else if (file_size - pos - TT_RECORD_HEADER < caplen)
        snprintf(err, errlen, "truncated capture after %llu packets (the file ends inside a record)",
                 (unsigned long long)packets);
    else
        return false;
    return true;
}

/* The capture's clock put on the reference clock: minus a wall-to-monotonic
 * offset, then another host's clock mapped (tt_pcap_source_set_mono_offset,
 * _set_clock_map). */
typedef struct tt_capture_clock {
    bool has_offset;
    int64_t offset_ns;
    bool has_map;
    double map_d0, map_skew;
    int64_t map_t0;
} tt_capture_clock;

static inline uint64_t tt_capture_instant(const tt_capture_clock *c, uint64_t wall_ns)
{
    uint64_t ts = wall_ns - (c->has_offset ? (uint64_t)c->offset_ns : 0);
    if (c->has_map) ts += (uint64_t)llround(c->map_d0 + c->map_skew * (double)((int64_t)ts - c->map_t0));
    return ts;
}

#endif
