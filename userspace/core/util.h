/* util.h - small helpers the subcommands share. */
#ifndef TT_UTIL_H
#define TT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A macro's value as a string literal: TT_STR(CS_API_MAJOR) -> "4". */
#define TT_STR_(x) #x
#define TT_STR(x) TT_STR_(x)

/* Parse a decimal integer in [0, max]; false for anything else (sign, junk, overflow). */
bool tt_parse_u32(const char *s, uint32_t max, uint32_t *out);

/* Parse a duration in seconds, > 0 and at most 1e7; false for anything else. */
bool tt_parse_seconds(const char *s, double *out);

/* Read the regular file at path whole into *data (malloc'd, NUL-terminated
 * after len bytes; the caller frees it). 0, or -1 with a one-line reason
 * naming path in err: unreadable, not a regular file, over max bytes, out
 * of memory. */
int tt_read_file(const char *path, size_t max, char **data, size_t *len, char *err, size_t errlen);

/* Write a one-line reason into err (newlines and carriage returns in a
 * path or strerror text flattened to spaces). Returns -1, so that callers
 * can `return tt_fail_line(...)`. err NULL or errlen 0: nothing written. */
int tt_fail_line(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* True when the environment variable `name` is set to something other
 * than "" or "0": how every TOKENTAP_* switch (TOKENTAP_NO_TLS=1, ...) is read. */
bool tt_env_flag(const char *name);

/* Room for at least `need` elements of `elem` bytes in the array whose
 * pointer is at array_p (a T **; the pointer may be NULL) and which holds
 * *cap: left as it is when it has it, else grown by doubling (from
 * min_cap), the pointer and *cap updated. 0, or -1 when out of memory or
 * the size overflows; the array and *cap are then unchanged. */
int tt_grow(void *array_p, size_t *cap, size_t need, size_t elem, size_t min_cap);

/* v in decimal, as "%" PRIu64 writes it, at out (no NUL). Returns the
 * number of digits, 1 to 20. Four digits a step, each pair from a table:
 * the JSON report and the event listings write millions of numbers. */
size_t tt_u64_decimal(uint64_t v, char out[20]);

/* The clock's current time in nanoseconds (CLOCK_MONOTONIC, CLOCK_REALTIME, ...). */
uint64_t tt_clock_ns(clockid_t id);

/* Bytes of heap this process has allocated and not freed (glibc's
 * mallinfo2: in-use chunks plus mmapped ones; the sanitizer's own count
 * under ASan), not counting what the allocator keeps free. */
size_t tt_heap_in_use(void);

#endif
