/* ttgrpcclass.c - classify gRPC messages with tokentap's gRPC dialect.
 *
 * usage: ttgrpcclass API < MESSAGES
 *
 * Reads a body of gRPC length-prefixed messages (1 byte flag, 4-byte
 * big-endian length, payload) from stdin and prints one JSON line per
 * message: {"kind":"TOKEN","terminal":true,"error":false,"text":"...",
 * "id":"...","len":N} from tt_grpc_classify(API, payload) (API: triton-grpc,
 * sglang-grpc or vllm-grpc). A message that is cut short or compressed
 * ends the run with exit 1. Used by tests/e2e/test_serve_grpc.sh to check
 * that what serve writes reads back as the tokens it logged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sbuf.h"
#include "dialect/dialect_grpc.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ttgrpcclass triton-grpc|sglang-grpc|vllm-grpc < MESSAGES\n");
        return 2;
    }
    tt_grpc_api api = TT_GRPC_API_COUNT;
    for (int a = 0; a < TT_GRPC_API_COUNT; a++)
        if (!strcmp(argv[1], tt_grpc_api_name((tt_grpc_api)a))) api = (tt_grpc_api)a;
    if (api == TT_GRPC_API_COUNT) {
        fprintf(stderr, "ttgrpcclass: unknown API '%s'\n", argv[1]);
        return 2;
    }
    tt_sbuf in = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) tt_sbuf_put(&in, buf, n);
    if (in.oom) return 1;
    const uint8_t *p = (const uint8_t *)in.p;
    size_t off = 0;
    while (off < in.len) {
        if (in.len - off < 5) {
            fprintf(stderr, "ttgrpcclass: %zu bytes left, not a message prefix\n", in.len - off);
            return 1;
        }
        uint32_t len = (uint32_t)p[off + 1] << 24 | (uint32_t)p[off + 2] << 16 | (uint32_t)p[off + 3] << 8 | p[off + 4];
        if (p[off] != 0 || in.len - off - 5 < len) {
            fprintf(stderr, "ttgrpcclass: message at %zu: flag %u, length %u of %zu left\n", off, p[off], len,
                    in.len - off - 5);
            return 1;
        }
        tt_classified c;
        char text[4096];
        tt_grpc_classify(api, p + off + 5, len, &c, text, sizeof text, NULL);
        tt_sbuf line = {0};
        tt_sbuf_printf(&line, "{\"kind\":\"%s\",\"decoded\":%s,\"terminal\":%s,\"error\":%s,\"malformed\":%s,\"text\":",
                       tt_event_kind_name(c.kind), c.json_ok ? "true" : "false",
                       c.has & TT_HAS_TERMINAL ? "true" : "false", c.has & TT_HAS_ERROR ? "true" : "false",
                       c.has & TT_HAS_MALFORMED ? "true" : "false");
        tt_sbuf_json_str(&line, text, strlen(text));
        tt_sbuf_puts(&line, ",\"id\":");
        tt_sbuf_json_str(&line, c.response_id, strlen(c.response_id));
        tt_sbuf_printf(&line, ",\"len\":%u}\n", len + 5);
        fwrite(line.p, 1, line.len, stdout);
        tt_sbuf_free(&line);
        off += 5 + (size_t)len;
    }
    tt_sbuf_free(&in);
    return 0;
}
