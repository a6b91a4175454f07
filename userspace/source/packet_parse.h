/* packet_parse.h - one captured frame -> a TCP segment, parsed in place,
 * and which reader of a capture's shares owns it (analyze --jobs).
 *
 * No copies, no allocation: link header, any VLAN tags, IPv4 or IPv6 with
 * extension headers, TCP. Shared by the capture file's readers
 * (pcap_source.c) and the walk they share (pcap_walk.c). */
#ifndef TT_PACKET_PARSE_H
#define TT_PACKET_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pcap/pcap.h>

#include "../stream/tcp_reasm.h"

/* Link-type numbers that may appear raw in a file header on some systems. */
#define LINKTYPE_RAW_IP 101
#define LINKTYPE_RAW_OPENBSD 14
#define LINKTYPE_RAW_IP_OTHER 12
#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif
#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif

/* What a frame is: every frame is exactly one of these. */
typedef enum tt_packet_class {
    TT_PKT_TCP,
    TT_PKT_NON_IP,
    TT_PKT_NON_TCP,
    TT_PKT_FRAGMENT,
    TT_PKT_MALFORMED
} tt_packet_class;

/* Whether frames of link type lt (a DLT_ or LINKTYPE_ number) are parsed. */
bool tt_linktype_supported(int lt);

/* Parse the frame p[0, caplen) (wirelen bytes on the wire) of link type
 * lt. TT_PKT_TCP fills seg's endpoints, sequence numbers, flags, payload
 * (pointing into p), missing_len and marks; its ts_ns and order are left
 * to the caller. Any other class leaves seg partly written. */
tt_packet_class tt_packet_parse(int lt, const uint8_t *p, size_t caplen, size_t wirelen, tt_tcp_segment *seg);

/* Inline: the shared walk (pcap_walk.c) calls these for every record. */

