/* pcap_source.c - capture file -> TCP segments -> reassembler.
 *
 * One pass over the file. A classic pcap or pcapng regular file is read
 * here, in windows of READ_WINDOW bytes (pread; a record is never split),
 * anything else with pcap_next_ex. Each packet is parsed in place (no
 * copies, no allocation): link header, any VLAN tags, IPv4 or IPv6 with
 * extension headers, TCP. Anything that is not a whole, well-formed TCP
 * segment is counted in the stats and skipped. */
#include "pcap_source.h"

#include <errno.h>
#include <math.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "core/util.h"
#include "source/pcapng_map.h"

#define PROGRESS_STEP (1u << 20)

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

#define READ_BUFFER (1u << 20)
/* Read here, a window this size is refilled by one pread: small enough to
 * stay in cache while its records are parsed. (A mapping of the whole file
 * cost five times as much to walk on the bench machine of 2026-12-04: page
 * tables filled and a cache miss per record header, one after the other.
 * On 2026-12-06's kernel it walked faster than the pread copy, but a file
 * cut short while mapped kills the reader with SIGBUS: docs/performance.md.) */
#define READ_WINDOW (256u << 10)

struct tt_pcap_source {
    pcap_t *pcap;
    /* Read here (own_reader) rather than through libpcap's per-record fread:
     * the file, as long as it was at open (file_size), through a window
     * that holds file bytes [win_off, win_off + win_len). */
    bool own_reader;
    int fd;                     /* libpcap's FILE's, not closed here */
    uint8_t *win;
    size_t win_cap, win_len;
    uint64_t win_off;
    int read_errno;             /* a pread that failed (or 0: the file was cut short) */
    size_t read_chunk;          /* the most one pread asks for; 0: as much as the window holds */
    bool own_swapped, own_nano; /* classic pcap */
    bool own_ng;                /* pcapng, read by ng over the window */
    tt_pcapng_map ng;
    char *read_buffer; /* stdio buffer of the capture file; outlives pcap_close */
    uint64_t file_size; /* 0 when not a regular file */
    bool has_offset;
    int64_t offset_ns;
    bool has_map;              /* another host's clock onto the reference's (tt_pcap_source_set_clock_map) */
    double map_d0, map_skew;
    int64_t map_t0;
    /* tt_pcap_source_share: of the connections, this source reassembles
     * those whose owner_of is share (of shares; 0 of 0: every one). */
    unsigned share, shares;
    tt_pcap_stats stats;
};

typedef enum packet_class {
    PKT_TCP,
    PKT_NON_IP,
    PKT_NON_TCP,
    PKT_FRAGMENT,
    PKT_MALFORMED
} packet_class;

static bool linktype_supported(int lt)
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

