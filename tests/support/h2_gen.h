/* h2_gen.h - HTTP/2 byte scripts for the framing parser's tests
 * (proto/http2.h): a script of both directions' bytes (records: op = dir |
 * kind << 1 with kind 0 data, 1 gap, 2 eof clean, 3 eof reset; a 16-bit
 * big-endian length; data), written frame by frame by a generator (header
 * blocks from nghttp2's deflater, one per direction), fed to a parser whole,
 * cut at one byte or byte by byte, and the parser's callbacks written as a
 * trace, one line each. The parts of an ordinary exchange (a chat request,
 * an SSE answer, both sides' settings) come with it. Asserts through
 * cmocka. */
#ifndef TT_H2_GEN_H
#define TT_H2_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "golden.h"
#include "proto/http2.h"
#include "test_bytes.h"

enum { MODE_PRIOR = 0, MODE_MIDSTREAM = 1, MODE_UPGRADE = 2 };
enum { K_DATA = 0, K_GAP = 1, K_EOF = 2, K_RESET = 3 };

static inline const char *dir_str(tt_direction d) { return d == TT_DIR_C2S ? "c2s" : "s2c"; }

/* ---- the trace: one line per callback ---- */

typedef struct trace {
    tt_strbuf out;
} trace;

/* Callbacks that append each call to the trace (ud) as a line. */
extern const tt_http2_callbacks h2_trace_cb;

/* An on_error callback for a run that must see none: the test fails. */
void h2_fail_on_error(void *ud, tt_direction dir, tt_h2_error code, const char *msg, uint64_t off);

/* ---- running a script ---- */

typedef struct run_cfg {
    int mode;          /* MODE_*: a parser from the preface, from the middle, or after an Upgrade */
    char upgrade[256]; /* MODE_UPGRADE: the HTTP2-Settings value */
} run_cfg;

/* A parser for cfg, with callbacks cb (ud). */
tt_http2_conn *h2_open_conn(const run_cfg *cfg, const tt_http2_callbacks *cb, void *ud);

/* Feed a script: records whole; the data record holding global data
 * position `cut` (0: none) split there; or every data byte alone. *ns is
 * the instant of the first feed, one more each. */
void h2_feed_script(tt_http2_conn *c, const uint8_t *sc, size_t n, size_t cut, bool bytewise, uint64_t *ns);

/* The trace of a script fed as h2_feed_script does (malloc'd). */
char *h2_run_script(const run_cfg *cfg, const uint8_t *sc, size_t n, size_t cut, bool bytewise);

/* The data bytes of a script. */
size_t h2_script_data_len(const uint8_t *sc, size_t n);

/* The script whole, split at every data byte (every 97th for long
 * scripts) and byte by byte against the trace expected: the number of ways
 * that differ (each told on stderr, under name). */
int h2_check_all_cuts(const run_cfg *cfg, const uint8_t *sc, size_t n, const char *expect, const char *name);

/* ---- the generator ---- */

typedef struct gen {
    const char *name, *title;
    run_cfg cfg;
    bytes sc;
    bool can_append; /* the last record is data of dir last_dir */
    tt_direction last_dir;
    size_t last_len_at;
    nghttp2_hd_deflater *def[2];
} gen;

/* A header block's frames: CONTINUATIONs, padding, priority. */
typedef struct hopts {
    size_t cont;
    int pad;          /* -1 none */
    bool prio;
    uint32_t dep;
    uint8_t weight;
    bool excl;
} hopts;

void g_init(gen *g, const char *name, const char *title, int mode);
void g_free(gen *g);
/* Bytes of dir, appended to the script (its last data record when of the same direction). */
void g_data(gen *g, tt_direction dir, const void *p, size_t n);
/* A record without data: K_GAP (len bytes lost), K_EOF or K_RESET. */
void g_op(gen *g, tt_direction dir, int kind, uint16_t len);
void g_eof(gen *g, tt_direction dir);
/* A frame header into b. */
void h2_frame_head(bytes *b, size_t len, uint8_t type, uint8_t flags, uint32_t sid);
void g_frame(gen *g, tt_direction dir, uint8_t type, uint8_t flags, uint32_t sid, const void *pl, size_t n);
void g_preface(gen *g);
void g_settings(gen *g, tt_direction dir, const uint32_t *kv, size_t npairs);
void g_ack(gen *g, tt_direction dir);
/* A header block of nv (name, value, ..., NULL; a name starting with '!' is
 * never indexed) from dir's deflater. */
bytes g_hpack(gen *g, tt_direction dir, const char *const *nv);
void g_headers_opt(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *const *nv, const hopts *o);
void g_headers(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *const *nv);
void g_dataframe(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *s);
void g_padded_data(gen *g, tt_direction dir, uint32_t sid, uint8_t flags, const char *s, uint8_t pad);
void g_u32_frame(gen *g, tt_direction dir, uint8_t type, uint32_t sid, uint32_t v);
void g_goaway(gen *g, tt_direction dir, uint32_t last, uint32_t code, const char *debug);

/* ---- an ordinary exchange ---- */

extern const char *const H2_REQ[], *const H2_REQ_GET[], *const H2_RESP_SSE[], *const H2_RESP_JSON[];
extern const char *const H2_BODY;
extern const char *const H2_EV[3];
extern const uint32_t H2_C_SETTINGS[6], H2_S_SETTINGS[4];

/* The preface and both sides' SETTINGS, each acknowledged. */
void g_open(gen *g);

#endif
