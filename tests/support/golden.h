/* golden.h - golden files: a readable input and the expected trace side by side.
 *
 * Format of a .golden file:
 *   # comment lines (anywhere before "=== input")
 *   === meta            (optional) key=value lines the test may read
 *   === input
 *   escaped text; physical newlines are ignored, write \n \r explicitly;
 *   escapes: \n \r \t \\ \0 \xHH, and \<newline> is nothing
 *   === expect
 *   the expected trace, one line per record, compared exactly (after the
 *   last line's newline is normalised)
 */
#ifndef TT_GOLDEN_H
#define TT_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_golden {
    char *path;
    char *meta;     /* raw meta section, NUL-terminated, "" when absent */
    uint8_t *input; /* unescaped input bytes */
    size_t input_len;
    char *expect;   /* expected trace, NUL-terminated, ends with \n when non-empty */
} tt_golden;

/* Load one golden file; returns 0, or -1 and prints why to stderr. */
int tt_golden_load(const char *path, tt_golden *g);
void tt_golden_free(tt_golden *g);

/* Paths of every file ending in .golden under dir, sorted; *n set. Caller frees
 * with tt_golden_list_free. Returns NULL (n=0) when none. */
char **tt_golden_list(const char *dir, size_t *n);
void tt_golden_list_free(char **list, size_t n);

/* Value of key in the meta section, copied into buf; NULL when absent. */
const char *tt_golden_meta(const tt_golden *g, const char *key, char *buf, size_t buflen);

/* Compare a produced trace to the expectation; on mismatch print both with
 * the first differing line to stderr and return -1. */
int tt_golden_compare(const tt_golden *g, const char *actual, const char *label);

/* A growable string for building traces. */
typedef struct tt_strbuf { char *s; size_t len, cap; } tt_strbuf;
void tt_sb_printf(tt_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tt_sb_escaped(tt_strbuf *b, const char *data, size_t len); /* C-style escapes, quotes not added */
void tt_sb_free(tt_strbuf *b);

/* Copy len bytes so that they end exactly at a PROT_NONE guard page: any
 * read past the end faults. Free with tt_guard_free. */
uint8_t *tt_guard_copy(const void *data, size_t len);
void tt_guard_free(uint8_t *p, size_t len);

#endif
