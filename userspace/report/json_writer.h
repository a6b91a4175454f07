/* json_writer.h - a small streaming JSON writer. Integers are written
 * exactly (cJSON stores numbers as doubles, which would round nanosecond
 * instants), strings are escaped, commas and nesting are tracked. The text
 * gathers in the writer's own buffer and goes to the FILE in blocks
 * (tt_jw_flush, tt_jw_end, a full buffer, the outermost value's close): one
 * stdio call per token, name or number cost more than the rest of the
 * writing (a --json report's profile). Whoever writes to the FILE itself
 * between the writer's calls flushes the writer first. */
#ifndef TT_JSON_WRITER_H
#define TT_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TT_JW_MAX_DEPTH 32
#define TT_JW_BUF 8192

typedef struct tt_jw {
    FILE *out;
    int depth;
    bool need_comma[TT_JW_MAX_DEPTH];
    bool pretty;
    size_t used;          /* bytes of buf not yet handed to out */
    char buf[TT_JW_BUF];
} tt_jw;

void tt_jw_init(tt_jw *w, FILE *out, bool pretty);
void tt_jw_object_begin(tt_jw *w, const char *key); /* key NULL inside arrays / at top */
void tt_jw_object_end(tt_jw *w);
void tt_jw_array_begin(tt_jw *w, const char *key);
void tt_jw_array_end(tt_jw *w);
void tt_jw_str(tt_jw *w, const char *key, const char *s);
void tt_jw_strn(tt_jw *w, const char *key, const char *s, size_t n);
void tt_jw_str_or_null(tt_jw *w, const char *key, const char *s); /* null when s is NULL or "" */
void tt_jw_int(tt_jw *w, const char *key, int64_t v);
/* v when has, else null. */
void tt_jw_int_or_null(tt_jw *w, const char *key, bool has, int64_t v);
void tt_jw_uint(tt_jw *w, const char *key, uint64_t v);
/* json[0..n), one whole JSON value its caller wrote (a compact document's
 * repeated object built in one piece), as the value of key: put as it is,
 * not indented in a pretty document. */
void tt_jw_raw(tt_jw *w, const char *key, const char *json, size_t n);
/* An instant in ns: null when it is UINT64_MAX (TT_NS_NONE, not known). */
void tt_jw_instant(tt_jw *w, const char *key, uint64_t ns);
void tt_jw_double(tt_jw *w, const char *key, double v); /* null when not finite */
void tt_jw_bool(tt_jw *w, const char *key, bool v);
void tt_jw_null(tt_jw *w, const char *key);
/* Finish the document with a newline, and hand everything to the FILE. */
void tt_jw_end(tt_jw *w);
/* Hand what the writer holds to the FILE (fwrite; the FILE's own errors
 * are the caller's to check), before anyone else writes to it or asks its
 * position. */
void tt_jw_flush(tt_jw *w);

#endif
