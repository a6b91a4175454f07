/* pcap_source.c - capture file -> TCP segments -> reassembler.
 *
 * One pass over the file. A classic pcap or pcapng regular file is read
 * here, in windows of READ_WINDOW bytes (pread; a record is never split),
 * or, by the readers of its shares at once, through one walk they share
 * (pcap_walk.h); anything else with pcap_next_ex. Each packet is parsed in
 * place (packet_parse.h). Anything that is not a whole, well-formed TCP
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
#include "source/capture_record.h"
#include "source/packet_parse.h"
#include "source/pcap_walk.h"
#include "source/pcapng_map.h"

#define PROGRESS_STEP (1u << 20)

#define READ_BUFFER (1u << 20)
/* Read here, a window this size is refilled by one pread: small enough to
 * stay in cache while its records are parsed. (A mapping of the whole file
 * cost five times as much to walk on the bench machine of 2026-12-04: page
 * tables filled and a cache miss per record header, one after the other;
 * on 2026-12-06's kernel, mapping and unmapping its pages cost about what
 * the copy does, and a file cut short while mapped kills the reader with
 * SIGBUS: docs/performance.md.) */
#define READ_WINDOW (256u << 10)
/* A reader of a shared walk asks for the first lines of the packet this
 * many ahead of the one it parses: the chunk was read in by whichever
 * thread walked it, often on the other core (without it, a --jobs 2 run
 * took 173 ms instead of 148). */
#define WALKED_PREFETCH_RECORDS 4
#define WALKED_PREFETCH_LINES 6

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
    tt_capture_clock clock;
    /* tt_pcap_source_walk_together: the walk the shares read through; the
     * source of share 0 owns it (walk_owned) */
    tt_pcap_walk *walk;
    bool walk_owned;
    /* tt_pcap_source_share: of the connections, this source reassembles
     * those whose owner_of is share (of shares; 0 of 0: every one). */
    unsigned share, shares;
    tt_pcap_stats stats;
};

/* window_at when the window does not hold the bytes: move what it holds
 * from off on to its start and read the rest. */
