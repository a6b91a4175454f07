/* socktap_recs.c - socktap records and collected chunks for tests (socktap_recs.h). */
#include "socktap_recs.h"

#include <setjmp.h>
#include <stdarg.h>
#include <string.h>

#include <cmocka.h>

#include "../../bpf/socktap.h"

void collect(void *ctx, const tt_chunk *ch)
{
    log_ctx *l = ctx;
    assert_true(l->n < 64);
    seen *s = &l->items[l->n++];
    memset(s, 0, sizeof *s);
    s->vantage = ch->vantage;
    s->dir = ch->dir;
    s->kind = ch->kind;
    s->conn_id = ch->conn->conn_id;
    s->mono_ns = ch->mono_ns;
    s->offset = ch->offset;
    s->len = ch->len;
    s->client_port = ch->conn->client.port;
    s->server_port = ch->conn->server.port;
    s->guessed = ch->conn->orientation_guessed;
    s->seq_known = ch->conn->seq_known[ch->dir];
    s->seq_base = ch->conn->seq_base[ch->dir];
    if (ch->kind == TT_CHUNK_DATA) {
        assert_non_null(ch->data);
        memcpy(s->data, ch->data, ch->len < 63 ? ch->len : 63);
    }
}


size_t socktap_rec(uint8_t *buf, uint8_t dir, int32_t fd, uint64_t sock, uint64_t ns, const char *data,
                   uint32_t total, uint32_t piece_off, uint8_t flags, uint64_t lost)
{
    struct tt_socktap_event ev = {0};
    ev.ts_ns = ns;
    ev.sock_id = sock;
    ev.tgid = 42;
    ev.tid = 42;
    ev.fd = fd;
    ev.dir = dir;
    ev.family = 2;
    ev.lport = 8000;
    ev.rport = 40000;
    ev.laddr[0] = 127, ev.laddr[3] = 1;
    ev.raddr[0] = 127, ev.raddr[3] = 1;
    ev.copied = (uint32_t)strlen(data);
    ev.total_len = total ? total : ev.copied;
    ev.piece_off = piece_off;
    ev.ret = ev.total_len;
    ev.flags = flags;
    ev.lost_before = lost;
    memcpy(buf, &ev, sizeof ev);
    memcpy(buf + sizeof ev, data, ev.copied);
    return sizeof ev + ev.copied;
}

size_t socktap_marker(uint8_t *buf, uint8_t kind, int32_t fd, uint64_t sock, uint64_t ns)
{
    size_t n = socktap_rec(buf, 0, fd, sock, ns, "", 0, 0, 0, 0);
    struct tt_socktap_event ev;
    memcpy(&ev, buf, sizeof ev);
    ev.kind = kind;
    ev.ret = 0;
    memcpy(buf, &ev, sizeof ev);
    return n;
}
