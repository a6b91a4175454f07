/* h2_script.h - HTTP/2 exchanges written frame by frame for the tracker's
 * tests: a script of writes, each one direction's bytes at one instant,
 * header blocks from nghttp2's HPACK deflater (one per direction), fed to a
 * new tracker whole, with one write split in two, or byte by byte. Aborts
 * on any failure to build (a test bug, not a finding). */
#ifndef TT_H2_SCRIPT_H
#define TT_H2_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "timeline/conn_tracker.h"

#define H2_SCRIPT_MAX_WRITES 64

typedef struct h2_write {
    tt_direction dir;
    uint8_t *p;
    size_t n, cap;
    uint64_t ns;
} h2_write;

typedef struct h2_script {
    h2_write w[H2_SCRIPT_MAX_WRITES];
    size_t n;
    nghttp2_hd_deflater *def[2];
    uint64_t start_off; /* stream offset of both directions' first bytes (a capture begun later: not 0) */
} h2_script;

/* One connection fed chunk by chunk, each direction at its next offset. */
typedef struct h2_feed {
    tt_tracker *t;
    tt_conn_info conn;
    uint64_t off[2];
} h2_feed;

/* An empty script with its two deflaters. */
void h2_script_init(h2_script *s);
void h2_script_free(h2_script *s);
/* A new write of dir at instant ns. */
h2_write *h2_write_at(h2_script *s, tt_direction dir, uint64_t ns);
/* Append n raw bytes (d may be NULL when n is 0). */
void h2_put(h2_write *w, const void *d, size_t n);
/* Append one frame: its 9-byte header, then the payload. */
void h2_frame(h2_write *w, uint8_t type, uint8_t flags, uint32_t sid, const void *payload, size_t n);
/* Append one HEADERS frame (END_HEADERS set, plus flags) whose block
 * encodes the NULL-terminated name, value, name, value ... list nv with
 * the write's direction's deflater. */
void h2_headers(h2_script *s, h2_write *w, uint32_t sid, uint8_t flags, const char *const *nv);
/* Append one DATA frame of the string str. */
void h2_data(h2_write *w, uint32_t sid, uint8_t flags, const char *str);

/* One wire chunk of f's connection at its direction's next offset (DATA
 * moves the offset on). */
void h2_feed_chunk(h2_feed *f, tt_direction dir, tt_chunk_kind kind, const uint8_t *d, size_t n, uint64_t ns);

/* A tracker fed the script as wire chunks of one connection (client
 * 127.0.0.1:40000, server :8000): write cut_w split at byte cut_at (0: no
 * split), or every write byte by byte; then FIN both ways, release, sort. */
tt_tracker *h2_script_run(const h2_script *s, size_t cut_w, size_t cut_at, bool bytewise);

/* What a test says of a tracker fed a script: NULL when it holds what the
 * script meant, else why not. */
typedef const char *h2_check_fn(tt_tracker *t, void *ctx);

/* Feed the script whole, byte by byte, then with each write split in two
 * at every `step`-th byte (1: every byte), checking each tracker; the
 * first failure is written to why ("byte by byte: ...", "write 3 split at
 * 17: ...") and ends the walk, else why is "". Returns the feeds made. */
size_t h2_script_each_feed(const h2_script *s, size_t step, h2_check_fn *check, void *ctx, char *why,
                           size_t why_cap);
/* The same, whole writes at the client vantage, each server write's bytes
 * made readable (a READY chunk) lead_ns before the write's instant. */
tt_tracker *h2_script_run_ready(const h2_script *s, uint64_t lead_ns);

#endif
