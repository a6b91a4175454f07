/* test_dialect_json.c - the dialect classifier's own JSON reader
 * (dialect_json.c) against cJSON: the same trees or the same refusal for
 * each document (each read from a copy that ends at a PROT_NONE page), its
 * table of known keys, and the parser that keeps only the known members
 * of an event (dj_parse_known). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/dialect.h"
#include "dialect/dialect_internal.h"
#include "golden.h"

static bool same_tree(const cJSON *a, const cJSON *b)
{
    if (!a || !b) return a == b;
    if ((a->type & 0xff) != (b->type & 0xff)) return false;
    if ((a->string == NULL) != (b->string == NULL)) return false;
    if (a->string && strcmp(a->string, b->string) != 0) return false;
    if (cJSON_IsString(a) && strcmp(a->valuestring, b->valuestring) != 0) return false;
    if (cJSON_IsNumber(a)) {
        double x = a->valuedouble, y = b->valuedouble, d = x > y ? x - y : y - x;
        double m = (x > 0 ? x : -x) + (y > 0 ? y : -y);
        if (d > m * 1e-12) return false;
        if ((double)(int64_t)y == y && y < 9e15 && y > -9e15 && x != y) return false;
    }
    const cJSON *ca = a->child, *cb = b->child;
    for (; ca && cb; ca = ca->next, cb = cb->next)
        if (!same_tree(ca, cb)) return false;
    return ca == NULL && cb == NULL;
}

static cJSON *parse_ours(dj_arena *arena, void *buf, size_t cap, const char *s, size_t len)
{
    dj_arena_init(arena, buf, cap);
    uint8_t *copy = tt_guard_copy(s, len);
    cJSON *root = dj_parse(arena, (const char *)copy, len);
    tt_guard_free(copy, len);
    return root;
}

static void test_json_parser(void **state)
{
    static const char *const valid[] = {
        "{}", "[]", "0", "-0", "1.5", "-12.25e+3", "1E-2", "123456789012345678901234567890",
        "0.000001", "true", "false", "null", "\"\"", " {\"a\" : [ 1 , 2 ,{\"b\":null}] } ",
        "\"\\u00e9\\ud83d\\ude00\\n\\t\\/\\\\\\\"\\b\\f\\r\"", "{\"a\":1,\"a\":2}",
        "[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]", "{\"k\":\"\xe2\x82\xac\"}", "9007199254740993",
        "1e400", "-1e-400", "{\"n\":2147483648}",
    };
    static const char *const invalid[] = {
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\"}", "{a:1}", "01", "1.", ".5", "-", "+1",
        "1e", "1e+", "tru", "nul", "True", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"",
        "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\x01\"", "[1 2]", "{} {}", "\xef\xbb\xbf{}",
        "[1,2", "{\"a\":[}", "NaN", "Infinity", "'a'",
    };
    _Alignas(16) unsigned char buf[256];
    dj_arena arena;
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        cJSON *ours = parse_ours(&arena, buf, sizeof buf, valid[i], strlen(valid[i]));
        cJSON *ref = cJSON_ParseWithLength(valid[i], strlen(valid[i]));
        if (!ours || !same_tree(ours, ref)) fail_msg("parser disagrees with cJSON on %s", valid[i]);
        if (ours && (cJSON_IsArray(ours) || cJSON_IsObject(ours)) && ours->child)
            assert_ptr_equal(ours->child->prev, (void *)cJSON_GetArrayItem(ours, cJSON_GetArraySize(ours) - 1));
        cJSON_Delete(ref);
        dj_arena_free(&arena);
    }
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        if (parse_ours(&arena, buf, sizeof buf, invalid[i], strlen(invalid[i])))
            fail_msg("parser accepted %s", invalid[i]);
        dj_arena_free(&arena);
    }
    /* nesting: 1000 levels parse, 1001 do not */
    char deep[2 * 1001 + 1];
    for (int d = 1000; d <= 1001; d++) {
        memset(deep, '[', (size_t)d);
        memset(deep + d, ']', (size_t)d);
        cJSON *root = parse_ours(&arena, buf, sizeof buf, deep, 2 * (size_t)d);
        assert_true((root != NULL) == (d == 1000));
        dj_arena_free(&arena);
    }
    /* a tree that outgrows the first buffer spills into blocks */
    tt_strbuf big = { 0 };
    tt_sb_printf(&big, "[");
    for (int i = 0; i < 20000; i++) tt_sb_printf(&big, "%s{\"i\":%d,\"s\":\"x%d\"}", i ? "," : "", i, i);
    tt_sb_printf(&big, "]");
    cJSON *root = parse_ours(&arena, buf, sizeof buf, big.s, big.len);
    assert_non_null(root);
    assert_int_equal(cJSON_GetArraySize(root), 20000);
    cJSON *ref = cJSON_Parse(big.s);
    assert_true(same_tree(root, ref));
    char *printed = cJSON_PrintUnformatted(root);
    assert_string_equal(printed, big.s);
    cJSON_free(printed);
    cJSON_Delete(ref);
    dj_arena_free(&arena);
    tt_sb_free(&big);
}