static inline unsigned be16(const uint8_t *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

static inline uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* IP version carried, from the link header: 4, 6, 0 for another protocol,
 * -1 when the header itself is cut short. *off is set past the link header. */
static inline __attribute__((always_inline)) int link_layer(int lt, const uint8_t *p, size_t caplen, size_t *off)
{
    unsigned ethertype;
    size_t o;
    switch (lt) {
    case DLT_EN10MB:
        if (caplen < 14) return -1;
        ethertype = be16(p + 12);
        o = 14;
        break;
    case DLT_LINUX_SLL:
        if (caplen < 16) return -1;
        ethertype = be16(p + 14);
        o = 16;
        break;
    case DLT_LINUX_SLL2:
        if (caplen < 20) return -1;
        ethertype = be16(p);
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
        ethertype = be16(p + o + 2);
        o += 4;
    }
    *off = o;
    if (ethertype == 0x0800) return 4;
    if (ethertype == 0x86dd) return 6;
    return 0;
}

/* l4: the TCP header; cap / wire: bytes of it captured / on the wire. */
static packet_class parse_tcp(const uint8_t *l4, size_t cap, size_t wire, tt_tcp_segment *seg)
{
    if (cap < 20) return PKT_MALFORMED;
    size_t doff = (size_t)(l4[12] >> 4) * 4;
    if (doff < 20 || doff > cap) return PKT_MALFORMED;
    seg->src.port = (uint16_t)be16(l4);
    seg->dst.port = (uint16_t)be16(l4 + 2);
    seg->seq = be32(l4 + 4);
    seg->ack = be32(l4 + 8);
    seg->flags = l4[13];
    seg->payload = l4 + doff;
    seg->payload_len = cap - doff;
    seg->missing_len = wire - cap;
    seg->ready_mark = seg->seq_mark = false;
    seg->ready_len = seg->kernel_seq = 0;
    if (doff == 28 && seg->payload_len == 0 && l4[20] == TT_TCP_OPT_EXPERIMENT && l4[21] == 8) {
        if (be16(l4 + 22) == TT_TCP_READY_EXID) {
            seg->ready_mark = true;
            seg->ready_len = be32(l4 + 24);
        } else if (be16(l4 + 22) == TT_TCP_SEQ_EXID) {
            seg->seq_mark = true;
            seg->kernel_seq = be32(l4 + 24);
        }
    }
    return PKT_TCP;
}

static packet_class parse_ipv4(const uint8_t *ip, size_t cap, size_t wire, tt_tcp_segment *seg)
{
    if (cap < 20 || ip[0] >> 4 != 4) return PKT_MALFORMED;
    size_t ihl = (size_t)(ip[0] & 15) * 4;
    if (ihl < 20 || ihl > cap) return PKT_MALFORMED;
    size_t total = be16(ip + 2);
    if (total == 0) total = wire; /* segmentation offload: length left to the NIC */
    if (total < ihl || total > wire) return PKT_MALFORMED;
    if (be16(ip + 6) & 0x3fff) return PKT_FRAGMENT;
    if (ip[9] != 6) return PKT_NON_TCP;
    seg->src.family = seg->dst.family = 4;
    memset(seg->src.addr, 0, sizeof seg->src.addr);
    memset(seg->dst.addr, 0, sizeof seg->dst.addr);
    memcpy(seg->src.addr, ip + 12, 4);
    memcpy(seg->dst.addr, ip + 16, 4);
    size_t end_cap = cap < total ? cap : total; /* also drops Ethernet padding */
    return parse_tcp(ip + ihl, end_cap - ihl, total - ihl, seg);
}

static packet_class parse_ipv6(const uint8_t *ip, size_t cap, size_t wire, tt_tcp_segment *seg)
{
    if (cap < 40 || ip[0] >> 4 != 6) return PKT_MALFORMED;
    size_t total = 40 + be16(ip + 4);
    if (total == 40 && ip[6] == 0 && wire > 40) total = wire; /* jumbogram (hop-by-hop) */
    if (total > wire) return PKT_MALFORMED;
    size_t end_cap = cap < total ? cap : total;
    unsigned next = ip[6];
    size_t pos = 40;
    for (int hops = 0;; hops++) {
        if (next == 6) break;
        if (next == 44) return PKT_FRAGMENT;
        if (next != 0 && next != 43 && next != 60 && next != 51) return PKT_NON_TCP;
        if (hops >= 16 || pos + 8 > end_cap) return PKT_MALFORMED;
        size_t len = next == 51 ? ((size_t)ip[pos + 1] + 2) * 4 : ((size_t)ip[pos + 1] + 1) * 8;
        next = ip[pos];
        pos += len;
    }
    if (pos > end_cap) return PKT_MALFORMED;
    seg->src.family = seg->dst.family = 6;
    memcpy(seg->src.addr, ip + 8, 16);
    memcpy(seg->dst.addr, ip + 24, 16);
    return parse_tcp(ip + pos, end_cap - pos, total - pos, seg);
}

static packet_class parse_packet(int lt, const uint8_t *p, size_t caplen, size_t wirelen, tt_tcp_segment *seg)
{
    size_t off = 0;
    if (wirelen < caplen) wirelen = caplen;
    int ver = link_layer(lt, p, caplen, &off);
    if (ver < 0) return PKT_MALFORMED;
    if (ver == 0) return PKT_NON_IP;
    if (ver == 4) return parse_ipv4(p + off, caplen - off, wirelen - off, seg);
    return parse_ipv6(p + off, caplen - off, wirelen - off, seg);
}

enum { CLASSIC_HEADER = 24, RECORD_HEADER = 16, CLASSIC_MAX_RECORD = 256 << 20 };

static uint32_t read32(const uint8_t *p, bool swapped)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap32(v) : v;
}

/* Make file bytes [off, off + need) readable in the window; a pointer to
 * off's byte, valid until the next call. NULL when the file (as long as it
 * was at open) ends first, or a read fails (read_errno). */
