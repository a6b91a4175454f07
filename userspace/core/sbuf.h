/* sbuf.h - a growable byte buffer: serve's response frames, the pending output
 * of a connection, request bodies and log lines; the metrics export's pages.
 * Allocation failure is sticky: `oom` is set and later appends are dropped,
 * so callers check it once after building a message. */
#ifndef TT_SBUF_H
#define TT_SBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct tt_sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} tt_sbuf;

/* Make room for `extra` more bytes; false (and oom set) when impossible. */
bool tt_sbuf_reserve(tt_sbuf *b, size_t extra);
/* tt_sbuf_put's general case: makes room, or drops the bytes once oom is set. */
void tt_sbuf_put_growing(tt_sbuf *b, const void *data, size_t len);

/* Append data[0..len): inline where it fits (a line built field by field
 * pays no call per field), else through tt_sbuf_put_growing. */
static inline void tt_sbuf_put(tt_sbuf *b, const void *data, size_t len)
{
    if (len && !b->oom && len <= b->cap - b->len) {
        memcpy(b->p + b->len, data, len);
        b->len += len;
        return;
    }
    tt_sbuf_put_growing(b, data, len);
}

void tt_sbuf_puts(tt_sbuf *b, const char *s);
void tt_sbuf_printf(tt_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tt_sbuf_u64(tt_sbuf *b, uint64_t v);
/* Append s[0..len) in double quotes: each byte core/json_escape.h says
 * needs an escape ('"', '\\', control bytes, DEL) written as escape(c,
 * out) spells it (at most 6 bytes, its length returned), the runs between
 * them in one piece. */
void tt_sbuf_quoted(tt_sbuf *b, const char *s, size_t len, size_t (*escape)(unsigned char c, char out[6]));
/* Append s[0..len) as a quoted JSON string, escaped by the rule of
 * core/json_escape.h (control bytes and DEL as \u00XX; bytes >= 0x80
 * pass through unchanged). */
void tt_sbuf_json_str(tt_sbuf *b, const char *s, size_t len);
/* Drop the first n bytes (n <= len). */
void tt_sbuf_consume(tt_sbuf *b, size_t n);
void tt_sbuf_reset(tt_sbuf *b); /* len = 0, keeps the memory */
void tt_sbuf_free(tt_sbuf *b);

#endif
