/* http1_head.h - HTTP/1.x heads as text: the start line, header fields and
 * what they say about framing, parsed from a buffered head; and the search
 * for a start line inside a line of unknown bytes, which lets the parser
 * (http1_head_states.c) pick up a stream again after lost bytes. Internal
 * to proto/. */
#ifndef TT_HTTP1_HEAD_H
#define TT_HTTP1_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/http1.h"

/* RFC 9110 token characters, and control characters. */
bool tt_http_is_tchar(uint8_t c);
bool tt_http_is_ctl(uint8_t c);

/* What a head's fields say beyond tt_http_head itself. */
typedef struct tt_http_head_facts {
    bool has_te, te_chunked;
    bool conn_close, conn_keep_alive;
    int n_codings;
    tt_content_coding coding;
    const tt_http_header *upgrade;
} tt_http_head_facts;

/* Parse the head in buf[0, n) (its last line is the blank one, ending in
 * LF) for `role` into h, whose fields point into buf; the header lines go
 * to headers[TT_HTTP1_MAX_HEADERS]. h's offsets and instants are left as
 * they are. TT_HTTP_ERR_NONE, or an error with *msg saying why. */
tt_http_error tt_http1_parse_head(tt_http_role role, const char *buf, size_t n, tt_http_head *h,
                                  tt_http_header *headers, tt_http_head_facts *f, const char **msg);

/* The longest line (CR LF excluded) the resynchronising parser examines. */
#define TT_HTTP1_RESYNC_LINE_MAX 8192u

/* Where a start line of `role` begins in line[0, len) (its terminator
 * removed), or -1 when it holds none. A status line must fill the whole
 * line and the line must begin where one can: after an LF, or at the first
 * byte after lost bytes (line_start). A request line may follow the tail of
 * an earlier body on the same line ("...}POST /v1 HTTP/1.1"): its method is
 * one of the registered ones written in capitals, not preceded by another
 * capital. The rest is checked as strictly as in any head. */
long tt_http1_start_line_in(tt_http_role role, const char *line, size_t len, bool line_start);

/* An ASCII capital letter: the bytes a method is written in. */
static inline bool tt_http1_is_capital(int c) { return c >= 'A' && c <= 'Z'; }

#endif
