/* test_tls_go.c - the probe sites of Go's crypto/tls without a Go program:
 * the version in a build-information section (the inline form, and the old
 * pointer form, a bad magic, a length past the end, a non-printable
 * version refused; split at every length), and the sites in hand-assembled
 * amd64 code (the stack check's jump when the function opens with one,
 * none otherwise; every return instruction, a 0xc3 byte inside another
 * instruction not taken for one; undecodable code refused; more returns
 * than the room counted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "source/tls_go.h"

static size_t buildinfo(uint8_t *out, const char *version, uint8_t flags)
{
    memset(out, 0, 64);
    memcpy(out, "\xff Go buildinf:", 14);
    out[14] = 8;
    out[15] = flags;
    size_t n = strlen(version);
    out[32] = (uint8_t)n;
    memcpy(out + 33, version, n);
    return 33 + n;
}

static void test_buildinfo_version(void **state)
{
    uint8_t sec[64];
    char v[32];
    size_t len = buildinfo(sec, "go1.19.8", 2);
    assert_true(tt_tls_go_buildinfo_version(sec, len, v, sizeof v));
    assert_string_equal(v, "go1.19.8");
    /* cut anywhere before the version's end: refused, never read past */
    for (size_t cut = 0; cut < len; cut++) assert_false(tt_tls_go_buildinfo_version(sec, cut, v, sizeof v));
    /* too small a buffer for the version */
    assert_false(tt_tls_go_buildinfo_version(sec, len, v, 8));
    /* the pointer form (before Go 1.18) */
    len = buildinfo(sec, "go1.16.2", 0);
    assert_false(tt_tls_go_buildinfo_version(sec, len, v, sizeof v));
    /* a bad magic */
    len = buildinfo(sec, "go1.19.8", 2);
    sec[1] = 'X';
    assert_false(tt_tls_go_buildinfo_version(sec, len, v, sizeof v));
    /* control bytes, and a string that is not a Go version */
    len = buildinfo(sec, "go1.19\n8", 2);
    assert_false(tt_tls_go_buildinfo_version(sec, len, v, sizeof v));
    len = buildinfo(sec, "rust1.70", 2);
    assert_false(tt_tls_go_buildinfo_version(sec, len, v, sizeof v));
    /* a length varint that runs on */
    len = buildinfo(sec, "go1.19.8", 2);
    sec[32] = 0xff;
    assert_false(tt_tls_go_buildinfo_version(sec, 33, v, sizeof v));
}

static void test_code_probes(void **state)
{
    /* cmp rsp, [r14+0x10]; jbe rel32; sub rsp, 0x68; mov eax, 0xc3c3c3c3; ret; nop; ret; int3 */
    static const uint8_t with_check[] = {0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0x10, 0x00, 0x00, 0x00,
                                         0x48, 0x83, 0xec, 0x68, 0xb8, 0xc3, 0xc3, 0xc3, 0xc3, 0xc3,
                                         0x90, 0xc3, 0xcc};
    uint64_t entry = 0, rets[4];
    int n = tt_tls_go_code_probes(with_check, sizeof with_check, 0x1000, &entry, rets, 4);
    assert_int_equal(n, 2);
    assert_int_equal(entry, 0x1000 + 4);
    assert_int_equal(rets[0], 0x1000 + 19);
    assert_int_equal(rets[1], 0x1000 + 21);

    /* a larger frame: lea r12, [rsp-0x1000]; cmp r12, [r14+0x10]; jbe rel8; ret */
    static const uint8_t big_frame[] = {0x4c, 0x8d, 0xa4, 0x24, 0x00, 0xf0, 0xff, 0xff, 0x4d, 0x3b,
                                        0x66, 0x10, 0x76, 0x01, 0xc3, 0xc3};
    n = tt_tls_go_code_probes(big_frame, sizeof big_frame, 0, &entry, rets, 4);
    assert_int_equal(n, 2);
    assert_int_equal(entry, 12);

    /* no stack check: push rbp; mov rbp, rsp; ret */
    static const uint8_t plain[] = {0x55, 0x48, 0x89, 0xe5, 0xc3};
    n = tt_tls_go_code_probes(plain, sizeof plain, 0x40, &entry, rets, 4);
    assert_int_equal(n, 1);
    assert_int_equal(entry, 0);
    assert_int_equal(rets[0], 0x44);

    /* a compare of something else with r14 is not a stack check */
    static const uint8_t other_cmp[] = {0x49, 0x3b, 0x46, 0x18, 0x76, 0x00, 0xc3};
    n = tt_tls_go_code_probes(other_cmp, sizeof other_cmp, 0, &entry, rets, 4);
    assert_int_equal(n, 1);
    assert_int_equal(entry, 0);

    /* more returns than room: all counted, the room filled */
    static const uint8_t many[] = {0xc3, 0xc3, 0xc3, 0xc3, 0xc3, 0xc3};
    assert_int_equal(tt_tls_go_code_probes(many, sizeof many, 0, &entry, rets, 4), 6);

    /* bytes that are not 64-bit code (0x06: push es, invalid in long mode) */
    static const uint8_t bad[] = {0x90, 0x06, 0xc3};
    assert_int_equal(tt_tls_go_code_probes(bad, sizeof bad, 0, &entry, rets, 4), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buildinfo_version),
        cmocka_unit_test(test_code_probes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
