/* test_serve_triton.c - tokentap serve's triton-grpc messages
 * (serve_triton.c).
 *
 * Ground truth: tests/golden/grpc_dialect/serve_resp_*.bin and
 * serve_req_*.bin, encoded by protoc from their .txtpb (regen.sh), not by
 * tokentap. Each response serve frames must equal its golden byte for
 * byte (after the 5-byte gRPC prefix, itself checked), and read back
 * through tokentap's own gRPC dialect as the event it is; each request
 * golden parses to the length, ids and flags it names; every truncation
 * of a request is refused or read without a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect_grpc.h"
#include "serve/serve_profile.h"
#include "serve/serve_triton.h"

#define GOLDEN_DIR "tests/golden/grpc_dialect"

static uint8_t *load(const char *name, size_t *len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s.bin", GOLDEN_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s (run from the repository root)", path);
    uint8_t *buf = malloc(1 << 16);
    assert_non_null(buf);
    *len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

static const tt_serve_profile *prof(void) { return tt_serve_profile_find("triton-grpc"); }

static tt_serve_gen_opts opts(bool empty_final)
{
    return (tt_serve_gen_opts){.default_tokens = 16, .tokens_max = 4096, .model = "served-model",
                               .created = -1, .triton_empty_final = empty_final};
}

/* A request as the parser fills it for "ensemble", id r-1, n tokens. */
static tt_serve_request req3(uint32_t n, bool final_alone, bool empty_final)
{
    tt_serve_request r = {.api = TT_API_TRITON_STREAM, .stream = true, .n_tokens = n,
                          .finish_reason = "length", .grpc_final_alone = final_alone,
                          .grpc_empty_final = empty_final};
    snprintf(r.model, sizeof r.model, "ensemble");
    snprintf(r.model_version, sizeof r.model_version, "1");
    snprintf(r.id, sizeof r.id, "r-1");
    return r;
}

/* Frame ev and compare with golden `name`; classify it; return the kind. */
static tt_event_kind frame_matches(const tt_serve_request *r, tt_serve_event ev, const char *name,
                                   uint32_t *has, char *text, size_t text_cap)
{
    tt_sbuf out = {0};
    tt_serve_triton_frame(r, &ev, &out);
    assert_false(out.oom);
    size_t glen;
    uint8_t *golden = load(name, &glen);
    assert_int_equal(out.len, glen + 5);
    const uint8_t *p = (const uint8_t *)out.p;
    assert_int_equal(p[0], 0);
    assert_int_equal((size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4], glen);
    assert_memory_equal(p + 5, golden, glen);
    tt_classified c;
    assert_true(tt_grpc_classify(TT_GRPC_TRITON, p + 5, glen, &c, text, text_cap, NULL));
    assert_string_equal(c.response_id, "r-1");
    *has = c.has;
    free(golden);
    tt_sbuf_free(&out);
    return c.kind;
}

static void test_frames_equal_protoc(void **state)
{
    (void)state;
    uint32_t has;
    char text[64];
    tt_serve_request last = req3(3, false, false);
    assert_int_equal(frame_matches(&last, (tt_serve_event){TT_SEV_TOKEN, 0}, "serve_resp_token", &has, text,
                                   sizeof text), TT_EV_TOKEN);
    assert_string_equal(text, " the");
    assert_false(has & TT_HAS_TERMINAL);
    assert_int_equal(frame_matches(&last, (tt_serve_event){TT_SEV_TOKEN, 2}, "serve_resp_last", &has, text,
                                   sizeof text), TT_EV_TOKEN);
    assert_string_equal(text, " brown");
    assert_true(has & TT_HAS_TERMINAL);
    /* --triton-final empty: the last token says false, the empty final response true */
    tt_serve_request alone = req3(3, true, true);
    tt_serve_request t0 = req3(1, true, true);
    assert_int_equal(frame_matches(&t0, (tt_serve_event){TT_SEV_TOKEN, 0}, "serve_resp_token", &has, text,
                                   sizeof text), TT_EV_TOKEN);
    assert_false(has & TT_HAS_TERMINAL);
    assert_int_equal(frame_matches(&alone, (tt_serve_event){TT_SEV_DONE, 0}, "serve_resp_empty_final", &has, text,
                                   sizeof text), TT_EV_TERMINAL);
    assert_string_equal(text, "");
    /* --error-after 1 */
    assert_int_equal(frame_matches(&last, (tt_serve_event){TT_SEV_ERROR, 1}, "serve_resp_error", &has, text,
                                   sizeof text), TT_EV_TERMINAL);
    assert_true(has & TT_HAS_ERROR);
}

static void test_plan(void **state)
{
    (void)state;
    tt_serve_event plan[32];
    tt_serve_request r = req3(3, false, false);
    assert_int_equal(tt_serve_triton_plan(&r, plan), 3);
    assert_int_equal(plan[2].kind, TT_SEV_TOKEN);
    assert_int_equal(plan[2].token, 2);
    r = req3(3, true, true);
    assert_int_equal(tt_serve_triton_plan(&r, plan), 4);
    assert_int_equal(plan[3].kind, TT_SEV_DONE);
    r = req3(3, true, false); /* final alone, not opted in: no final response at all */
    assert_int_equal(tt_serve_triton_plan(&r, plan), 3);
}

