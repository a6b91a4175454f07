/* pcap_source.h - read a pcap or pcapng file with libpcap and hand every
 * TCP segment to the reassembler.
 *
 * Link types: Ethernet (with 802.1Q/802.1ad VLAN tags), Linux cooked v1 and
 * v2, BSD loopback/null, raw IP (LINKTYPE_RAW, IPV4, IPV6). IPv4 and IPv6
 * (extension headers skipped). Non-TCP packets and IP fragments are counted
 * and skipped. Timestamps are read at nanosecond precision. */
#ifndef TT_PCAP_SOURCE_H
#define TT_PCAP_SOURCE_H

#include "../core/tt_types.h"
#include "../stream/tcp_reasm.h"

typedef enum tt_clock_domain {
    TT_CLOCK_CAPTURE = 0, /* the capture's own wall clock, used as is */
    TT_CLOCK_MONOTONIC    /* converted with a recorded wall-to-monotonic offset */
} tt_clock_domain;

/* Every packet lands in exactly one of tcp_segments, non_ip, non_tcp,
 * fragments, malformed. bytes counts wire lengths. first_ns/last_ns are the
 * smallest and largest packet instants, in the source's output clock (after
 * the mono offset when one is set). */
typedef struct tt_pcap_stats {
    uint64_t packets, bytes;
    uint64_t tcp_segments;
    uint64_t non_ip, non_tcp, fragments, malformed, snapped; /* snapped: caplen < len */
    uint64_t first_ns, last_ns;
    int linktype;
} tt_pcap_stats;

typedef struct tt_pcap_source tt_pcap_source;

/* Open a capture file (pcap or pcapng; timestamps read at ns precision).
 * On failure returns NULL with a one-line reason in err naming the path:
 * "cannot open P: <errno text>", "P: empty file, not a capture",
 * "P: is a directory, not a capture file", "P: not a pcap or pcapng capture
 * (libpcap: ...)", "P: unsupported link type N (NAME); supported: ...". */
tt_pcap_source *tt_pcap_source_open(const char *path, char *err, size_t errlen);

/* Set the wall-to-monotonic offset (mono = wall - offset_ns); without it the
 * capture's own clock is used and reported as TT_CLOCK_CAPTURE. */
void tt_pcap_source_set_mono_offset(tt_pcap_source *s, int64_t offset_ns);
/* Put every instant (after the mono offset, when set) on another host's
 * clock: t + d0 + skew * (t - t0) (docs/clocks.md; a recording analysed
 * against a reference recording). */
void tt_pcap_source_set_clock_map(tt_pcap_source *s, double d0_ns, double skew, int64_t t0_ns);

/* For tests: each read of a file read here asks for at most bytes (0, the
 * default: as much as its window holds), so that the window's edges fall
 * inside records and blocks. Call before tt_pcap_source_run. */
void tt_pcap_source_set_read_chunk(tt_pcap_source *s, size_t bytes);

/* Whether s reads its file itself (a regular file in classic pcap or
 * pcapng) rather than through libpcap, which is what tt_pcap_source_share
 * needs. */
bool tt_pcap_source_shareable(const tt_pcap_source *s);

/* Share the connections of s's file out among `shares` readers (analyze
 * --jobs): returns a new source that reads the same file (through its own
 * window) and reassembles only the connections of share number `share`
 * (1 .. shares - 1, by a hash of the endpoints), and makes s keep share 0.
 * Each reader walks every packet itself (unless they walk together:
 * tt_pcap_source_walk_together), and parses only the packets it owns and
 * those whose owner takes a parse to find (all but plain IPv4 TCP): numbering segments
 * by packet index (tt_tcp_segment.order) so that ids and order agree
 * across the reassemblers, whose results are merged. Each may run on its
 * own thread, and s must not be closed before its shares. Every reader
 * counts packets, bytes, snapped and the first and last instants of the
 * whole file; a packet's class (tcp_segments, non_ip, non_tcp, fragments,
 * malformed) is counted by its owner only: tt_pcap_source_absorb_share
 * adds a share's to s. NULL,
 * changing nothing, when s is read through libpcap, has started, or the
 * numbers are out of range (or memory ran out). Free with
 * tt_pcap_source_close. */
tt_pcap_source *tt_pcap_source_share(tt_pcap_source *s, unsigned share, unsigned shares);

/* Have s and its n shares (shares[k]: tt_pcap_source_share(s, k + 1, n + 1))
 * read and walk the file once between them (pcap_walk.h) instead of each
 * reading and walking all of it: each still reassembles only its own
 * share, and the results, counts and error lines are the same. They must
 * then all run at once, each on its own thread; s owns the walk, and every
 * instant is on s's clock (its mono offset and clock map), not a share's.
 * 0, or -1 changing nothing (each walks the file itself) when s has no
 * shares of n + 1, one of them has started, or memory runs out. */
int tt_pcap_source_walk_together(tt_pcap_source *s, tt_pcap_source *const *shares, unsigned n);

/* Add the packet classes `share` (of s, tt_pcap_source_share) counted to
 * s's stats, once both have run: s's stats then describe the whole file. */
void tt_pcap_source_absorb_share(tt_pcap_source *s, const tt_pcap_source *share);

tt_clock_domain tt_pcap_source_clock(const tt_pcap_source *s);

/* Progress callback: called every so often with bytes read so far and the file size. */
typedef void (*tt_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* Read every packet, feeding segments to r, then tt_reasm_finish(r, last instant).
 * Returns 0, or -1 with a one-line reason in err when the file is damaged
 * (a truncated last record is reported but what came before is kept).
 * The damaged case reads "truncated capture after N packets (libpcap: ...)"
 * or "damaged capture after N packets (libpcap: ...)" (no path: the caller
 * names the file); every packet
 * before the damage was fed and tt_reasm_finish still ran. progress (may be
 * NULL) is called about every MiB read with the file position and size, and
 * once more with (size, size) at the end. Call once per source.
 * Segment instants: capture ns, minus the mono offset when set. A packet cut
 * short by the snap length hands its captured payload to r and the rest as
 * missing_len (a gap downstream). */
int tt_pcap_source_run(tt_pcap_source *s, tt_reasm *r, tt_progress_fn progress, void *pctx,
                       char *err, size_t errlen);

const tt_pcap_stats *tt_pcap_source_stats(const tt_pcap_source *s);
void tt_pcap_source_close(tt_pcap_source *s);

#endif