static const uint8_t *window_at(tt_pcap_source *s, uint64_t off, size_t need)
{
    if (off >= s->win_off && need <= s->win_len && off - s->win_off <= s->win_len - need)
        return s->win + (off - s->win_off);
    if (off > s->file_size || need > s->file_size - off) return NULL;
    size_t keep = 0; /* what the window holds from off on */
    if (off >= s->win_off && off - s->win_off < s->win_len) {
        keep = s->win_len - (size_t)(off - s->win_off);
        memmove(s->win, s->win + (off - s->win_off), keep);
    }
    s->win_off = off;
    s->win_len = keep;
    if (need > s->win_cap) {
        size_t cap = need > 2 * s->win_cap ? need : 2 * s->win_cap;
        uint8_t *w = realloc(s->win, cap);
        if (!w) {
            s->read_errno = ENOMEM;
            return NULL;
        }
        s->win = w;
        s->win_cap = cap;
    }
    while (s->win_len < need) {
        uint64_t left = s->file_size - (s->win_off + s->win_len);
        size_t want = s->win_cap - s->win_len < left ? s->win_cap - s->win_len : (size_t)left;
        if (s->read_chunk && want > s->read_chunk) want = s->read_chunk;
        ssize_t n = pread(s->fd, s->win + s->win_len, want, (off_t)(s->win_off + s->win_len));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            s->read_errno = n < 0 ? errno : 0;
            return NULL;
        }
        s->win_len += (size_t)n;
    }
    return s->win;
}

/* A capture file is read here instead of by libpcap (which still checks
 * its header at open) when it is a regular file in classic pcap or pcapng
 * (pcapng_map.h): the same records, without a copy of each through stdio. */
static void own_file(tt_pcap_source *s, int fd, const struct stat *st)
{
    if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size < CLASSIC_HEADER) return;
    s->fd = fd;
    s->win_cap = READ_WINDOW;
    s->win = malloc(s->win_cap);
    const uint8_t *b = s->win ? window_at(s, 0, CLASSIC_HEADER) : NULL;
    if (!b) {
        free(s->win);
        s->win = NULL;
        return;
    }
    uint32_t magic;
    memcpy(&magic, b, sizeof magic);
    switch (magic) {
    case 0xa1b2c3d4: s->own_swapped = false; s->own_nano = false; break;
    case 0xd4c3b2a1: s->own_swapped = true; s->own_nano = false; break;
    case 0xa1b23c4d: s->own_swapped = false; s->own_nano = true; break;
    case 0x4d3cb2a1: s->own_swapped = true; s->own_nano = true; break;
    default:
        if (!tt_pcapng_map_init(&s->ng, s->win, s->win_len) || tt_env_flag("TOKENTAP_PCAPNG_LIBPCAP")) {
            free(s->win);
            s->win = NULL;
            return;
        }
        s->own_ng = true;
        s->ng.more = s->win_len < s->file_size;
        break;
    }
    s->own_reader = true;
}

tt_pcap_source *tt_pcap_source_open(const char *path, char *err, size_t errlen)
{
    char pcap_err[PCAP_ERRBUF_SIZE] = "";
    struct stat st;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(fp), &st) != 0) {
        snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
        fclose(fp);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: is a directory, not a capture file", path);
        fclose(fp);
        return NULL;
    }
    if (S_ISREG(st.st_mode) && st.st_size == 0) {
        snprintf(err, errlen, "%s: empty file, not a capture", path);
        fclose(fp);
        return NULL;
    }
    tt_pcap_source *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        fclose(fp);
        return NULL;
    }
    s->file_size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    own_file(s, fileno(fp), &st); /* pread: fp's own position stays at 0 */
    /* libpcap freads record by record: when it reads them (a pipe, a file
     * this reader does not take), a large buffer saves a read() per 4 KiB;
     * otherwise it reads only the file header, and a large buffer would
     * cost its first fill (a page fault per 4 KiB) for nothing. */
    if (!s->own_reader) {
        s->read_buffer = malloc(READ_BUFFER);
        if (s->read_buffer) setvbuf(fp, s->read_buffer, _IOFBF, READ_BUFFER);
    }
    pcap_t *pc = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, pcap_err);
    if (!pc) {
        snprintf(err, errlen, "%s: not a pcap or pcapng capture (libpcap: %s)", path, pcap_err);
        fclose(fp);
        tt_pcap_source_close(s);
        return NULL;
    }
    s->pcap = pc;
    int lt = pcap_datalink(pc);
    if (!linktype_supported(lt)) {
        const char *name = pcap_datalink_val_to_name(lt);
        snprintf(err, errlen, "%s: unsupported link type %d (%s); supported: EN10MB, LINUX_SLL, LINUX_SLL2, NULL, LOOP, RAW, IPV4, IPV6",
                 path, lt, name ? name : "unknown");
        tt_pcap_source_close(s);
        return NULL;
    }
    s->stats.linktype = lt;
    return s;
}

