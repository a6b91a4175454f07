/* pcap_writer.c - capture files with chosen instants (see pcap_writer.h). */
#include "pcap_writer.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif
#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif

#define PW_SNAPLEN 262144
#define PW_MAX_FRAME (65535 + 128)
#define PW_MAX_MSS 65000

struct tt_pw_conn {
    tt_pw *w;
    struct tt_pw_conn *next;
    int family; /* 4 or 6 */
    uint8_t addr[2][16]; /* [TT_DIR_C2S] = client, [TT_DIR_S2C] = server */
    uint16_t port[2];
    uint32_t isn[2];
    uint32_t pos[2];     /* next stream position per sender */
    bool fin_sent[2];
    size_t mss;
};

struct tt_pw {
    int linktype;
    unsigned flags;
    size_t snaplen;
    pcap_t *dead;
    pcap_dumper_t *dumper;
    FILE *ng; /* pcapng output */
    bool failed;
    uint16_t ip_id;
    tt_pw_conn *conns;
    uint8_t frame[PW_MAX_FRAME];
    uint8_t packet[PW_MAX_FRAME];
};

/* ---- pcapng ---- */

static void ng_put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void ng_put16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
}

static int ng_write_headers(tt_pw *w)
{
    uint8_t shb[28], idb[32];
    ng_put32(shb, 0x0A0D0D0A);
    ng_put32(shb + 4, sizeof shb);
    ng_put32(shb + 8, 0x1A2B3C4D);
    ng_put16(shb + 12, 1);
    ng_put16(shb + 14, 0);
    ng_put32(shb + 16, 0xffffffffu); /* section length unknown */
    ng_put32(shb + 20, 0xffffffffu);
    ng_put32(shb + 24, sizeof shb);

    int lt = w->linktype == DLT_RAW ? 101 : w->linktype; /* the file holds LINKTYPE_ values */
    ng_put32(idb, 1);
    ng_put32(idb + 4, sizeof idb);
    ng_put16(idb + 8, (uint16_t)lt);
    ng_put16(idb + 10, 0);
    ng_put32(idb + 12, PW_SNAPLEN);
    ng_put16(idb + 16, 9); /* if_tsresol */
    ng_put16(idb + 18, 1);
    idb[20] = (w->flags & TT_PW_MICRO) ? 6 : 9;
    idb[21] = idb[22] = idb[23] = 0;
    ng_put16(idb + 24, 0); /* opt_endofopt */
    ng_put16(idb + 26, 0);
    ng_put32(idb + 28, sizeof idb);
    return fwrite(shb, sizeof shb, 1, w->ng) == 1 && fwrite(idb, sizeof idb, 1, w->ng) == 1 ? 0 : -1;
}

static int ng_write_packet(tt_pw *w, uint64_t ts, const uint8_t *frame, size_t caplen, size_t wirelen)
{
    uint8_t head[28], tail[4];
    static const uint8_t zeros[4] = {0};
    size_t pad = (4 - caplen % 4) % 4;
    uint32_t total = (uint32_t)(sizeof head + caplen + pad + sizeof tail);
    uint64_t units = (w->flags & TT_PW_MICRO) ? ts / 1000 : ts;
    ng_put32(head, 6);
    ng_put32(head + 4, total);
    ng_put32(head + 8, 0);
    ng_put32(head + 12, (uint32_t)(units >> 32));
    ng_put32(head + 16, (uint32_t)units);
    ng_put32(head + 20, (uint32_t)caplen);
    ng_put32(head + 24, (uint32_t)wirelen);
    ng_put32(tail, total);
    if (fwrite(head, sizeof head, 1, w->ng) != 1) return -1;
    if (caplen && fwrite(frame, caplen, 1, w->ng) != 1) return -1;
    if (pad && fwrite(zeros, pad, 1, w->ng) != 1) return -1;
    return fwrite(tail, sizeof tail, 1, w->ng) == 1 ? 0 : -1;
}

/* ---- files ---- */

