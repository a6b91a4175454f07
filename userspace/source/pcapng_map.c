/* pcapng_map.c - pcapng blocks read in place; see pcapng_map.h. */
#include "source/pcapng_map.h"

#include <stdio.h>
#include <string.h>

enum {
    BLOCK_SHB = 0x0A0D0D0A,
    BLOCK_IDB = 1,
    BLOCK_PB = 2, /* obsolete Packet Block */
    BLOCK_SPB = 3,
    BLOCK_EPB = 6,
    BYTE_ORDER_MAGIC = 0x1A2B3C4D,
    OPT_END = 0,
    OPT_IF_TSRESOL = 9,
    OPT_IF_TSOFFSET = 14,
    /* libpcap's snapshot when an interface gives none or more (its
     * MAXIMUM_SNAPLEN): a packet's captured length is cut to it */
    DEFAULT_SNAPSHOT = 262144,
    /* the largest block a window grows to hold (libpcap takes 16 MiB) */
    MAX_BLOCK = 256 << 20,
};

static uint16_t get16(const tt_pcapng_map *m, const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return m->swapped ? __builtin_bswap16(v) : v;
}

static uint32_t get32(const tt_pcapng_map *m, const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return m->swapped ? __builtin_bswap32(v) : v;
}

static uint64_t get64(const tt_pcapng_map *m, const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return m->swapped ? __builtin_bswap64(v) : v;
}

static int damaged(const tt_pcapng_map *m, char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "damaged capture after %llu packets (%s)", (unsigned long long)m->packets, why);
    return -1;
}

static int truncated(const tt_pcapng_map *m, char *err, size_t errlen)
{
    snprintf(err, errlen, "truncated capture after %llu packets (the file ends inside a block)",
             (unsigned long long)m->packets);
    return -1;
}

/* The byte order a Section Header Block at p (12 bytes readable) declares:
 * 0 native, 1 swapped, -1 neither. */
static int shb_order(const uint8_t *p)
{
    uint32_t magic;
    memcpy(&magic, p + 8, sizeof magic);
    if (magic == BYTE_ORDER_MAGIC) return 0;
    if (magic == __builtin_bswap32(BYTE_ORDER_MAGIC)) return 1;
    return -1;
}

bool tt_pcapng_map_init(tt_pcapng_map *m, const uint8_t *b, size_t len)
{
    memset(m, 0, sizeof *m);
    m->linktype = -1;
    if (len < 28) return false;
    uint32_t type;
    memcpy(&type, b, sizeof type);
    if (type != BLOCK_SHB) return false;
    int order = shb_order(b);
    if (order < 0) return false;
    m->b = b;
    m->len = len;
    m->swapped = order == 1;
    return true;
}

/* Units per second for an if_tsresol value; 0 when out of range. */
static uint64_t tsresol_units(uint8_t v)
{
    unsigned exp = v & 0x7f;
    if (v & 0x80) return exp <= 63 ? (uint64_t)1 << exp : 0;
    if (exp > 19) return 0; /* 10^20 does not fit */
    uint64_t u = 1;
    for (unsigned i = 0; i < exp; i++) u *= 10;
    return u;
}

/* An Interface Description Block's body, body_len bytes at p. */
static int take_interface(tt_pcapng_map *m, const uint8_t *p, size_t body_len, char *err, size_t errlen)
{
    if (body_len < 8) return damaged(m, err, errlen, "an interface block too short");
    if (m->n_ifaces == TT_PCAPNG_MAX_INTERFACES) return damaged(m, err, errlen, "more than 256 interfaces");
    tt_pcapng_iface *ifc = &m->ifaces[m->n_ifaces];
    ifc->linktype = get16(m, p);
    ifc->snaplen = get32(m, p + 4);
    ifc->units_per_sec = 1000000;
    ifc->offset_sec = 0;
    size_t at = 8;
    while (body_len - at >= 4) {
        uint16_t code = get16(m, p + at), olen = get16(m, p + at + 2);
        if (code == OPT_END) break;
        if ((size_t)olen > body_len - at - 4) return damaged(m, err, errlen, "an interface option runs past its block");
        const uint8_t *v = p + at + 4;
        if (code == OPT_IF_TSRESOL && olen >= 1) {
            ifc->units_per_sec = tsresol_units(v[0]);
            if (!ifc->units_per_sec) return damaged(m, err, errlen, "an interface's timestamp resolution is out of range");
        } else if (code == OPT_IF_TSOFFSET && olen == 8) {
            ifc->offset_sec = (int64_t)get64(m, v);
        }
        size_t padded = ((size_t)olen + 3) & ~(size_t)3;
        if (padded > body_len - at - 4) break;
        at += 4 + padded;
    }
    if (m->linktype < 0) {
        m->linktype = ifc->linktype;
        m->snaplen = ifc->snaplen;
    } else if (ifc->linktype != m->linktype) {
        return damaged(m, err, errlen, "an interface with a link type other than the first interface's");
    } else if (ifc->snaplen != m->snaplen) {
        return damaged(m, err, errlen, "an interface with a snap length other than the first interface's");
    }
    m->n_ifaces++;
    return 0;
}

/* The captured length libpcap would hand out: cut to the first
 * interface's snapshot. */
