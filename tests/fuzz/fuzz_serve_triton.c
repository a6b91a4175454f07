/* fuzz_serve_triton.c - tokentap serve's ModelInferRequest reader
 * (serve_triton.c) on arbitrary bytes, and the responses it then frames.
 *
 * Input: byte 0 picks --triton-final (bit 0) and --eos-after (bits 1-3);
 * the rest is the message, copied into a buffer of exactly its size so any
 * overread is caught. When the request reads, its length respects
 * --tokens-max, its strings are terminated, and every response framed for
 * it (token 0, the last token, the empty final, an error) reads back
 * through tokentap's gRPC dialect with the request's id and the token's
 * text. Seeds: tests/golden/grpc_dialect/serve_req_*.bin (the first byte
 * of a seed becomes the options byte). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect_grpc.h"
#include "serve/serve_profile.h"
#include "serve/serve_triton.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

static void frame_back(const tt_serve_request *r, tt_serve_event ev)
{
    tt_sbuf out = {0};
    tt_serve_triton_frame(r, &ev, &out);
    CHECK(!out.oom && out.len >= 5);
    const uint8_t *p = (const uint8_t *)out.p;
    size_t n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
    CHECK(p[0] == 0 && n + 5 == out.len);
    tt_classified c;
    char text[64];
    CHECK(tt_grpc_classify(TT_GRPC_TRITON, p + 5, n, &c, text, sizeof text, NULL));
    CHECK(!strcmp(c.response_id, r->id) || strlen(r->id) >= sizeof c.response_id - 1);
    if (ev.kind == TT_SEV_TOKEN) CHECK(!strcmp(text, tt_serve_token_text(ev.token)));
    else CHECK(text[0] == 0);
    tt_sbuf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    tt_serve_gen_opts o = {.default_tokens = 16, .tokens_max = 64, .model = "m", .created = -1,
                           .triton_empty_final = data[0] & 1, .eos_after = (data[0] >> 1) & 7};
    size_t n = size - 1;
    uint8_t *msg = malloc(n ? n : 1);
    if (!msg) return 0;
    memcpy(msg, data + 1, n);
    const tt_serve_profile *prof = tt_serve_profile_find("triton-grpc");
    tt_serve_request r;
    char err[200];
    err[0] = 0;
    int rc = tt_serve_request_parse(prof, TT_API_TRITON_STREAM, (const char *)msg, n, &o, NULL, 0, 0, &r, err,
                                    sizeof err);
    if (rc != 0) {
        CHECK(err[0] != 0 && memchr(err, 0, sizeof err));
    } else {
        CHECK(r.n_tokens <= o.tokens_max && r.prompt_tokens >= 1 && r.stream);
        CHECK(memchr(r.id, 0, sizeof r.id) && memchr(r.model, 0, sizeof r.model) &&
              memchr(r.model_version, 0, sizeof r.model_version));
        tt_serve_event plan[64 + 16];
        size_t pn = tt_serve_triton_plan(&r, plan);
        CHECK(pn <= tt_serve_plan_cap(&r));
        if (r.n_tokens) {
            frame_back(&r, (tt_serve_event){TT_SEV_TOKEN, 0});
            frame_back(&r, (tt_serve_event){TT_SEV_TOKEN, r.n_tokens - 1});
        }
        frame_back(&r, (tt_serve_event){TT_SEV_DONE, 0});
        frame_back(&r, (tt_serve_event){TT_SEV_ERROR, 0});
    }
    free(msg);
    return 0;
}