void tt_pcap_source_set_mono_offset(tt_pcap_source *s, int64_t offset_ns)
{
    s->has_offset = true;
    s->offset_ns = offset_ns;
}

void tt_pcap_source_set_clock_map(tt_pcap_source *s, double d0_ns, double skew, int64_t t0_ns)
{
    s->has_map = true;
    s->map_d0 = d0_ns;
    s->map_skew = skew;
    s->map_t0 = t0_ns;
}

void tt_pcap_source_set_read_chunk(tt_pcap_source *s, size_t bytes)
{
    s->read_chunk = bytes;
}

bool tt_pcap_source_shareable(const tt_pcap_source *s)
{
    return s->own_reader;
}

tt_pcap_source *tt_pcap_source_share(tt_pcap_source *s, unsigned share, unsigned shares)
{
    if (!s->own_reader || shares < 2 || share == 0 || share >= shares || s->stats.packets) return NULL;
    tt_pcap_source *view = malloc(sizeof *view);
    uint8_t *win = view ? malloc(s->win_cap) : NULL;
    if (!win) {
        free(view);
        return NULL;
    }
    *view = *s; /* the same file descriptor (pread), its own window */
    memcpy(win, s->win, s->win_len);
    view->win = win;
    if (view->own_ng) view->ng.b = win;
    view->pcap = NULL;
    view->read_buffer = NULL;
    view->share = share;
    view->shares = shares;
    s->share = 0;
    s->shares = shares;
    return view;
}

void tt_pcap_source_absorb_share(tt_pcap_source *s, const tt_pcap_source *share)
{
    s->stats.tcp_segments += share->stats.tcp_segments;
    s->stats.non_ip += share->stats.non_ip;
    s->stats.non_tcp += share->stats.non_tcp;
    s->stats.fragments += share->stats.fragments;
    s->stats.malformed += share->stats.malformed;
}

tt_clock_domain tt_pcap_source_clock(const tt_pcap_source *s)
{
    return s->has_offset ? TT_CLOCK_MONOTONIC : TT_CLOCK_CAPTURE;
}

static void count_class(tt_pcap_stats *st, packet_class k)
{
    switch (k) {
    case PKT_TCP: st->tcp_segments++; break;
    case PKT_NON_IP: st->non_ip++; break;
    case PKT_NON_TCP: st->non_tcp++; break;
    case PKT_FRAGMENT: st->fragments++; break;
    case PKT_MALFORMED: st->malformed++; break;
    }
}

/* Which of `shares` readers owns a connection: a hash of its endpoints
 * that is the same in both directions (xor), cheap, as every reader
 * computes it for nearly every packet. Addresses are 16 bytes (IPv4 in
 * the first 4, the rest zero), ports in host order. (One reader dealing
 * parsed segments to the others through queues measured no faster: the
 * hand-over cost about what it saved.) */
static unsigned endpoints_owner(const uint8_t a[16], const uint8_t b[16], unsigned port_a, unsigned port_b,
                                unsigned shares)
{
    uint32_t x[4], y[4];
    memcpy(x, a, sizeof x);
    memcpy(y, b, sizeof y);
    uint64_t k = (uint64_t)(x[0] ^ y[0] ^ x[1] ^ y[1] ^ x[2] ^ y[2] ^ x[3] ^ y[3]) << 16 ^ (port_a ^ port_b);
    /* the hash's high 32 bits scaled to [0, shares) by a multiply, not a
     * division (tens of cycles, on every packet of every reader) */
    return (unsigned)((((k * 0x9E3779B97F4A7C15ull) >> 32) * shares) >> 32);
}