static uint32_t cut_to_snapshot(const tt_pcapng_map *m, uint32_t caplen)
{
    uint32_t snap = m->snaplen;
    if (snap == 0 || snap > DEFAULT_SNAPSHOT) snap = DEFAULT_SNAPSHOT;
    return caplen < snap ? caplen : snap;
}

static uint64_t stamp_ns(const tt_pcapng_iface *ifc, uint32_t hi, uint32_t lo)
{
    uint64_t t = (uint64_t)hi << 32 | lo;
    uint64_t sec = t / ifc->units_per_sec, frac = t % ifc->units_per_sec;
    uint64_t ns = (uint64_t)((unsigned __int128)frac * 1000000000u / ifc->units_per_sec);
    return (uint64_t)((int64_t)sec + ifc->offset_sec) * 1000000000u + ns;
}

/* A packet block with a timestamp (EPB, or the obsolete PB: iface_wide
 * false, a 16-bit interface id then 16 bits of drop count). */
static int take_timed_packet(tt_pcapng_map *m, const uint8_t *p, size_t body_len, bool iface_wide,
                             tt_pcapng_packet *pkt, char *err, size_t errlen)
{
    if (body_len < 20) return damaged(m, err, errlen, "a packet block too short");
    uint32_t iface = iface_wide ? get32(m, p) : get16(m, p);
    if (iface >= m->n_ifaces) return damaged(m, err, errlen, "a packet of an interface not described");
    uint32_t caplen = get32(m, p + 12);
    if (caplen > body_len - 20) return damaged(m, err, errlen, "a packet's captured length runs past its block");
    pkt->ts_ns = stamp_ns(&m->ifaces[iface], get32(m, p + 4), get32(m, p + 8));
    pkt->data = p + 20;
    pkt->caplen = cut_to_snapshot(m, caplen);
    pkt->len = get32(m, p + 16);
    return 1;
}

static int take_simple_packet(tt_pcapng_map *m, const uint8_t *p, size_t body_len, tt_pcapng_packet *pkt, char *err,
                              size_t errlen)
{
    if (body_len < 4) return damaged(m, err, errlen, "a simple packet block too short");
    if (!m->n_ifaces) return damaged(m, err, errlen, "a simple packet block before any interface");
    uint32_t len = get32(m, p), caplen = len;
    if (m->ifaces[0].snaplen && caplen > m->ifaces[0].snaplen) caplen = m->ifaces[0].snaplen;
    if (caplen > body_len - 4) caplen = (uint32_t)(body_len - 4);
    pkt->ts_ns = 0; /* a simple packet carries no timestamp (libpcap reports 0) */
    pkt->data = p + 4;
    pkt->caplen = cut_to_snapshot(m, caplen);
    pkt->len = len;
    return 1;
}

int tt_pcapng_map_next(tt_pcapng_map *m, tt_pcapng_packet *pkt, char *err, size_t errlen)
{
    while (m->pos < m->len || m->more) {
        const uint8_t *blk = m->b + m->pos;
        size_t room = m->len - m->pos;
        if (room < 12 && m->more) {
            m->need = 12;
            return 2;
        }
        if (room < 12) return truncated(m, err, errlen);
        uint32_t type;
        memcpy(&type, blk, sizeof type);
        if (type == BLOCK_SHB) {
            int order = shb_order(blk);
            if (order < 0) return damaged(m, err, errlen, "a section header without its byte-order magic");
            if ((order == 1) != m->swapped) return damaged(m, err, errlen, "a section in the other byte order");
            m->n_ifaces = 0; /* interfaces are numbered per section */
        } else {
            type = get32(m, blk);
        }
        uint32_t total = get32(m, blk + 4);
        if (total < 12 || total % 4) return damaged(m, err, errlen, "a block length that is not a multiple of 4 of at least 12");
        if (total > room && m->more) {
            if (total - room > m->more) return truncated(m, err, errlen);
            if (total > MAX_BLOCK) return damaged(m, err, errlen, "a block of more than 256 MiB");
            m->need = total;
            return 2;
        }
        if (total > room) return truncated(m, err, errlen);
        if (get32(m, blk + total - 4) != total) return damaged(m, err, errlen, "a block's two lengths differ");
        const uint8_t *body = blk + 8;
        size_t body_len = total - 12;
        m->pos += total;
        int rc = 0;
        switch (type) {
        case BLOCK_SHB:
            if (body_len < 16) return damaged(m, err, errlen, "a section header too short");
            if (get16(m, body + 4) != 1) return damaged(m, err, errlen, "a section of a pcapng major version other than 1");
            break;
        case BLOCK_IDB: rc = take_interface(m, body, body_len, err, errlen); break;
        case BLOCK_EPB: rc = take_timed_packet(m, body, body_len, true, pkt, err, errlen); break;
        case BLOCK_PB: rc = take_timed_packet(m, body, body_len, false, pkt, err, errlen); break;
        case BLOCK_SPB: rc = take_simple_packet(m, body, body_len, pkt, err, errlen); break;
        default: break; /* name resolution, statistics, custom, ...: not packets */
        }
        if (rc < 0) return -1;
        if (rc == 1) {
            m->packets++;
            return 1;
        }
    }
    return 0;
}