tt_pw *tt_pw_open(const char *path, int linktype, unsigned flags)
{
    switch (linktype) {
    case DLT_EN10MB: case DLT_LINUX_SLL: case DLT_LINUX_SLL2: case DLT_NULL: case DLT_LOOP:
    case DLT_RAW: case DLT_IPV4: case DLT_IPV6: case 14: /* 14: OpenBSD's raw IP */
        break;
    default:
        fprintf(stderr, "pcap_writer: link type %d not supported\n", linktype);
        return NULL;
    }
    tt_pw *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->linktype = linktype;
    w->flags = flags;
    w->ip_id = 1;
    if (flags & TT_PW_PCAPNG) {
        w->ng = fopen(path, "wb");
        if (!w->ng || ng_write_headers(w) != 0) {
            fprintf(stderr, "pcap_writer: cannot write %s\n", path);
            if (w->ng) fclose(w->ng);
            free(w);
            return NULL;
        }
        return w;
    }
    unsigned prec = (flags & TT_PW_MICRO) ? PCAP_TSTAMP_PRECISION_MICRO : PCAP_TSTAMP_PRECISION_NANO;
    w->dead = pcap_open_dead_with_tstamp_precision(linktype, PW_SNAPLEN, prec);
    if (!w->dead) {
        free(w);
        return NULL;
    }
    w->dumper = pcap_dump_open(w->dead, path);
    if (!w->dumper) {
        fprintf(stderr, "pcap_writer: %s\n", pcap_geterr(w->dead));
        pcap_close(w->dead);
        free(w);
        return NULL;
    }
    return w;
}

void tt_pw_snaplen(tt_pw *w, size_t n)
{
    w->snaplen = n;
}

int tt_pw_frame(tt_pw *w, uint64_t ts_ns, const void *frame, size_t caplen, size_t wirelen)
{
    if (w->snaplen && caplen > w->snaplen) caplen = w->snaplen;
    if (caplen > PW_SNAPLEN) caplen = PW_SNAPLEN;
    if (wirelen < caplen) wirelen = caplen;
    int rc = 0;
    if (w->ng) {
        rc = ng_write_packet(w, ts_ns, frame, caplen, wirelen);
    } else {
        struct pcap_pkthdr h;
        h.ts.tv_sec = (time_t)(ts_ns / 1000000000u);
        h.ts.tv_usec = (suseconds_t)((w->flags & TT_PW_MICRO) ? ts_ns % 1000000000u / 1000 : ts_ns % 1000000000u);
        h.caplen = (bpf_u_int32)caplen;
        h.len = (bpf_u_int32)wirelen;
        pcap_dump((u_char *)w->dumper, &h, frame);
    }
    if (rc) w->failed = true;
    return rc;
}

long long tt_pw_offset(tt_pw *w)
{
    if (w->ng) {
        if (fflush(w->ng) != 0) return -1;
        return ftell(w->ng);
    }
    if (pcap_dump_flush(w->dumper) != 0) return -1;
    return (long long)pcap_dump_ftell64(w->dumper);
}

int tt_pw_close(tt_pw *w)
{
    if (!w) return 0;
    int rc = w->failed ? -1 : 0;
    if (w->ng) {
        if (fclose(w->ng) != 0) rc = -1;
    } else {
        if (pcap_dump_flush(w->dumper) != 0) rc = -1;
        pcap_dump_close(w->dumper);
        pcap_close(w->dead);
    }
    tt_pw_conn *c = w->conns;
    while (c) {
        tt_pw_conn *next = c->next;
        free(c);
        c = next;
    }
    free(w);
    return rc;
}

/* ---- link layer ---- */

static size_t link_header(tt_pw *w, uint8_t *out, int ipver, bool outgoing)
{
    static const uint8_t mac_a[6] = {0x02, 0, 0, 0, 0, 0x01}, mac_b[6] = {0x02, 0, 0, 0, 0, 0x02};
    uint16_t ethertype = ipver == 6 ? 0x86dd : 0x0800;
    size_t n = 0;
    switch (w->linktype) {
    case DLT_EN10MB:
        memcpy(out, outgoing ? mac_b : mac_a, 6);
        memcpy(out + 6, outgoing ? mac_a : mac_b, 6);
        n = 12;
        if (w->flags & TT_PW_QINQ) {
            out[n] = 0x88; out[n + 1] = 0xa8; out[n + 2] = 0x00; out[n + 3] = 0x64;
            n += 4;
        }
        if (w->flags & (TT_PW_VLAN | TT_PW_QINQ)) {
            out[n] = 0x81; out[n + 1] = 0x00; out[n + 2] = 0x20; out[n + 3] = 0x2a;
            n += 4;
        }
        out[n] = (uint8_t)(ethertype >> 8);
        out[n + 1] = (uint8_t)ethertype;
        return n + 2;
    case DLT_LINUX_SLL:
        memset(out, 0, 16);
        out[1] = outgoing ? 4 : 0; /* packet type */
        out[3] = 1;                 /* ARPHRD_ETHER */
        out[5] = 6;
        memcpy(out + 6, outgoing ? mac_a : mac_b, 6);
        out[14] = (uint8_t)(ethertype >> 8);
        out[15] = (uint8_t)ethertype;
        return 16;
    case DLT_LINUX_SLL2:
        memset(out, 0, 20);
        out[0] = (uint8_t)(ethertype >> 8);
        out[1] = (uint8_t)ethertype;
        out[7] = 2;  /* interface index */
        out[9] = 1;  /* ARPHRD_ETHER */
        out[10] = outgoing ? 4 : 0;
        out[11] = 6;
        memcpy(out + 12, outgoing ? mac_a : mac_b, 6);
        return 20;
    case DLT_NULL:
    case DLT_LOOP: {
        uint32_t fam = ipver == 6 ? 30 : 2;
        bool network_order = w->linktype == DLT_LOOP;
        if (w->flags & TT_PW_NULL_SWAPPED) network_order = !network_order;
        if (network_order) fam = htonl(fam);
        memcpy(out, &fam, 4);
        return 4;
    }
    default:
        return 0;
    }
}