/* The owner of an IPv4 TCP packet read at fixed places, without the
 * checks of parse_packet: false when the packet is not plainly one (then
 * parse_packet decides). Wherever parse_packet finds a TCP segment in a
 * packet this accepts, it reads its endpoints from these same places, so
 * a connection's packets have one owner whichever path they take. A
 * packet this accepts and parse_packet finds damaged is its owner's to
 * count. */
static bool quick_owner(int lt, const uint8_t *p, size_t caplen, unsigned shares, unsigned *owner)
{
    size_t off;
    if (link_layer(lt, p, caplen, &off) != 4 || caplen - off < 20) return false;
    const uint8_t *ip = p + off;
    size_t ihl = (size_t)(ip[0] & 15) * 4;
    if (ip[0] >> 4 != 4 || ip[9] != 6 || ihl < 20 || caplen - off < ihl + 4) return false;
    uint8_t a[16] = {0}, b[16] = {0};
    memcpy(a, ip + 12, 4);
    memcpy(b, ip + 16, 4);
    *owner = endpoints_owner(a, b, be16(ip + ihl), be16(ip + ihl + 2), shares);
    return true;
}

static void take_packet(tt_pcap_source *s, tt_reasm *r, uint64_t wall_ns, const uint8_t *data, uint32_t caplen,
                        uint32_t len)
{
    tt_pcap_stats *st = &s->stats;
    uint64_t ts = wall_ns - (s->has_offset ? (uint64_t)s->offset_ns : 0);
    if (s->has_map) ts += (uint64_t)llround(s->map_d0 + s->map_skew * (double)((int64_t)ts - s->map_t0));
    st->packets++;
    st->bytes += len;
    if (caplen < len) st->snapped++;
    if (st->packets == 1 || ts < st->first_ns) st->first_ns = ts;
    if (ts > st->last_ns) st->last_ns = ts;
    unsigned owner;
    bool quick = s->shares && quick_owner(st->linktype, data, caplen, s->shares, &owner);
    if (quick && owner != s->share) return;
    tt_tcp_segment seg;
    packet_class k = parse_packet(st->linktype, data, caplen, len, &seg);
    if (s->shares && !quick) {
        /* what quick_owner left: a TCP segment by its endpoints, the rest
         * (counted by one reader only) by packet index */
        owner = k == PKT_TCP ? endpoints_owner(seg.src.addr, seg.dst.addr, seg.src.port, seg.dst.port, s->shares)
                             : (unsigned)(st->packets % s->shares);
        if (owner != s->share) return;
    }
    count_class(st, k);
    if (k != PKT_TCP) return;
    seg.order = s->shares ? st->packets : 0;
    seg.ts_ns = ts;
    tt_reasm_segment(r, &seg);
}

/* A read that failed mid-file, as the one-line reason. */
static int read_failed(tt_pcap_source *s, char *err, size_t errlen)
{
    snprintf(err, errlen, "cannot read the capture after %llu packets: %s", (unsigned long long)s->stats.packets,
             s->read_errno ? strerror(s->read_errno) : "it got shorter while read");
    return -1;
}

static int run_own_ng(tt_pcap_source *s, tt_reasm *r, tt_progress_fn progress, void *pctx, char *err, size_t errlen)
{
    uint64_t next_progress = PROGRESS_STEP;
    tt_pcapng_packet pkt;
    int rc;
    while ((rc = tt_pcapng_map_next(&s->ng, &pkt, err, errlen)) != 0) {
        if (rc < 0) break;
        uint64_t at = s->win_off + s->ng.pos; /* the file offset the reader is at */
        if (rc == 2) { /* a block past the window: move it */
            s->read_errno = 0;
            const uint8_t *p = window_at(s, at, s->ng.need);
            if (!p && s->read_errno) {
                rc = read_failed(s, err, errlen);
                break;
            }
            if (!p) { /* the file ends first: the reader says how */
                s->ng.more = false;
                continue;
            }
            s->ng.b = s->win;
            s->ng.len = s->win_len;
            s->ng.pos = 0;
            s->ng.more = s->win_off + s->win_len < s->file_size;
            continue;
        }
        take_packet(s, r, pkt.ts_ns, pkt.data, pkt.caplen, pkt.len);
        if (progress && at >= next_progress) {
            progress(pctx, at, s->file_size);
            next_progress = at + PROGRESS_STEP;
        }
    }
    tt_reasm_finish(r, s->stats.last_ns);
    if (progress) progress(pctx, s->file_size, s->file_size);
    return rc < 0 ? -1 : 0;
}