static int parse(const char *name, bool empty_mode, tt_serve_request *out, char *err, size_t errlen)
{
    size_t len;
    uint8_t *msg = load(name, &len);
    tt_serve_gen_opts o = opts(empty_mode);
    int rc = tt_serve_request_parse(prof(), TT_API_TRITON_STREAM, (const char *)msg, len, &o, NULL, 0, 0, out,
                                    err, errlen);
    free(msg);
    return rc;
}

static void test_parse_requests(void **state)
{
    (void)state;
    tt_serve_request r;
    char err[200] = "";
    assert_int_equal(parse("serve_req_trtllm", false, &r, err, sizeof err), 0);
    assert_int_equal(r.n_tokens, 7);
    assert_int_equal(r.prompt_tokens, 2); /* "hello world": 11 bytes / 4 */
    assert_string_equal(r.model, "ensemble");
    assert_string_equal(r.model_version, "1");
    assert_string_equal(r.id, "q1");
    assert_true(r.stream);
    assert_false(r.grpc_final_alone);
    assert_false(r.grpc_empty_final);

    assert_int_equal(parse("serve_req_vllm", false, &r, err, sizeof err), 0);
    assert_int_equal(r.n_tokens, 9);
    assert_string_equal(r.model, "vllm_model");
    assert_string_equal(r.model_version, "3");
    assert_int_equal(r.prompt_tokens, 4);
    assert_false(r.grpc_empty_final); /* opted in, but --triton-final last */
    assert_int_equal(parse("serve_req_vllm", true, &r, err, sizeof err), 0);
    assert_true(r.grpc_final_alone);
    assert_true(r.grpc_empty_final);
    assert_int_equal(parse("serve_req_trtllm", true, &r, err, sizeof err), 0);
    assert_true(r.grpc_final_alone);
    assert_false(r.grpc_empty_final); /* not opted in */

    assert_int_equal(parse("serve_req_contents", false, &r, err, sizeof err), 0);
    assert_int_equal(r.n_tokens, 4);
    assert_string_equal(r.model, "served-model"); /* no model_name: --model */
    assert_string_equal(r.id, "");
    assert_int_equal(r.prompt_tokens, 2);

    assert_int_equal(parse("serve_req_no_text", false, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "text_input"));
}

/* min_tokens keeps the synthetic EOS away; no max_tokens: --tokens */
static void test_parse_eos_and_defaults(void **state)
{
    (void)state;
    size_t len;
    uint8_t *msg = load("serve_req_vllm", &len);
    tt_serve_gen_opts o = opts(false);
    o.eos_after = 3;
    tt_serve_request r;
    char err[200];
    assert_int_equal(tt_serve_request_parse(prof(), TT_API_TRITON_STREAM, (const char *)msg, len, &o, NULL, 0, 0,
                                            &r, err, sizeof err), 0);
    assert_int_equal(r.n_tokens, 9); /* min_tokens 9 */
    assert_string_equal(r.finish_reason, "length");
    free(msg);
    msg = load("serve_req_trtllm", &len);
    assert_int_equal(tt_serve_request_parse(prof(), TT_API_TRITON_STREAM, (const char *)msg, len, &o, NULL, 0, 0,
                                            &r, err, sizeof err), 0);
    assert_int_equal(r.n_tokens, 3);
    assert_string_equal(r.finish_reason, "stop");
    o.tokens_max = 2;
    assert_int_equal(tt_serve_request_parse(prof(), TT_API_TRITON_STREAM, (const char *)msg, len, &o, NULL, 0, 0,
                                            &r, err, sizeof err), 0);
    assert_int_equal(r.n_tokens, 2);
    free(msg);
}

/* Every prefix of every request golden: a clean refusal or a reading,
 * never a crash (ASan/UBSan watch the reads); the whole one reads. */
static void test_parse_truncated(void **state)
{
    (void)state;
    static const char *const names[] = {"serve_req_trtllm", "serve_req_vllm", "serve_req_contents"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len;
        uint8_t *msg = load(names[i], &len);
        tt_serve_gen_opts o = opts(true);
        for (size_t cut = 0; cut <= len; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1);
            assert_non_null(copy);
            memcpy(copy, msg, cut);
            tt_serve_request r;
            char err[200] = "";
            int rc = tt_serve_request_parse(prof(), TT_API_TRITON_STREAM, (const char *)copy, cut, &o, NULL, 0, 0,
                                            &r, err, sizeof err);
            if (cut == len) assert_int_equal(rc, 0);
            if (rc != 0) assert_true(err[0] != 0);
            free(copy);
        }
        free(msg);
    }
    /* not protobuf at all */
    tt_serve_request r;
    char err[200] = "";
    tt_serve_gen_opts o = opts(false);
    assert_int_equal(tt_serve_request_parse(prof(), TT_API_TRITON_STREAM, "\xff\xff", 2, &o, NULL, 0, 0, &r, err,
                                            sizeof err), -1);
    assert_non_null(strstr(err, "not a ModelInferRequest"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames_equal_protoc),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_parse_requests),
        cmocka_unit_test(test_parse_eos_and_defaults),
        cmocka_unit_test(test_parse_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
