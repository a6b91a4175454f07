/* pcap_synth.c - socket-vantage chunks as synthesized TCP/IP packets (see pcap_synth.h). */
#include "report/pcap_synth.h"

#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream/tcp_reasm.h"

#define SYNTH_SNAPLEN 262144
#define SYNTH_MAX_PAYLOAD 65000
#define SYNTH_BUCKETS 1024

typedef struct synth_conn {
    struct synth_conn *next;
    uint64_t conn_id;
    tt_endpoint ep[2]; /* [TT_DIR_C2S] = client, [TT_DIR_S2C] = server */
    uint32_t isn[2];
    uint64_t pos[2];   /* stream position after the furthest byte sent per direction */
    uint8_t fin_sent[2];
    uint8_t seq_said[2]; /* the sequence mark of each direction is written */
} synth_conn;

struct tt_synth {
    pcap_t *dead;
    pcap_dumper_t *dumper;
    bool failed;
    uint16_t ip_id;
    uint64_t packets;
    synth_conn *buckets[SYNTH_BUCKETS];
    uint8_t packet[40 + 20 + SYNTH_MAX_PAYLOAD];
};

tt_synth *tt_synth_open(const char *path, char *err, size_t errlen)
{
    tt_synth *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->dead = pcap_open_dead_with_tstamp_precision(DLT_RAW, SYNTH_SNAPLEN, PCAP_TSTAMP_PRECISION_NANO);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        if (s->dead) pcap_close(s->dead);
        free(s);
        return NULL;
    }
    s->dumper = s->dead ? pcap_dump_fopen(s->dead, f) : NULL;
    if (!s->dumper) {
        snprintf(err, errlen, "cannot start %s: %s", path, s->dead ? pcap_geterr(s->dead) : "libpcap failed");
        fclose(f);
        if (s->dead) pcap_close(s->dead);
        free(s);
        return NULL;
    }
    return s;
}

static uint32_t sum_bytes(uint32_t acc, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2) acc += (uint32_t)p[i] << 8 | p[i + 1];
    if (n & 1) acc += (uint32_t)p[n - 1] << 8;
    return acc;
}

static uint16_t fold(uint32_t acc)
{
    while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
    return (uint16_t)~acc;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)); put16(p + 2, (uint16_t)v); }

/* A mark carried in a payload-less segment's experimental option
 * (tcp_reasm.h): its ExID and 32-bit value; exid 0: a plain segment. */
typedef struct synth_mark {
    uint16_t exid;
    uint32_t value;
} synth_mark;

static const synth_mark NO_MARK = {0, 0};

/* One packet. A mark (tcp_reasm.h) has no payload and carries its option:
 * a readable-instant mark at seq = the end of its bytes, a sequence mark
 * at the stream offset whose kernel sequence number it says. */
static void segment(tt_synth *s, synth_conn *c, tt_direction dir, uint64_t ts_ns, uint64_t offset,
                    const uint8_t *data, size_t len, uint8_t flags, bool syn, synth_mark mark)
{
    const tt_endpoint *src = &c->ep[dir], *dst = &c->ep[!dir];
    bool v6 = src->family == 6;
    size_t ip_len = v6 ? 40 : 20, tcp_len = mark.exid ? 28 : 20;
    size_t total = ip_len + tcp_len + len;
    uint8_t *ip = s->packet, *tcp = s->packet + ip_len;
    memset(ip, 0, ip_len + tcp_len);
    size_t alen = v6 ? 16 : 4;
    if (v6) {
        ip[0] = 0x60;
        put16(ip + 4, (uint16_t)(tcp_len + len));
        ip[6] = 6;
        ip[7] = 64;
        memcpy(ip + 8, src->addr, 16);
        memcpy(ip + 24, dst->addr, 16);
    } else {
        ip[0] = 0x45;
        put16(ip + 2, (uint16_t)total);
        put16(ip + 4, s->ip_id++);
        ip[6] = 0x40; /* don't fragment */
        ip[8] = 64;
        ip[9] = 6;
        memcpy(ip + 12, src->addr, 4);
        memcpy(ip + 16, dst->addr, 4);
        put16(ip + 10, fold(sum_bytes(0, ip, 20)));
    }
    put16(tcp, src->port);
    put16(tcp + 2, dst->port);
    put32(tcp + 4, syn ? c->isn[dir] : c->isn[dir] + 1 + (uint32_t)offset);
    bool acks = flags & TT_TCP_ACK;
    if (acks) put32(tcp + 8, c->isn[!dir] + 1 + (uint32_t)c->pos[!dir] + c->fin_sent[!dir]);
    tcp[12] = (uint8_t)(tcp_len / 4) << 4;
    tcp[13] = flags;
    put16(tcp + 14, 65535);
    if (mark.exid) {
        tcp[20] = TT_TCP_OPT_EXPERIMENT;
        tcp[21] = 8;
        put16(tcp + 22, mark.exid);
        put32(tcp + 24, mark.value);
    }
    if (len) memcpy(tcp + tcp_len, data, len);
    uint32_t acc = sum_bytes(0, src->addr, alen);
    acc = sum_bytes(acc, dst->addr, alen);
    acc += 6 + (uint32_t)(tcp_len + len);
    put16(tcp + 16, fold(sum_bytes(acc, tcp, tcp_len + len)));

    struct pcap_pkthdr h = {.caplen = (bpf_u_int32)total, .len = (bpf_u_int32)total};
    h.ts.tv_sec = (time_t)(ts_ns / 1000000000u);
    h.ts.tv_usec = (suseconds_t)(ts_ns % 1000000000u); /* nanoseconds: the dumper is nano precision */
    pcap_dump((u_char *)s->dumper, &h, s->packet);
    s->packets++;
}