static __attribute__((noinline)) const uint8_t *window_refill(tt_pcap_source *s, uint64_t off, size_t need)
{
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

/* Make file bytes [off, off + need) readable in the window; a pointer to
 * off's byte, valid until the next call. NULL when the file (as long as it
 * was at open) ends first, or a read fails (read_errno). */
static inline const uint8_t *window_at(tt_pcap_source *s, uint64_t off, size_t need)
{
    if (off >= s->win_off && need <= s->win_len && off - s->win_off <= s->win_len - need)
        return s->win + (off - s->win_off);
    return window_refill(s, off, need);
}

/* A capture file is read here instead of by libpcap (which still checks
 * its header at open) when it is a regular file in classic pcap or pcapng
 * (pcapng_map.h): the same records, without a copy of each through stdio. */
static void own_file(tt_pcap_source *s, int fd, const struct stat *st)
{
    if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size < TT_CLASSIC_HEADER) return;
    s->fd = fd;
    s->win_cap = READ_WINDOW;
    s->win = malloc(s->win_cap);
    const uint8_t *b = s->win ? window_at(s, 0, TT_CLASSIC_HEADER) : NULL;
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
        s->ng.more = s->file_size - s->win_len;
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
    if (!tt_linktype_supported(lt)) {
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
    s->clock.has_offset = true;
    s->clock.offset_ns = offset_ns;
}

void tt_pcap_source_set_clock_map(tt_pcap_source *s, double d0_ns, double skew, int64_t t0_ns)
{
    s->clock.has_map = true;
    s->clock.map_d0 = d0_ns;
    s->clock.map_skew = skew;
    s->clock.map_t0 = t0_ns;
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
    return s->clock.has_offset ? TT_CLOCK_MONOTONIC : TT_CLOCK_CAPTURE;
}

static void count_class(tt_pcap_stats *st, tt_packet_class k)
{
    switch (k) {
    case TT_PKT_TCP: st->tcp_segments++; break;
    case TT_PKT_NON_IP: st->non_ip++; break;
    case TT_PKT_NON_TCP: st->non_tcp++; break;
    case TT_PKT_FRAGMENT: st->fragments++; break;
    case TT_PKT_MALFORMED: st->malformed++; break;
    }
}

/* A parsed frame of class k to its reader's counts and, a TCP segment, to
 * r, as the order-th packet (0 when one reader reads them all) at ts. */
static void feed_segment(tt_pcap_source *s, tt_reasm *r, tt_packet_class k, tt_tcp_segment *seg, uint64_t order,
                         uint64_t ts)
{
    count_class(&s->stats, k);
    if (k != TT_PKT_TCP) return;
    seg->order = order;
    seg->ts_ns = ts;
    tt_reasm_segment(r, seg);
}

static void take_packet(tt_pcap_source *s, tt_reasm *r, uint64_t wall_ns, const uint8_t *data, uint32_t caplen,
                        uint32_t len)
{
    tt_pcap_stats *st = &s->stats;
    uint64_t ts = tt_capture_instant(&s->clock, wall_ns);
    st->packets++;
    st->bytes += len;
    if (caplen < len) st->snapped++;
    if (st->packets == 1 || ts < st->first_ns) st->first_ns = ts;
    if (ts > st->last_ns) st->last_ns = ts;
    tt_tcp_segment seg;
    tt_packet_class k;
    if (s->shares) {
        int parsed;
        if (tt_packet_owner(st->linktype, data, caplen, len, st->packets, s->shares, &seg, &parsed) != s->share)
            return;
        k = parsed >= 0 ? (tt_packet_class)parsed : tt_packet_parse(st->linktype, data, caplen, len, &seg);
    } else {
        k = tt_packet_parse(st->linktype, data, caplen, len, &seg);
    }
    feed_segment(s, r, k, &seg, s->shares ? st->packets : 0, ts);
}

/* A read that failed mid-file, as the one-line reason. */
static int read_failed(tt_pcap_source *s, char *err, size_t errlen)
{
    snprintf(err, errlen, "cannot read the capture after %llu packets: %s", (unsigned long long)s->stats.packets,
             s->read_errno ? strerror(s->read_errno) : "it got shorter while read");
    return -1;
}

int tt_pcap_source_walk_together(tt_pcap_source *s, tt_pcap_source *const *shares, unsigned n)
{
    if (!s->own_reader || s->walk || s->stats.packets || n + 1 != s->shares) return -1;
    for (unsigned k = 0; k < n; k++)
        if (!shares[k] || shares[k]->share != k + 1 || shares[k]->fd != s->fd || shares[k]->stats.packets) return -1;
    tt_walk_format format = {.pcapng = s->own_ng,
                             .ng = s->own_ng ? &s->ng : NULL,
                             .swapped = s->own_swapped,
                             .nano = s->own_nano,
                             .linktype = s->stats.linktype};
    /* the first record: past the file header, or where the pcapng reader
     * stands after the blocks it read at open */
    uint64_t data_start = s->own_ng ? s->win_off + s->ng.pos : TT_CLASSIC_HEADER;
    s->walk = tt_pcap_walk_new(s->fd, s->file_size, &format, data_start, &s->clock, s->shares, s->read_chunk);
    if (!s->walk) return -1;
    s->walk_owned = true;
    for (unsigned k = 0; k < n; k++) shares[k]->walk = s->walk;
    return 0;
}

/* Read s's share of the file through the walk it shares with the others
 * (tt_pcap_source_walk_together): as run_own, every packet of the share
 * in file order, and the whole file's counts from the walk. */
static int run_walked(tt_pcap_source *s, tt_reasm *r, tt_progress_fn progress, void *pctx, char *err,
                      size_t errlen)
{
    uint64_t next_progress = PROGRESS_STEP;
    tt_walk_view v;
    int lt = s->stats.linktype;
    for (uint64_t seq = 0;; seq++) {
        tt_pcap_walk_get(s->walk, s->share, seq, &v);
        for (size_t i = 0; i < v.n; i++) {
            if (i + WALKED_PREFETCH_RECORDS < v.n) {
                const uint8_t *ahead = v.chunk + v.recs[i + WALKED_PREFETCH_RECORDS].data_off;
                for (unsigned line = 0; line < WALKED_PREFETCH_LINES; line++) __builtin_prefetch(ahead + 64 * line);
            }
            const tt_walk_record *rec = &v.recs[i];
            tt_tcp_segment seg;
            tt_packet_class k = tt_packet_parse(lt, v.chunk + rec->data_off, rec->caplen, rec->len, &seg);
            feed_segment(s, r, k, &seg, v.first_index + rec->index, rec->ts_ns);
        }
        tt_pcap_walk_put(s->walk, seq);
        if (progress && v.end_off >= next_progress) {
            progress(pctx, v.end_off, s->file_size);
            next_progress = v.end_off + PROGRESS_STEP;
        }
        if (v.last) break;
    }
    const tt_walk_totals *t = tt_pcap_walk_totals(s->walk);
    s->stats.packets = t->packets;
    s->stats.bytes = t->bytes;
    s->stats.snapped = t->snapped;
    s->stats.first_ns = t->first_ns;
    s->stats.last_ns = t->last_ns;
    tt_reasm_finish(r, s->stats.last_ns);
    if (progress) progress(pctx, s->file_size, s->file_size);
    if (!t->failed) return 0;
    snprintf(err, errlen, "%s", t->err);
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
                s->ng.more = 0;
                continue;
            }
            s->ng.b = s->win;
            s->ng.len = s->win_len;
            s->ng.pos = 0;
            s->ng.more = s->file_size - (s->win_off + s->win_len);
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
    if (s->walk) return run_walked(s, r, progress, pctx, err, errlen);
    if (s->own_ng) return run_own_ng(s, r, progress, pctx, err, errlen);
    uint64_t pos = TT_CLASSIC_HEADER, next_progress = PROGRESS_STEP;
    int result = 0;
    while (pos < s->file_size) {
        if (tt_classic_header_cut(s->file_size, pos, s->stats.packets, err, errlen)) {
            result = -1;
            break;
        }
        const uint8_t *h = window_at(s, pos, TT_RECORD_HEADER);
        if (!h) {
            result = read_failed(s, err, errlen);
            break;
        }
        tt_classic_record rec = tt_classic_record_read(h, s->own_swapped, s->own_nano);
        if (tt_classic_record_cut(s->file_size, pos, rec.caplen, s->stats.packets, err, errlen)) {
            result = -1;
            break;
        }
        h = window_at(s, pos, TT_RECORD_HEADER + rec.caplen);
        if (!h) {
            result = read_failed(s, err, errlen);
            break;
        }
        take_packet(s, r, rec.wall_ns, h + TT_RECORD_HEADER, rec.caplen, rec.len);
        pos += TT_RECORD_HEADER + rec.caplen;
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
    if (s->walk_owned) tt_pcap_walk_free(s->walk);
    free(s);
}
