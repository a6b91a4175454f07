/* import_internal.h - helpers shared by the benchmark result importers
 * (bench_import.c and import_<tool>.c). Not part of the public API. */
#ifndef TT_IMPORT_INTERNAL_H
#define TT_IMPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/util.h"
#include "import/bench_import.h"

/* Every reason goes into err as one line: tt_fail_line (core/util.h). */

/* Copy data into a NUL-terminated buffer in which every integer literal
 * too long to be exact as a double (16 digits or more) outside strings is
 * turned into a marked string, so imp_integer can read it exactly, and
 * Python's bare NaN, Infinity and -Infinity become null (a field that must
 * be a number then fails). NULL when out of memory. *out_len gets the new length. */
char *imp_protect_integers(const char *data, size_t len, size_t *out_len);

/* Parse exactly one JSON value filling [text, text+len) (whitespace around
 * it allowed); NULL when the text is not that. text must be a buffer from
 * imp_protect_integers (NUL-terminated somewhere at or after text+len). */
cJSON *imp_parse(const char *text, size_t len);

/* Each JSON line of a JSONL buffer: calls fn for each non-blank line with
 * its 1-based line number; stops at the first non-zero return and returns
 * it. A line that is not one JSON value fails with a message in err. */
typedef int (*imp_line_fn)(const cJSON *value, size_t line_no, void *ctx, char *err,
                           size_t errlen);
int imp_each_line(const char *text, size_t len, imp_line_fn fn, void *ctx, char *err,
                  size_t errlen);

/* The value of a number: a cJSON number, or an integer marked by
 * imp_protect_integers. false when item is neither. */
bool imp_number(const cJSON *item, double *out);

/* An exact integer: a cJSON number that is integral and within 2^53, or a
 * marked integer within int64. false otherwise. */
bool imp_integer(const cJSON *item, int64_t *out);

/* value * scale_ns rounded to the nearest ns (value parsed as a double).
 * false when not finite or out of int64 range. */
bool imp_to_ns(double value, double scale_ns, int64_t *out);

/* ns per unit for a unit name ("ns", "us", "ms", "s", "sec"), 0 when unknown. */
double imp_unit_scale(const char *unit);

/* A duration field: a number >= 0 in the given scale, converted to ns.
 * what names the field for errors. -1 with err set on a wrong type, a
 * negative value or overflow. */
int imp_duration(const cJSON *item, double scale_ns, const char *what, size_t index,
                 int64_t *out, char *err, size_t errlen);

/* A count field: an integer >= 0. -1 with err set otherwise. */
int imp_count(const cJSON *item, const char *what, size_t index, int64_t *out, char *err,
              size_t errlen);

/* FNV-1a 64 of len bytes (0 when len is 0, the hash tokentap uses for text). */
uint64_t imp_fnv1a(const char *s, size_t len);

/* Set text_len/text_hash of r from a JSON string (or leave -1/0 for null). -1
 * with err when item is present and neither string nor null. */
int imp_text(const cJSON *item, const char *what, size_t index, tt_bench_request *r, char *err,
             size_t errlen);

/* A malloc'd copy of s (NULL stays NULL); *oom set when allocation failed. */
char *imp_strdup(const char *s, bool *oom);

/* Grow r->reqs to hold one more request, initialise it (fields the file may
 * not give at TT_BENCH_NONE / -1) and return it; NULL when out of memory. */
tt_bench_request *imp_push(tt_bench_result *r);

/* The format a parsed document (or one JSON line) looks like, or -1. */
int imp_detect_value(const cJSON *v);

/* The per-tool loaders: fill out from the parsed text, or -1 with err set.
 * On failure the caller frees out. */
int imp_load_vllm(const char *text, size_t len, tt_bench_result *out, char *err, size_t errlen);
int imp_load_genai_perf(const char *text, size_t len, tt_bench_result *out, char *err,
                        size_t errlen);
int imp_load_aiperf(const char *text, size_t len, tt_bench_result *out, char *err, size_t errlen);
int imp_load_guidellm(const char *text, size_t len, tt_bench_result *out, char *err,
                      size_t errlen);
int imp_load_sglang(const char *text, size_t len, tt_bench_result *out, char *err, size_t errlen);
int imp_load_llmperf(const char *text, size_t len, tt_bench_result *out, char *err, size_t errlen);

/* vllm's and sglang's column arrays (the same layout, "ttfts", "itls", ...)
 * from one JSON object, appended to out; tool names the format in errors.
 * Shared by both loaders. */
int imp_load_columns(const cJSON *obj, const char *tool, tt_bench_result *out, char *err,
                     size_t errlen);

#endif