static synth_conn **slot(tt_synth *s, uint64_t conn_id)
{
    synth_conn **p = &s->buckets[(conn_id * 0x9E3779B97F4A7C15ull) >> 54];
    while (*p && (*p)->conn_id != conn_id) p = &(*p)->next;
    return p;
}

void tt_synth_chunk(void *ctx, const tt_chunk *ch)
{
    tt_synth *s = ctx;
    if (!ch->conn) return;
    synth_conn **p = slot(s, ch->conn->conn_id);
    synth_conn *c = *p;
    if (ch->kind == TT_CHUNK_RELEASE) {
        if (c) {
            *p = c->next;
            free(c);
        }
        return;
    }
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c) {
            s->failed = true;
            return;
        }
        c->conn_id = ch->conn->conn_id;
        c->ep[TT_DIR_C2S] = ch->conn->client;
        c->ep[TT_DIR_S2C] = ch->conn->server;
        if (c->ep[1].family != c->ep[0].family) c->ep[1].family = c->ep[0].family;
        uint64_t h = (ch->conn->conn_id + 1) * 0x9E3779B97F4A7C15ull;
        c->isn[0] = (uint32_t)h;
        c->isn[1] = (uint32_t)(h >> 32);
        *p = c;
        segment(s, c, TT_DIR_C2S, ch->mono_ns, 0, NULL, 0, TT_TCP_SYN, true, NO_MARK);
        segment(s, c, TT_DIR_S2C, ch->mono_ns, 0, NULL, 0, TT_TCP_SYN | TT_TCP_ACK, true, NO_MARK);
        segment(s, c, TT_DIR_C2S, ch->mono_ns, 0, NULL, 0, TT_TCP_ACK, false, NO_MARK);
    }
    tt_direction d = ch->dir;
    switch (ch->kind) {
    case TT_CHUNK_DATA:
        if (ch->conn->seq_known[d] && !c->seq_said[d]) {
            /* the kernel's sequence numbers, once per direction, before its first bytes */
            synth_mark m = {TT_TCP_SEQ_EXID, ch->conn->seq_base[d] + (uint32_t)ch->offset};
            segment(s, c, d, ch->mono_ns, ch->offset, NULL, 0, TT_TCP_ACK, false, m);
            c->seq_said[d] = 1;
        }
        for (size_t done = 0; done < ch->len;) {
            size_t n = ch->len - done < SYNTH_MAX_PAYLOAD ? ch->len - done : SYNTH_MAX_PAYLOAD;
            if (c->pos[d] < ch->offset + done + n) c->pos[d] = ch->offset + done + n;
            segment(s, c, d, ch->mono_ns, ch->offset + done, ch->data + done, n, TT_TCP_PSH | TT_TCP_ACK, false,
                    NO_MARK);
            done += n;
        }
        break;
    case TT_CHUNK_GAP:
        if (c->pos[d] < ch->offset + ch->len) c->pos[d] = ch->offset + ch->len;
        break;
    case TT_CHUNK_FIN:
        if (!c->fin_sent[d]) segment(s, c, d, ch->mono_ns, c->pos[d], NULL, 0, TT_TCP_FIN | TT_TCP_ACK, false, NO_MARK);
        c->fin_sent[d] = 1;
        break;
    case TT_CHUNK_RST:
        if (!c->fin_sent[d]) segment(s, c, d, ch->mono_ns, c->pos[d], NULL, 0, TT_TCP_RST | TT_TCP_ACK, false, NO_MARK);
        c->fin_sent[d] = 1;
        break;
    case TT_CHUNK_READY:
        /* bytes beyond 4 GiB in one mark cannot be said in the option: left out (unknown) */
        if (ch->len && ch->len <= UINT32_MAX)
            segment(s, c, d, ch->mono_ns, ch->offset + ch->len, NULL, 0, TT_TCP_ACK, false,
                    (synth_mark){TT_TCP_READY_EXID, (uint32_t)ch->len});
        break;
    default: break;
    }
}

uint64_t tt_synth_packets(const tt_synth *s) { return s ? s->packets : 0; }

int tt_synth_close(tt_synth *s)
{
    if (!s) return 0;
    int rc = s->failed ? -1 : 0;
    if (pcap_dump_flush(s->dumper) != 0) rc = -1;
    FILE *f = pcap_dump_file(s->dumper);
    if (ferror(f)) rc = -1;
    pcap_dump_close(s->dumper);
    pcap_close(s->dead);
    for (size_t i = 0; i < SYNTH_BUCKETS; i++) {
        for (synth_conn *c = s->buckets[i]; c;) {
            synth_conn *next = c->next;
            free(c);
            c = next;
        }
    }
    free(s);
    return rc;
}