int tt_pw_ip_packet(tt_pw *w, uint64_t ts_ns, const void *ip, size_t len)
{
    int ipver = len ? ((const uint8_t *)ip)[0] >> 4 : 4;
    size_t h = link_header(w, w->frame, ipver, false);
    if (h + len > sizeof w->frame) return -1;
    memcpy(w->frame + h, ip, len);
    size_t n = h + len;
    if (w->linktype == DLT_EN10MB && !(w->flags & TT_PW_NO_PAD) && n < 60) {
        memset(w->frame + n, 0, 60 - n);
        n = 60;
    }
    return tt_pw_frame(w, ts_ns, w->frame, n, n);
}

/* ---- TCP/IP ---- */

static uint32_t sum16(uint32_t acc, const uint8_t *p, size_t n)
{
    while (n >= 2) {
        acc += (uint32_t)p[0] << 8 | p[1];
        p += 2;
        n -= 2;
    }
    if (n) acc += (uint32_t)p[0] << 8;
    return acc;
}

static uint16_t fold(uint32_t acc)
{
    while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
    return (uint16_t)~acc;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

tt_pw_conn *tt_pw_conn_new(tt_pw *w, const char *client_ip, uint16_t cport, const char *server_ip, uint16_t sport)
{
    tt_pw_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    bool v6c = strchr(client_ip, ':') != NULL, v6s = strchr(server_ip, ':') != NULL;
    int af = v6c ? AF_INET6 : AF_INET;
    if (v6c != v6s || inet_pton(af, client_ip, c->addr[TT_DIR_C2S]) != 1 ||
        inet_pton(af, server_ip, c->addr[TT_DIR_S2C]) != 1) {
        fprintf(stderr, "pcap_writer: bad address pair %s / %s\n", client_ip, server_ip);
        free(c);
        return NULL;
    }
    c->w = w;
    c->family = v6c ? 6 : 4;
    c->port[TT_DIR_C2S] = cport;
    c->port[TT_DIR_S2C] = sport;
    c->isn[TT_DIR_C2S] = 0x10000000u + (uint32_t)cport * 7919u;
    c->isn[TT_DIR_S2C] = 0x70000000u + (uint32_t)sport * 104729u + cport;
    c->mss = 1460;
    c->next = w->conns;
    w->conns = c;
    return c;
}

void tt_pw_conn_isn(tt_pw_conn *c, uint32_t client_isn, uint32_t server_isn)
{
    c->isn[TT_DIR_C2S] = client_isn;
    c->isn[TT_DIR_S2C] = server_isn;
}

void tt_pw_conn_mss(tt_pw_conn *c, size_t mss)
{
    c->mss = mss < 1 ? 1 : mss > PW_MAX_MSS ? PW_MAX_MSS : mss;
}

uint32_t tt_pw_position(const tt_pw_conn *c, tt_direction dir)
{
    return c->pos[dir];
}

/* Build and write one segment from dir with sequence number seq. */
static int write_segment(tt_pw_conn *c, tt_direction dir, uint32_t seq, const void *data, size_t len,
                         uint8_t flags, uint64_t ts)
{
    tt_pw *w = c->w;
    tt_direction peer = dir == TT_DIR_C2S ? TT_DIR_S2C : TT_DIR_C2S;
    uint8_t *ip = w->packet;
    bool v6 = c->family == 6;
    size_t alen = v6 ? 16 : 4;
    size_t iph = v6 ? 40 : 20;
    size_t ext = v6 && (w->flags & TT_PW_V6_EXTHDR) ? 16 : 0;
    bool syn = flags & TT_TCP_SYN;
    size_t opts = (syn ? 4 : 0) + ((w->flags & TT_PW_TCP_TSOPT) ? 12 : 0);
    size_t tcph = 20 + opts;
    if (iph + ext + tcph + len > sizeof w->packet || len > PW_MAX_MSS) return -1;
    if ((w->linktype == DLT_IPV4 && v6) || (w->linktype == DLT_IPV6 && !v6)) return -1;

    uint8_t *tcp = ip + iph + ext;
    memset(tcp, 0, tcph);
    put16(tcp, c->port[dir]);
    put16(tcp + 2, c->port[peer]);
    put32(tcp + 4, seq);
    uint32_t ack = 0;
    if (flags & TT_TCP_ACK) ack = c->isn[peer] + 1 + c->pos[peer] + (c->fin_sent[peer] ? 1 : 0);
    put32(tcp + 8, ack);
    tcp[12] = (uint8_t)((tcph / 4) << 4);
    tcp[13] = flags;
    put16(tcp + 14, 0xffff);
    uint8_t *o = tcp + 20;
    if (syn) {
        o[0] = 2; o[1] = 4;
        put16(o + 2, (uint16_t)(c->mss > 65535 ? 65535 : c->mss));
        o += 4;
    }
    if (w->flags & TT_PW_TCP_TSOPT) {
        o[0] = 1; o[1] = 1; o[2] = 8; o[3] = 10;
        put32(o + 4, (uint32_t)(ts / 1000000));
        put32(o + 8, (flags & TT_TCP_ACK) ? (uint32_t)(ts / 1000000) : 0);
    }
    if (len) memcpy(tcp + tcph, data, len);
    size_t tcp_len = tcph + len;

    /* pseudo-header sum, then the segment */
    uint32_t acc = sum16(0, c->addr[dir], alen);
    acc = sum16(acc, c->addr[peer], alen);
    acc += 6;
    acc += (uint32_t)(tcp_len & 0xffff) + (uint32_t)(tcp_len >> 16);
    acc = sum16(acc, tcp, tcp_len);
    put16(tcp + 16, fold(acc));

    if (v6) {
        memset(ip, 0, 40);
        ip[0] = 0x60;
        put16(ip + 4, (uint16_t)(ext + tcp_len));
        ip[6] = ext ? 0 : 6;
        ip[7] = 64;
        memcpy(ip + 8, c->addr[dir], 16);
        memcpy(ip + 24, c->addr[peer], 16);
        if (ext) {
            uint8_t *e = ip + 40;
            memset(e, 0, 16);
            e[0] = 60; /* hop-by-hop -> destination options */
            e[1] = 0;
            e[2] = 1; e[3] = 4; /* PadN filling the header */
            e[8] = 6;  /* destination options -> TCP */
            e[9] = 0;
            e[10] = 1; e[11] = 4;
        }
    } else {
        memset(ip, 0, 20);
        ip[0] = 0x45;
        put16(ip + 2, (uint16_t)(20 + tcp_len));
        put16(ip + 4, w->ip_id++);
        ip[6] = 0x40; /* don't fragment */
        ip[8] = 64;
        ip[9] = 6;
        memcpy(ip + 12, c->addr[dir], 4);
        memcpy(ip + 16, c->addr[peer], 4);
        put16(ip + 10, fold(sum16(0, ip, 20)));
    }
    size_t total = iph + ext + tcp_len;

    size_t h = link_header(w, w->frame, v6 ? 6 : 4, dir == TT_DIR_S2C);
    memcpy(w->frame + h, ip, total);
    size_t n = h + total;
    if (w->linktype == DLT_EN10MB && !(w->flags & TT_PW_NO_PAD) && n < 60) {
        memset(w->frame + n, 0, 60 - n);
        n = 60;
    }
    return tt_pw_frame(w, ts, w->frame, n, n);
}

int tt_pw_handshake(tt_pw_conn *c, uint64_t ts_ns)
{
    int rc = write_segment(c, TT_DIR_C2S, c->isn[TT_DIR_C2S], NULL, 0, TT_TCP_SYN, ts_ns);
    /* the SYN-ACK acknowledges the client's ISN + 1 (position 0) */
    rc |= write_segment(c, TT_DIR_S2C, c->isn[TT_DIR_S2C], NULL, 0, TT_TCP_SYN | TT_TCP_ACK, ts_ns);
    rc |= write_segment(c, TT_DIR_C2S, c->isn[TT_DIR_C2S] + 1, NULL, 0, TT_TCP_ACK, ts_ns);
    return rc;
}

int tt_pw_send_raw(tt_pw_conn *c, tt_direction dir, uint32_t seq_offset, const void *data, size_t len,
                   uint64_t ts_ns, uint8_t flags)
{
    if (!flags) flags = TT_TCP_PSH | TT_TCP_ACK;
    int rc = write_segment(c, dir, c->isn[dir] + 1 + seq_offset, data, len, flags, ts_ns);
    uint32_t end = seq_offset + (uint32_t)len;
    if ((int32_t)(end - c->pos[dir]) > 0) c->pos[dir] = end;
    if (flags & TT_TCP_FIN) c->fin_sent[dir] = true;
    return rc;
}

int tt_pw_send(tt_pw_conn *c, tt_direction dir, const void *data, size_t len, uint64_t ts_ns)
{
    const uint8_t *p = data;
    int rc = 0;
    while (len) {
        size_t n = len < c->mss ? len : c->mss;
        rc |= tt_pw_send_raw(c, dir, c->pos[dir], p, n, ts_ns, TT_TCP_PSH | TT_TCP_ACK);
        p += n;
        len -= n;
    }
    return rc;
}

int tt_pw_ack(tt_pw_conn *c, tt_direction dir, uint64_t ts_ns)
{
    uint32_t seq = c->isn[dir] + 1 + c->pos[dir] + (c->fin_sent[dir] ? 1 : 0);
    return write_segment(c, dir, seq, NULL, 0, TT_TCP_ACK, ts_ns);
}

int tt_pw_fin(tt_pw_conn *c, tt_direction dir, uint64_t ts_ns)
{
    int rc = write_segment(c, dir, c->isn[dir] + 1 + c->pos[dir], NULL, 0, TT_TCP_FIN | TT_TCP_ACK, ts_ns);
    c->fin_sent[dir] = true;
    return rc;
}

int tt_pw_rst(tt_pw_conn *c, tt_direction dir, uint64_t ts_ns)
{
    return write_segment(c, dir, c->isn[dir] + 1 + c->pos[dir], NULL, 0, TT_TCP_RST | TT_TCP_ACK, ts_ns);
}

void tt_pw_odd_packets(tt_pw *w, uint64_t t)
{
    uint8_t arp[42] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06};
    tt_pw_frame(w, t, arp, sizeof arp, sizeof arp);
    uint8_t udp[28] = {0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
    tt_pw_ip_packet(w, t + 1, udp, sizeof udp);
    uint8_t frag[40] = {0x45, 0, 0, 40, 0, 2, 0x20, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
    tt_pw_ip_packet(w, t + 2, frag, sizeof frag);
    uint8_t short_tcp[30] = {0x45, 0, 0, 30, 0, 3, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
    tt_pw_ip_packet(w, t + 3, short_tcp, sizeof short_tcp);
    uint8_t bad_ihl[40] = {0x43, 0, 0, 40, 0, 3, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
    tt_pw_ip_packet(w, t + 4, bad_ihl, sizeof bad_ihl);
    uint8_t long_total[40] = {0x45, 0, 0x05, 0xdc, 0, 3, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
    tt_pw_ip_packet(w, t + 5, long_total, sizeof long_total);
    uint8_t v6frag[68] = {0x60, 0, 0, 0, 0, 28, 44, 64};
    v6frag[40] = 6; /* fragment header -> TCP */
    tt_pw_ip_packet(w, t + 6, v6frag, sizeof v6frag);
    uint8_t v6udp[48] = {0x60, 0, 0, 0, 0, 8, 17, 64};
    tt_pw_ip_packet(w, t + 7, v6udp, sizeof v6udp);
    uint8_t tiny[5] = {1, 2, 3, 4, 5};
    tt_pw_frame(w, t + 8, tiny, sizeof tiny, sizeof tiny);
    uint8_t bad_doff[40] = {0x45, 0, 0, 40, 0, 3, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
    bad_doff[32] = 0xf0; /* data offset 60 > 20 bytes present */
    tt_pw_ip_packet(w, t + 9, bad_doff, sizeof bad_doff);
    uint8_t v6_short_tcp[48] = {0x60, 0, 0, 0, 0, 8, 6, 64}; /* TCP at once, 8 of its 20 header bytes */
    v6_short_tcp[23] = 1, v6_short_tcp[39] = 2;
    tt_pw_ip_packet(w, t + 10, v6_short_tcp, sizeof v6_short_tcp);
    uint8_t v6_long_total[60] = {0x60, 0, 0, 0, 0x05, 0xdc, 6, 64}; /* claims 1500 bytes after the header */
    v6_long_total[23] = 1, v6_long_total[39] = 2;
    tt_pw_ip_packet(w, t + 11, v6_long_total, sizeof v6_long_total);
}