static inline unsigned tt_be16(const uint8_t *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

static inline uint32_t tt_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* IP version carried, from the link header: 4, 6, 0 for another protocol,
 * -1 when the header itself is cut short. *off is set past the link header. */
static inline __attribute__((always_inline)) int tt_link_layer(int lt, const uint8_t *p, size_t caplen, size_t *off)
{
    unsigned ethertype;
    size_t o;
    switch (lt) {
    case DLT_EN10MB:
        if (caplen < 14) return -1;
        ethertype = tt_be16(p + 12);
        o = 14;
        break;
    case DLT_LINUX_SLL:
        if (caplen < 16) return -1;
        ethertype = tt_be16(p + 14);
        o = 16;
        break;
    case DLT_LINUX_SLL2:
        if (caplen < 20) return -1;
        ethertype = tt_be16(p);
        o = 20;
        break;
    case DLT_NULL:
    case DLT_LOOP: {
        if (caplen < 4) return -1;
        uint32_t fam;
        memcpy(&fam, p, 4);
        if (fam & 0xffff0000u) fam = __builtin_bswap32(fam); /* written in the other byte order */
        *off = 4;
        if (fam == 2) return 4;
        if (fam == 10 || fam == 24 || fam == 28 || fam == 30) return 6;
        return 0;
    }
    case DLT_IPV4:
    case DLT_IPV6:
    default: /* raw IP */
        *off = 0;
        if (caplen < 1) return -1;
        if (p[0] >> 4 == 4) return 4;
        if (p[0] >> 4 == 6) return 6;
        return 0;
    }
    while (ethertype == 0x8100 || ethertype == 0x88a8 || ethertype == 0x9100) {
        if (caplen < o + 4) return -1;
        ethertype = tt_be16(p + o + 2);
        o += 4;
    }
    *off = o;
    if (ethertype == 0x0800) return 4;
    if (ethertype == 0x86dd) return 6;
    return 0;
}

/* Which of `shares` readers owns a connection: a hash of its endpoints
 * that is the same in both directions (xor), cheap, as every reader
 * computes it for nearly every packet: of the xor of both addresses'
 * 32-bit words and the xor of both ports (host order). (One reader dealing
 * parsed segments to the others through queues measured no faster: the
 * hand-over cost about what it saved.) */
static inline unsigned tt_owner_mix(uint32_t addrs_xor, unsigned ports_xor, unsigned shares)
{
    uint64_t k = (uint64_t)addrs_xor << 16 ^ ports_xor;
    /* the hash's high 32 bits scaled to [0, shares) by a multiply, not a
     * division (tens of cycles, on every packet of every reader) */
    return (unsigned)((((k * 0x9E3779B97F4A7C15ull) >> 32) * shares) >> 32);
}

/* A connection's owner by its endpoints as a parse gives them: addresses
 * of 16 bytes (IPv4 in the first 4, the rest zero, so that an IPv4
 * address counts as its 4 bytes), ports in host order. */
static inline unsigned tt_endpoints_owner(const uint8_t a[16], const uint8_t b[16], unsigned port_a,
                                          unsigned port_b, unsigned shares)
{
    uint32_t x[4], y[4];
    memcpy(x, a, sizeof x);
    memcpy(y, b, sizeof y);
    return tt_owner_mix(x[0] ^ y[0] ^ x[1] ^ y[1] ^ x[2] ^ y[2] ^ x[3] ^ y[3], port_a ^ port_b, shares);
}

/* The quick owners below read a TCP segment's endpoints at fixed places,
 * before any parse. Wherever tt_packet_parse finds a TCP segment in a
 * packet one of them accepts, it reads its endpoints from these same
 * places, so a connection's packets have one owner whichever path they
 * take. A packet one accepts and tt_packet_parse finds damaged is its
 * owner's to count. */

/* An IPv4 header (of any length) carrying TCP. */
static inline __attribute__((always_inline)) bool tt_ipv4_tcp_owner(const uint8_t *ip, size_t room, unsigned shares,
                                                                    unsigned *owner)
{
    if (room < 20) return false;
    size_t ihl = (size_t)(ip[0] & 15) * 4;
    if (ip[0] >> 4 != 4 || ip[9] != 6 || ihl < 20 || room < ihl + 4) return false;
    uint32_t a, b;
    memcpy(&a, ip + 12, 4);
    memcpy(&b, ip + 16, 4);
    *owner = tt_owner_mix(a ^ b, tt_be16(ip + ihl) ^ tt_be16(ip + ihl + 2), shares);
    return true;
}

/* An IPv6 header followed at once by TCP (no extension header). */
static inline __attribute__((always_inline)) bool tt_ipv6_tcp_owner(const uint8_t *ip, size_t room, unsigned shares,
                                                                    unsigned *owner)
{
    if (room < 44 || ip[0] >> 4 != 6 || ip[6] != 6) return false;
    uint32_t w[8];
    memcpy(w, ip + 8, sizeof w);
    *owner = tt_owner_mix(w[0] ^ w[1] ^ w[2] ^ w[3] ^ w[4] ^ w[5] ^ w[6] ^ w[7],
                          tt_be16(ip + 40) ^ tt_be16(ip + 42), shares);
    return true;
}

/* The owner of frame p (link type lt) when it carries TCP over IPv4, or
 * over IPv6 with no extension header; false for any other frame, whose
 * owner takes a parse (tt_packet_owner). */
static inline __attribute__((always_inline)) bool tt_packet_quick_owner(int lt, const uint8_t *p, size_t caplen,
                                                                        unsigned shares, unsigned *owner)
{
    if (lt == DLT_EN10MB && caplen >= 14 && p[13] == 0x00 && p[12] == 0x08) /* the usual: no VLAN tag */
        return tt_ipv4_tcp_owner(p + 14, caplen - 14, shares, owner);
    size_t off;
    int version = tt_link_layer(lt, p, caplen, &off);
    if (version == 4) return tt_ipv4_tcp_owner(p + off, caplen - off, shares, owner);
    if (version == 6) return tt_ipv6_tcp_owner(p + off, caplen - off, shares, owner);
    return false;
}

/* tt_packet_owner's answer for a frame tt_packet_quick_owner does not
 * take: a parse's (*parsed: its class, seg filled). */
unsigned tt_packet_owner_by_parse(int lt, const uint8_t *p, size_t caplen, size_t wirelen, uint64_t packet_index,
                                  unsigned shares, tt_tcp_segment *seg, int *parsed);

/* The owner of any frame, the packet_index-th of its capture (1-based):
 * tt_packet_quick_owner's, else a parse's: a TCP segment's by its
 * endpoints, anything else by packet index. When it parsed the frame,
 * *parsed is the class (seg filled as by tt_packet_parse), else -1.
 * Inline: the shared walk asks it of every record. */
static inline __attribute__((always_inline)) unsigned tt_packet_owner(int lt, const uint8_t *p, size_t caplen, size_t wirelen,
                                       uint64_t packet_index, unsigned shares, tt_tcp_segment *seg, int *parsed)
{
    unsigned owner;
    *parsed = -1;
    if (tt_packet_quick_owner(lt, p, caplen, shares, &owner)) return owner;
    return tt_packet_owner_by_parse(lt, p, caplen, wirelen, packet_index, shares, seg, parsed);
}

#endif
