/* pcap_writer.h - write capture files with chosen instants, for tests,
 * demos and benchmarks.
 *
 * Classic pcap goes through libpcap's dump API; pcapng (which libpcap 1.10
 * cannot write) is written here directly: one section header, one interface
 * with if_tsresol, enhanced packet blocks. Packets carry correct IPv4 header
 * and TCP checksums, so Wireshark/tshark read the files without complaint.
 *
 * Typical use:
 *   tt_pw *w = tt_pw_open("x.pcap", DLT_EN10MB, TT_PW_NANO);
 *   tt_pw_conn *c = tt_pw_conn_new(w, "10.0.0.1", 40000, "10.0.0.2", 8000);
 *   tt_pw_handshake(c, t);
 *   tt_pw_send(c, TT_DIR_C2S, req, req_len, t + 10);
 *   tt_pw_fin(c, TT_DIR_S2C, t + 99);
 *   tt_pw_close(w);
 */
#ifndef TT_PCAP_WRITER_H
#define TT_PCAP_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "core/tt_types.h"
#include "stream/tcp_reasm.h" /* TT_TCP_* flag bits */

enum {
    TT_PW_NANO = 0,            /* nanosecond timestamps (the default) */
    TT_PW_MICRO = 1u << 0,     /* microsecond timestamps (instants are truncated to us) */
    TT_PW_VLAN = 1u << 1,      /* Ethernet: one 802.1Q tag */
    TT_PW_QINQ = 1u << 2,      /* Ethernet: an 802.1ad tag then an 802.1Q tag */
    TT_PW_PCAPNG = 1u << 3,    /* write pcapng instead of pcap */
    TT_PW_V6_EXTHDR = 1u << 4, /* IPv6: hop-by-hop and destination-options headers before TCP */
    TT_PW_NULL_SWAPPED = 1u << 5, /* DLT_NULL/LOOP: family in the other byte order */
    TT_PW_TCP_TSOPT = 1u << 6, /* every segment carries a TCP timestamps option (data offset 8) */
    TT_PW_NO_PAD = 1u << 7     /* Ethernet: do not pad short frames to 60 bytes */
};

typedef struct tt_pw tt_pw;
typedef struct tt_pw_conn tt_pw_conn;

/* Create path for linktype, a DLT_* value: DLT_EN10MB, DLT_LINUX_SLL,
 * DLT_LINUX_SLL2, DLT_NULL, DLT_LOOP, DLT_RAW, 14 (raw IP as OpenBSD
 * numbers it; pcapng only: libpcap will not write it), DLT_IPV4 or DLT_IPV6 (the last two carry only their own IP
 * version). Returns NULL and prints why to
 * stderr on failure. */
tt_pw *tt_pw_open(const char *path, int linktype, unsigned flags);

/* Keep at most n bytes of each later frame (caplen = min(len, n)); 0 keeps all. */
void tt_pw_snaplen(tt_pw *w, size_t n);

/* Write one link-layer frame as given: caplen bytes present, wirelen on the wire. */
int tt_pw_frame(tt_pw *w, uint64_t ts_ns, const void *frame, size_t caplen, size_t wirelen);

/* Wrap one IP packet (v4 or v6 by its first nibble) in the link header and write it. */
int tt_pw_ip_packet(tt_pw *w, uint64_t ts_ns, const void *ip, size_t len);

/* Bytes written to the file so far (buffers flushed); -1 on error. */
long long tt_pw_offset(tt_pw *w);

/* Flush, close, free w and every connection made on it. Returns 0, or -1
 * when some write failed. */
int tt_pw_close(tt_pw *w);

/* A TCP connection on w (freed by tt_pw_close). IPv6 when an address holds
 * ':'. NULL for unparsable addresses or mixed families. Default ISNs are
 * derived from the ports; default MSS 1460. */
tt_pw_conn *tt_pw_conn_new(tt_pw *w, const char *client_ip, uint16_t cport, const char *server_ip, uint16_t sport);

/* Choose the initial sequence numbers (before anything is sent). */
void tt_pw_conn_isn(tt_pw_conn *c, uint32_t client_isn, uint32_t server_isn);

/* Largest payload tt_pw_send puts in one segment (1..65000). */
void tt_pw_conn_mss(tt_pw_conn *c, size_t mss);

/* SYN, SYN-ACK, ACK, all stamped ts_ns. */
int tt_pw_handshake(tt_pw_conn *c, uint64_t ts_ns);

/* Send len bytes in direction dir as PSH|ACK segments of at most mss bytes,
 * all stamped ts_ns; the stream position advances. */
int tt_pw_send(tt_pw_conn *c, tt_direction dir, const void *data, size_t len, uint64_t ts_ns);

/* One segment at an explicit stream position: seq = ISN + 1 + seq_offset.
 * flags are TT_TCP_* bits (0 means PSH|ACK). The stream position becomes
 * max(position, seq_offset + len), so out-of-order, retransmitted,
 * overlapping and "lost" segments can be written in any order. */
int tt_pw_send_raw(tt_pw_conn *c, tt_direction dir, uint32_t seq_offset, const void *data, size_t len,
                   uint64_t ts_ns, uint8_t flags);

/* A pure ACK from dir acknowledging everything the peer has sent. */
int tt_pw_ack(tt_pw_conn *c, tt_direction dir, uint64_t ts_ns);

/* FIN|ACK from dir at the current position (the FIN takes one sequence number). */
int tt_pw_fin(tt_pw_conn *c, tt_direction dir, uint64_t ts_ns);

/* RST|ACK from dir at the current position. */
int tt_pw_rst(tt_pw_conn *c, tt_direction dir, uint64_t ts_ns);

/* Stream position (bytes after ISN+1) the next tt_pw_send in dir starts at. */
uint32_t tt_pw_position(const tt_pw_conn *c, tt_direction dir);

/* Twelve frames of an Ethernet capture, at t, t + 1 ..., none a whole TCP
 * segment: ARP, IPv4 UDP, an IPv4 fragment, IPv4 TCP cut short, a bad
 * header length, a total length past the frame, an IPv6 fragment, IPv6
 * UDP, a 5-byte frame, a TCP data offset past the bytes present, IPv6 TCP
 * cut short (8 bytes of its header), an IPv6 payload length past the
 * frame. */
void tt_pw_odd_packets(tt_pw *w, uint64_t t);

#endif
