/* http1_run.h - the HTTP/1.1 parser (proto/http1.h) run over an input
 * cut at chosen places, every callback written as a trace line (body
 * pieces coalesced), so that runs cut differently compare as text; for
 * test_http1.c and test_http1_coding.c. Asserts through cmocka. */
#ifndef TT_HTTP1_RUN_H
#define TT_HTTP1_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "golden.h"
#include "proto/http1.h"

/* The trace of a run: a line per callback, consecutive body pieces
 * coalesced into one (body holds them until the next callback). */
typedef struct trace {
    tt_strbuf out;
    tt_strbuf body;       /* pending coalesced body bytes */
    bool body_pending;
    uint64_t body_start, body_next;
} trace;

/* Callbacks that write the trace (ud: a trace). */
extern const tt_http_callbacks http1_trace_callbacks;

/* How one input is run: the parser's role, an end of file after it (clean
 * or reset), a gap of gap_len bytes at offset gap_at, responses queued. */
typedef struct run_opts {
    tt_http_role role;
    bool eof, eof_clean;
    bool has_gap;
    size_t gap_at;
    uint64_t gap_len;
    char expect[64]; /* queued responses: h = HEAD, b = with body, c = CONNECT */
} run_opts;

/* Feed in pieces ending at the given cut positions; returns the trace (caller frees). */
char *http1_run_cuts(const uint8_t *in, size_t n, const run_opts *o, const size_t *cuts, size_t ncuts);

/* The input whole, cut at every byte, byte by byte (each from a guard-page
 * copy) against the trace expected: the number of ways that differ (told on
 * stderr under name). */
int http1_check_all_cuts(const uint8_t *in, size_t n, const run_opts *o, const char *expect, const char *name);

#endif
