/* fuzz_go_buildinfo.c - libFuzzer harness for the reader of a Go program's
 * build information (tls_go.h: the bytes of its .go.buildinfo section, as
 * found in any executable a traced process runs). Whatever the bytes, it
 * either refuses them or gives a version that starts "go", is printable
 * and fits its buffer; and reading a prefix never gives a longer version. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/tls_go.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char version[32];
    memset(version, 'X', sizeof version);
    if (!tt_tls_go_buildinfo_version(data, size, version, sizeof version)) return 0;
    size_t n = strnlen(version, sizeof version);
    if (n == sizeof version || n < 2 || strncmp(version, "go", 2)) abort();
    for (size_t i = 0; i < n; i++)
        if (version[i] < 0x21 || version[i] > 0x7e) abort();
    /* the version's bytes lie in the input: one byte short of them is refused */
    char shorter[32];
    if (size > 33 && tt_tls_go_buildinfo_version(data, 33 + n - 1, shorter, sizeof shorter)) abort();
    return 0;
}
