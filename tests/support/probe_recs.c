/* probe_recs.c - probe records and chunk traces for tests (probe_recs.h). */
#include "probe_recs.h"

#include <string.h>

#include "../../probe/probe_abi.h"
#include "core/tt_types.h"
#include "golden.h"

static const char *vname(tt_vantage v)
{
    static const char *const names[] = {"wire", "server", "client", "server_tls", "client_tls", "client_wire"};
    _Static_assert(sizeof names / sizeof *names == TT_VANTAGE_COUNT, "a name per vantage");
    return v < TT_VANTAGE_COUNT ? names[v] : "?";
}

static const char *kname(tt_chunk_kind k)
{
    static const char *const names[] = {"DATA", "GAP", "FIN", "RST", "END", "RELEASE"};
    return names[k];
}

void trace_chunk(void *ctx, const tt_chunk *c)
{
    tt_strbuf *b = ctx;
    char cl[64], sv[64];
    tt_sb_printf(b, "%s conn=%llu %s %s %s%s off=%llu len=%zu ns=%llu", vname(c->vantage),
                 (unsigned long long)c->conn->conn_id, tt_endpoint_format(&c->conn->client, cl, sizeof cl),
                 tt_endpoint_format(&c->conn->server, sv, sizeof sv), c->dir == TT_DIR_C2S ? "c2s" : "s2c",
                 c->conn->orientation_guessed ? " guessed" : "", (unsigned long long)c->offset, c->len,
                 (unsigned long long)c->mono_ns);
    tt_sb_printf(b, " %s", kname(c->kind));
    if (c->kind == TT_CHUNK_DATA) {
        tt_sb_printf(b, " \"");
        tt_sb_escaped(b, (const char *)c->data, c->len);
        tt_sb_printf(b, "\"");
    }
    tt_sb_printf(b, "\n");
}

size_t probe_rec(uint8_t *out, uint8_t kind, uint8_t dir, uint8_t role, uint8_t layer, int fd, uint64_t sock,
                 uint64_t ts, const char *data, uint32_t total)
{
    struct tt_probe_rec r;
    memset(&r, 0, sizeof r);
    uint32_t len = data ? (uint32_t)strlen(data) : 0;
    r.kind = kind;
    r.dir = dir;
    r.role = role;
    r.layer = layer;
    r.fd = fd;
    r.sock_id = sock;
    r.ts_ns = ts;
    r.len = len;
    r.total_len = total ? total : len;
    if (r.total_len > len) r.flags |= TT_PROBE_F_TRUNCATED;
    r.lport = 40000;
    r.rport = 8000;
    memcpy(r.laddr, (uint8_t[]){10, 0, 0, 1}, 4);
    memcpy(r.raddr, (uint8_t[]){10, 0, 0, 2}, 4);
    r.size = (uint32_t)((sizeof r + len + 7) & ~(size_t)7);
    memcpy(out, &r, sizeof r);
    if (len) memcpy(out + sizeof r, data, len);
    return r.size;
}
