/* packet_parse.c - one captured frame -> a TCP segment (packet_parse.h).
 * Anything that is not a whole, well-formed TCP segment is classed and
 * left to the caller to count. */
#include "packet_parse.h"

#include <pcap/pcap.h>
#include <string.h>

bool tt_linktype_supported(int lt)
{
    switch (lt) {
    case DLT_NULL:
    case DLT_EN10MB:
    case LINKTYPE_RAW_IP_OTHER:
    case LINKTYPE_RAW_OPENBSD:
    case LINKTYPE_RAW_IP:
    case DLT_LOOP:
    case DLT_LINUX_SLL:
    case DLT_LINUX_SLL2:
    case DLT_IPV4:
    case DLT_IPV6:
        return true;
    default:
        return false;
    }
}

/* l4: the TCP header; cap / wire: bytes of it captured / on the wire. */
static tt_packet_class parse_tcp(const uint8_t *l4, size_t cap, size_t wire, tt_tcp_segment *seg)
{
    if (cap < 20) return TT_PKT_MALFORMED;
    size_t doff = (size_t)(l4[12] >> 4) * 4;
    if (doff < 20 || doff > cap) return TT_PKT_MALFORMED;
    seg->src.port = (uint16_t)tt_be16(l4);
    seg->dst.port = (uint16_t)tt_be16(l4 + 2);
    seg->seq = tt_be32(l4 + 4);
    seg->ack = tt_be32(l4 + 8);
    seg->flags = l4[13];
    seg->payload = l4 + doff;
    seg->payload_len = cap - doff;
    seg->missing_len = wire - cap;
    seg->ready_mark = seg->seq_mark = false;
    seg->ready_len = seg->kernel_seq = 0;
    if (doff == 28 && seg->payload_len == 0 && l4[20] == TT_TCP_OPT_EXPERIMENT && l4[21] == 8) {
        if (tt_be16(l4 + 22) == TT_TCP_READY_EXID) {
            seg->ready_mark = true;
            seg->ready_len = tt_be32(l4 + 24);
        } else if (tt_be16(l4 + 22) == TT_TCP_SEQ_EXID) {
            seg->seq_mark = true;
            seg->kernel_seq = tt_be32(l4 + 24);
        }
    }
    return TT_PKT_TCP;
}

static tt_packet_class parse_ipv4(const uint8_t *ip, size_t cap, size_t wire, tt_tcp_segment *seg)
{
    if (cap < 20 || ip[0] >> 4 != 4) return TT_PKT_MALFORMED;
    size_t ihl = (size_t)(ip[0] & 15) * 4;
    if (ihl < 20 || ihl > cap) return TT_PKT_MALFORMED;
    size_t total = tt_be16(ip + 2);
    if (total == 0) total = wire; /* segmentation offload: length left to the NIC */
    if (total < ihl || total > wire) return TT_PKT_MALFORMED;
    if (tt_be16(ip + 6) & 0x3fff) return TT_PKT_FRAGMENT;
    if (ip[9] != 6) return TT_PKT_NON_TCP;
    seg->src.family = seg->dst.family = 4;
    memset(seg->src.addr, 0, sizeof seg->src.addr);
    memset(seg->dst.addr, 0, sizeof seg->dst.addr);
    memcpy(seg->src.addr, ip + 12, 4);
    memcpy(seg->dst.addr, ip + 16, 4);
    size_t end_cap = cap < total ? cap : total; /* also drops Ethernet padding */
    return parse_tcp(ip + ihl, end_cap - ihl, total - ihl, seg);
}

static tt_packet_class parse_ipv6(const uint8_t *ip, size_t cap, size_t wire, tt_tcp_segment *seg)
{
    if (cap < 40 || ip[0] >> 4 != 6) return TT_PKT_MALFORMED;
    size_t total = 40 + tt_be16(ip + 4);
    if (total == 40 && ip[6] == 0 && wire > 40) total = wire; /* jumbogram (hop-by-hop) */
    if (total > wire) return TT_PKT_MALFORMED;
    size_t end_cap = cap < total ? cap : total;
    unsigned next = ip[6];
    size_t pos = 40;
    for (int hops = 0;; hops++) {
        if (next == 6) break;
        if (next == 44) return TT_PKT_FRAGMENT;
        if (next != 0 && next != 43 && next != 60 && next != 51) return TT_PKT_NON_TCP;
        if (hops >= 16 || pos + 8 > end_cap) return TT_PKT_MALFORMED;
        size_t len = next == 51 ? ((size_t)ip[pos + 1] + 2) * 4 : ((size_t)ip[pos + 1] + 1) * 8;
        next = ip[pos];
        pos += len;
    }
    if (pos > end_cap) return TT_PKT_MALFORMED;
    seg->src.family = seg->dst.family = 6;
    memcpy(seg->src.addr, ip + 8, 16);
    memcpy(seg->dst.addr, ip + 24, 16);
    return parse_tcp(ip + pos, end_cap - pos, total - pos, seg);
}

tt_packet_class tt_packet_parse(int lt, const uint8_t *p, size_t caplen, size_t wirelen, tt_tcp_segment *seg)
{
    size_t off = 0;
    if (wirelen < caplen) wirelen = caplen;
    int ver = tt_link_layer(lt, p, caplen, &off);
    if (ver < 0) return TT_PKT_MALFORMED;
    if (ver == 0) return TT_PKT_NON_IP;
    if (ver == 4) return parse_ipv4(p + off, caplen - off, wirelen - off, seg);
    return parse_ipv6(p + off, caplen - off, wirelen - off, seg);
}

unsigned tt_packet_owner_by_parse(int lt, const uint8_t *p, size_t caplen, size_t wirelen, uint64_t packet_index,
                                  unsigned shares, tt_tcp_segment *seg, int *parsed)
{
    tt_packet_class k = tt_packet_parse(lt, p, caplen, wirelen, seg);
    *parsed = (int)k;
    /* what the quick read left: a TCP segment by its endpoints, the rest
     * (counted by one reader only) by packet index */
    return k == TT_PKT_TCP ? tt_endpoints_owner(seg->src.addr, seg->dst.addr, seg->src.port, seg->dst.port, shares)
                           : (unsigned)(packet_index % shares);
}
