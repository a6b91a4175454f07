/* pcapng_map.h - the packets of a pcapng capture read in place from
 * memory (the whole file, or a window of it that the caller slides), as
 * libpcap would return them, without its copy of every block through stdio.
 *
 * What is read: Section Header Blocks (either byte order; a later section
 * may not change it, as libpcap refuses too; each section starts a new
 * interface list), Interface Description Blocks (link type, snap length,
 * if_tsresol, if_tsoffset; every interface must have the first one's link
 * type and snap length, as libpcap requires: one pcap_t has one of each), Enhanced Packet Blocks, Simple Packet Blocks
 * (interface 0, captured length min(original, snap length, block room))
 * and the obsolete Packet Blocks. Every other block is skipped by its
 * length. Timestamps become nanoseconds since
 * the epoch the way libpcap's nanosecond precision does: units per second
 * from if_tsresol (10^-n or 2^-n, default microseconds), the fraction
 * scaled and truncated, if_tsoffset seconds added. */
#ifndef TT_PCAPNG_MAP_H
#define TT_PCAPNG_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TT_PCAPNG_MAX_INTERFACES 256

typedef struct tt_pcapng_iface {
    int linktype;
    uint32_t snaplen;
    uint64_t units_per_sec; /* 0: a resolution too fine to convert (more than 2^63 units) */
    int64_t offset_sec;
} tt_pcapng_iface;

typedef struct tt_pcapng_map {
    const uint8_t *b;
    size_t len, pos;
    /* A window of the file: how many bytes of the file follow b[len - 1]
     * (0: none). A block that does not fit what is left then makes _next
     * return 2 with need set: the caller makes b[pos, pos + need) readable
     * (moving the window: b, len and pos change, pos staying the same file
     * offset) and calls again, or, when the file ends first, sets more to 0.
     * A block longer than the rest of the file is a truncated one, however
     * long it claims to be. */
    uint64_t more;
    size_t need;
    bool swapped; /* the section is in the other byte order */
    tt_pcapng_iface ifaces[TT_PCAPNG_MAX_INTERFACES];
    size_t n_ifaces;
    int linktype;     /* the first interface's; -1 before any */
    uint32_t snaplen; /* the first interface's */
    uint64_t packets;
} tt_pcapng_map;

/* One packet, pointing into b. */
typedef struct tt_pcapng_packet {
    uint64_t ts_ns;
    const uint8_t *data;
    uint32_t caplen, len;
} tt_pcapng_packet;

/* Start reading b[0, len): true when it begins with a Section Header Block
 * this reader understands (else the caller keeps libpcap). */
bool tt_pcapng_map_init(tt_pcapng_map *m, const uint8_t *b, size_t len);

/* The next packet: 1 with *pkt set (pointing into b), 0 at the end of the
 * file, 2 when the window must move (more set; see need), -1 with a
 * one-line reason in err ("truncated capture ..." when the file ends inside
 * a block, "damaged capture ..." otherwise). */
int tt_pcapng_map_next(tt_pcapng_map *m, tt_pcapng_packet *pkt, char *err, size_t errlen);

#endif