static int run_own(tt_pcap_source *s, tt_reasm *r, tt_progress_fn progress, void *pctx, char *err, size_t errlen)
{
    if (s->own_ng) return run_own_ng(s, r, progress, pctx, err, errlen);
    uint64_t pos = CLASSIC_HEADER, next_progress = PROGRESS_STEP;
    uint64_t frac_scale = s->own_nano ? 1 : 1000;
    int result = 0;
    while (pos < s->file_size) {
        if (s->file_size - pos < RECORD_HEADER) {
            snprintf(err, errlen, "truncated capture after %llu packets (the file ends inside a record header)",
                     (unsigned long long)s->stats.packets);
            result = -1;
            break;
        }
        const uint8_t *h = window_at(s, pos, RECORD_HEADER);
        if (!h) {
            result = read_failed(s, err, errlen);
            break;
        }
        uint32_t sec = read32(h, s->own_swapped), frac = read32(h + 4, s->own_swapped);
        uint32_t caplen = read32(h + 8, s->own_swapped), len = read32(h + 12, s->own_swapped);
        if (caplen > CLASSIC_MAX_RECORD) {
            snprintf(err, errlen, "damaged capture after %llu packets (a record claims %u bytes)",
                     (unsigned long long)s->stats.packets, caplen);
            result = -1;
            break;
        }
        if (s->file_size - pos - RECORD_HEADER < caplen) {
            snprintf(err, errlen, "truncated capture after %llu packets (the file ends inside a record)",
                     (unsigned long long)s->stats.packets);
            result = -1;
            break;
        }
        const uint8_t *rec = window_at(s, pos, RECORD_HEADER + caplen);
        if (!rec) {
            result = read_failed(s, err, errlen);
            break;
        }
        take_packet(s, r, (uint64_t)sec * 1000000000u + (uint64_t)frac * frac_scale, rec + RECORD_HEADER, caplen,
                    len);
        pos += RECORD_HEADER + caplen;
        if (progress && pos >= next_progress) {
            progress(pctx, pos, s->file_size);
            next_progress = pos + PROGRESS_STEP;
        }
    }
    tt_reasm_finish(r, s->stats.last_ns);
    if (progress) progress(pctx, s->file_size, s->file_size);
    return result;
}

int tt_pcap_source_run(tt_pcap_source *s, tt_reasm *r, tt_progress_fn progress, void *pctx, char *err,
                       size_t errlen)
{
    if (s->own_reader) return run_own(s, r, progress, pctx, err, errlen);
    struct pcap_pkthdr *hdr;
    const u_char *data;
    tt_pcap_stats *st = &s->stats;
    FILE *fp = pcap_file(s->pcap);
    uint64_t read_estimate = 0, next_progress = PROGRESS_STEP;
    int rc;

    while ((rc = pcap_next_ex(s->pcap, &hdr, &data)) == 1) {
        take_packet(s, r, (uint64_t)hdr->ts.tv_sec * 1000000000u + (uint64_t)hdr->ts.tv_usec, data, hdr->caplen,
                    hdr->len);

        read_estimate += hdr->caplen + 16;
        if (progress && read_estimate >= next_progress) {
            long pos = fp ? ftell(fp) : -1;
            progress(pctx, pos >= 0 ? (uint64_t)pos : read_estimate, s->file_size);
            next_progress = read_estimate + PROGRESS_STEP;
        }
    }

    int result = 0;
    if (rc == PCAP_ERROR) {
        const char *why = pcap_geterr(s->pcap);
        if (strstr(why, "truncated"))
            snprintf(err, errlen, "truncated capture after %llu packets (libpcap: %s)",
                     (unsigned long long)st->packets, why);
        else
            snprintf(err, errlen, "damaged capture after %llu packets (libpcap: %s)",
                     (unsigned long long)st->packets, why);
        result = -1;
    }
    tt_reasm_finish(r, st->last_ns);
    if (progress) progress(pctx, s->file_size, s->file_size);
    return result;
}

const tt_pcap_stats *tt_pcap_source_stats(const tt_pcap_source *s)
{
    return &s->stats;
}

void tt_pcap_source_close(tt_pcap_source *s)
{
    if (!s) return;
    free(s->win);
    if (s->pcap) pcap_close(s->pcap);
    free(s->read_buffer);
    free(s);
}