/* Every name in the key table is found by dj_key_lookup, and near misses
 * are not. */
static void test_key_table(void **state)
{
    for (int k = 1; k < DJ_KEY_COUNT; k++) {
        const char *name = dj_key_names[k];
        assert_int_equal(dj_key_lookup(name, strlen(name)), k);
        assert_int_equal(dj_key_lookup(name, strlen(name) - 1), DJ_KEY_OTHER);
        char longer[64];
        snprintf(longer, sizeof longer, "%sx", name);
        assert_int_equal(dj_key_lookup(longer, strlen(longer)), DJ_KEY_OTHER);
    }
    assert_int_equal(dj_key_lookup("", 0), DJ_KEY_OTHER);
    assert_int_equal(dj_key_lookup("Delta", 5), DJ_KEY_OTHER);
    assert_int_equal(dj_key_lookup("logprobs", 8), DJ_KEY_OTHER);
}

/* dj_parse_known: same verdict as dj_parse on every case of the parser
 * test; unknown members are dropped (also after escapes), "arguments"
 * is kept whole, and bad JSON inside a dropped member still fails. */
static void test_known_parser(void **state)
{
    static const char *const cases[] = {
        "{\"id\":\"x\",\"created\":17,\"logprobs\":{\"a\":[1,{\"b\":\"\\u00e9\"}]},\"choices\":[{\"index\":0,"
        "\"delta\":{\"content\":\"hi\"}}]}",
        "{\"unknown\":[1,2,{\"x\":true}],\"choices\":[]}",
        "{\"d\\u0065lta\":1,\"z\\u0000\":2}",
        "{\"message\":{\"tool_calls\":[{\"function\":{\"arguments\":{\"city\":\"Paris\",\"n\":[1]}}}]}}",
        "{\"x\":[1,2,}", "{\"x\":\"\\q\"}", "{\"x\":\"\\ud800\"}", "{\"x\":tru}", "{\"x\":01}",
        "{\"x\":{\"y\":1,}}", "{\"x\":\"a\x01\"}", "{\"\\x\":1}", "{\"x\":1} x", "{\"x\":\"abc",
    };
    _Alignas(16) unsigned char buf[256], buf2[256];
    dj_arena arena, arena2;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = strlen(cases[i]);
        cJSON *full = parse_ours(&arena, buf, sizeof buf, cases[i], len);
        dj_arena_init(&arena2, buf2, sizeof buf2);
        uint8_t *copy = tt_guard_copy(cases[i], len);
        cJSON *known = dj_parse_known(&arena2, (const char *)copy, len);
        tt_guard_free(copy, len);
        if ((full != NULL) != (known != NULL)) fail_msg("known parser disagrees on %s", cases[i]);
        if (known) {
            for (const cJSON *c = known->child; c; c = c->next) assert_int_not_equal(dj_key_of(c), DJ_KEY_OTHER);
        }
        dj_arena_free(&arena);
        dj_arena_free(&arena2);
    }
    /* what was kept: the known members only, in order; escapes decoded */
    dj_arena_init(&arena, buf, sizeof buf);
    cJSON *root = dj_parse_known(&arena, cases[0], strlen(cases[0]));
    assert_non_null(root);
    assert_string_equal(root->child->string, "id");
    assert_string_equal(root->child->next->string, "choices");
    assert_null(root->child->next->next);
    const cJSON *choice = root->child->next->child;
    assert_int_equal(dj_key_of(choice->child), DJ_KEY_delta);
    assert_null(choice->child->next);
    dj_arena_free(&arena);
    dj_arena_init(&arena, buf, sizeof buf);
    root = dj_parse_known(&arena, cases[2], strlen(cases[2]));
    assert_non_null(root);
    assert_int_equal(dj_key_of(root->child), DJ_KEY_delta);
    assert_null(root->child->next);
    dj_arena_free(&arena);
    dj_arena_init(&arena, buf, sizeof buf);
    root = dj_parse_known(&arena, cases[3], strlen(cases[3]));
    const cJSON *args = dj_member(dj_member(dj_member(root, DJ_KEY_message), DJ_KEY_tool_calls)->child, DJ_KEY_function);
    args = dj_member(args, DJ_KEY_arguments);
    char *printed = cJSON_PrintUnformatted(args);
    assert_string_equal(printed, "{\"city\":\"Paris\",\"n\":[1]}");
    cJSON_free(printed);
    dj_arena_free(&arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_parser),
        cmocka_unit_test(test_key_table),
        cmocka_unit_test(test_known_parser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
