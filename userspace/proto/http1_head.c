/* http1_head.c - HTTP/1.x heads as text, and start lines found again
 * after lost bytes (http1_head.h). */
#include "proto/http1_head.h"

#include <string.h>
#include <strings.h>

#define CONTENT_LENGTH_LIMIT ((uint64_t)1 << 62)

/* ---- character classes and small helpers ---- */

bool tt_http_is_tchar(uint8_t c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

bool tt_http_is_ctl(uint8_t c) { return c < 0x20 || c == 0x7f; }

static bool equals_nocase(const char *s, size_t n, const char *lit)
{
    size_t ln = strlen(lit);
    return n == ln && strncasecmp(s, lit, n) == 0;
}

static void trim_blanks(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}

/* Next element of a comma-separated list in [*s, end); false when none left. */
static bool next_list_item(const char **s, const char *end, const char **item, size_t *item_len)
{
    if (*s >= end) return false;
    const char *comma = memchr(*s, ',', (size_t)(end - *s));
    const char *stop = comma ? comma : end;
    *item = *s;
    *item_len = (size_t)(stop - *s);
    trim_blanks(item, item_len);
    *s = comma ? comma + 1 : end;
    return true;
}

const tt_http_header *tt_http_find_header(const tt_http_head *head, const char *name)
{
    if (!head || !name) return NULL;
    size_t n = strlen(name);
    for (size_t i = 0; i < head->n_headers; i++) {
        const tt_http_header *h = &head->headers[i];
        if (h->name_len == n && strncasecmp(h->name, name, n) == 0) return h;
    }
    return NULL;
}

bool tt_http_header_lists(const tt_http_header *h, const char *token)
{
    if (!h) return false;
    const char *s = h->value, *end = h->value + h->value_len, *item;
    size_t len;
    while (next_list_item(&s, end, &item, &len))
        if (equals_nocase(item, len, token)) return true;
    return false;
}

/* ---- heads ---- */

/* The line at *pos (the head is known to end in LF): its start and length
 * without terminator. False when it holds a CR other than before its LF. */
static bool next_line(const char *buf, size_t n, size_t *pos, const char **line, size_t *len)
{
    const char *s = buf + *pos;
    const char *lf = memchr(s, '\n', n - *pos);
    size_t l = (size_t)(lf - s);
    *pos += l + 1;
    if (l && s[l - 1] == '\r') l--;
    *line = s;
    *len = l;
    return memchr(s, '\r', l) == NULL;
}

/* "HTTP/1.x": 0 and minor set, or an error code with *msg. */
static tt_http_error parse_version(const char *s, size_t n, int *minor, const char **msg)
{
    if (n != 8 || memcmp(s, "HTTP/", 5) != 0 || s[6] != '.' || s[5] < '0' || s[5] > '9' ||
        s[7] < '0' || s[7] > '9') {
        *msg = "malformed HTTP version";
        return TT_HTTP_ERR_MALFORMED;
    }
    if (s[5] == '2') {
        *msg = "HTTP/2";
        return TT_HTTP_ERR_UNSUPPORTED;
    }
    if (s[5] != '1') {
        *msg = "HTTP version other than 1.x";
        return TT_HTTP_ERR_UNSUPPORTED;
    }
    *minor = s[7] - '0';
    return TT_HTTP_ERR_NONE;
}

static tt_http_error parse_request_line(tt_http_head *h, const char *s, size_t n, const char **msg)
{
    const char *sp1 = memchr(s, ' ', n);
    if (!sp1 || sp1 == s) {
        *msg = "malformed request line";
        return TT_HTTP_ERR_MALFORMED;
    }
    for (const char *c = s; c < sp1; c++)
        if (!tt_http_is_tchar((uint8_t)*c)) {
            *msg = "malformed request method";
            return TT_HTTP_ERR_MALFORMED;
        }
    const char *target = sp1 + 1, *end = s + n;
    const char *sp2 = memchr(target, ' ', (size_t)(end - target));
    if (!sp2) {
        *msg = "HTTP/0.9 request";
        return TT_HTTP_ERR_UNSUPPORTED;
    }
    if (sp2 == target) {
        *msg = "empty request target";
        return TT_HTTP_ERR_MALFORMED;
    }
    for (const char *c = target; c < sp2; c++)
        if (tt_http_is_ctl((uint8_t)*c)) {
            *msg = "malformed request target";
            return TT_HTTP_ERR_MALFORMED;
        }
    h->method = s;
    h->method_len = (size_t)(sp1 - s);
    h->target = target;
    h->target_len = (size_t)(sp2 - target);
    return parse_version(sp2 + 1, (size_t)(end - sp2 - 1), &h->version_minor, msg);
}

static tt_http_error parse_status_line(tt_http_head *h, const char *s, size_t n, const char **msg)
{
    tt_http_error e = parse_version(s, n < 8 ? n : 8, &h->version_minor, msg);
    if (e != TT_HTTP_ERR_NONE) return e;
    if (n < 12 || s[8] != ' ' || s[9] < '1' || s[9] > '9' || s[10] < '0' || s[10] > '9' ||
        s[11] < '0' || s[11] > '9' || (n > 12 && s[12] != ' ')) {
        *msg = "malformed status line";
        return TT_HTTP_ERR_MALFORMED;
    }
    h->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    h->reason = n > 12 ? s + 13 : s + n;
    h->reason_len = n > 12 ? n - 13 : 0;
    for (size_t i = 0; i < h->reason_len; i++)
        if (tt_http_is_ctl((uint8_t)h->reason[i]) && h->reason[i] != '\t') {
            *msg = "malformed reason phrase";
            return TT_HTTP_ERR_MALFORMED;
        }
    return TT_HTTP_ERR_NONE;
}

/* Content-Length value(s); every element must agree with *cl (-1 = none yet). */
static bool merge_content_length(const char *v, size_t n, int64_t *cl)
{
    const char *s = v, *end = v + n, *item;
    size_t len;
    bool any = false;
    while (next_list_item(&s, end, &item, &len)) {
        if (len == 0 || len > 19) return false;
        uint64_t x = 0;
        for (size_t i = 0; i < len; i++) {
            if (item[i] < '0' || item[i] > '9') return false;
            x = x * 10 + (uint64_t)(item[i] - '0');
        }
        if (x > CONTENT_LENGTH_LIMIT) return false;
        if (*cl >= 0 && (uint64_t)*cl != x) return false;
        *cl = (int64_t)x;
        any = true;
    }
    return any;
}

static void note_transfer_encoding(tt_http_head_facts *f, const char *v, size_t n)
{
    const char *s = v, *end = v + n, *item;
    size_t len;
    while (next_list_item(&s, end, &item, &len)) {
        if (len == 0) continue;
        f->has_te = true;
        f->te_chunked = equals_nocase(item, len, "chunked");
    }
}

static void note_content_encoding(tt_http_head_facts *f, const char *v, size_t n)
{
    const char *s = v, *end = v + n, *item;
    size_t len;
    while (next_list_item(&s, end, &item, &len)) {
        if (len == 0 || equals_nocase(item, len, "identity")) continue;
        f->n_codings++;
        if (equals_nocase(item, len, "gzip") || equals_nocase(item, len, "x-gzip"))
            f->coding = TT_CODING_GZIP;
        else if (equals_nocase(item, len, "deflate"))
            f->coding = TT_CODING_DEFLATE;
        else
            f->coding = TT_CODING_OTHER;
    }
    if (f->n_codings > 1) f->coding = TT_CODING_OTHER;
}

static void note_connection(tt_http_head_facts *f, const char *v, size_t n)
{
    const char *s = v, *end = v + n, *item;
    size_t len;
    while (next_list_item(&s, end, &item, &len)) {
        if (equals_nocase(item, len, "close")) f->conn_close = true;
        else if (equals_nocase(item, len, "keep-alive")) f->conn_keep_alive = true;
    }
}

tt_http_error tt_http1_parse_head(tt_http_role role, const char *buf, size_t n, tt_http_head *h,
                                  tt_http_header *headers, tt_http_head_facts *f, const char **msg)
{
    size_t pos = 0, len;
    const char *line;
    if (!next_line(buf, n, &pos, &line, &len)) {
        *msg = "CR inside the start line";
        return TT_HTTP_ERR_MALFORMED;
    }
    tt_http_error e = role == TT_HTTP_REQUEST ? parse_request_line(h, line, len, msg)
                                                 : parse_status_line(h, line, len, msg);
    if (e != TT_HTTP_ERR_NONE) return e;

    memset(f, 0, sizeof *f);
    h->content_length = -1;
    h->n_headers = 0;
    for (;;) {
        if (!next_line(buf, n, &pos, &line, &len)) {
            *msg = "CR inside a header line";
            return TT_HTTP_ERR_MALFORMED;
        }
        if (len == 0) break;
        if (line[0] == ' ' || line[0] == '\t') {
            *msg = "obsolete header line folding";
            return TT_HTTP_ERR_MALFORMED;
        }
        const char *colon = memchr(line, ':', len);
        if (!colon || colon == line) {
            *msg = "malformed header line";
            return TT_HTTP_ERR_MALFORMED;
        }
        for (const char *c = line; c < colon; c++)
            if (!tt_http_is_tchar((uint8_t)*c)) {
                *msg = "malformed header name";
                return TT_HTTP_ERR_MALFORMED;
            }
        const char *value = colon + 1;
        size_t value_len = len - (size_t)(value - line);
        trim_blanks(&value, &value_len);
        for (size_t i = 0; i < value_len; i++)
            if (tt_http_is_ctl((uint8_t)value[i]) && value[i] != '\t') {
                *msg = "control character in a header value";
                return TT_HTTP_ERR_MALFORMED;
            }
        if (h->n_headers == TT_HTTP1_MAX_HEADERS) {
            *msg = "more than 128 header fields";
            return TT_HTTP_ERR_TOO_LARGE;
        }
        tt_http_header *hd = &headers[h->n_headers++];
        hd->name = line;
        hd->name_len = (size_t)(colon - line);
        hd->value = value;
        hd->value_len = value_len;
        if (equals_nocase(hd->name, hd->name_len, "content-length")) {
            if (!merge_content_length(value, value_len, &h->content_length)) {
                *msg = h->content_length >= 0 ? "conflicting Content-Length" : "invalid Content-Length";
                return TT_HTTP_ERR_MALFORMED;
            }
        } else if (equals_nocase(hd->name, hd->name_len, "transfer-encoding")) {
            note_transfer_encoding(f, value, value_len);
        } else if (equals_nocase(hd->name, hd->name_len, "content-encoding")) {
            note_content_encoding(f, value, value_len);
        } else if (equals_nocase(hd->name, hd->name_len, "connection")) {
            note_connection(f, value, value_len);
        } else if (equals_nocase(hd->name, hd->name_len, "upgrade")) {
            f->upgrade = hd;
        }
    }
    h->headers = headers;
    h->chunked = f->has_te && f->te_chunked;
    if (f->has_te) {
        if (!f->te_chunked && role == TT_HTTP_REQUEST) {
            *msg = "request Transfer-Encoding does not end in chunked";
            return TT_HTTP_ERR_MALFORMED;
        }
        h->content_length = -1;
    }
    h->coding = f->n_codings ? f->coding : TT_CODING_IDENTITY;
    h->keep_alive = !f->conn_close && (h->version_minor >= 1 || f->conn_keep_alive);
    return TT_HTTP_ERR_NONE;
}

/* ---- start lines after lost bytes ---- */

/* The registered method written in capitals that ends just before `end`
 * (and is not itself the tail of a longer run of capitals); its length, or 0. */
static size_t method_ending_at(const char *line, size_t end)
{
    static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT",
                                          "TRACE"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        size_t m = strlen(methods[i]);
        if (m > end || memcmp(line + end - m, methods[i], m) != 0) continue;
        if (end > m && tt_http1_is_capital(line[end - m - 1])) continue;
        return m;
    }
    return 0;
}

long tt_http1_start_line_in(tt_http_role role, const char *line, size_t len, bool line_start)
{
    tt_http_head scratch;
    const char *msg = NULL;
    if (role == TT_HTTP_RESPONSE) {
        if (!line_start || len < 12 || memcmp(line, "HTTP/1.", 7) != 0) return -1;
        memset(&scratch, 0, sizeof scratch);
        return parse_status_line(&scratch, line, len, &msg) == TT_HTTP_ERR_NONE ? 0 : -1;
    }
    /* METHOD SP target SP HTTP/1.x, at the end of the line */
    if (len < 14 || memcmp(line + len - 9, " HTTP/1.", 8) != 0) return -1;
    const char *sp2 = line + len - 9;
    const char *sp1 = sp2;
    while (sp1 > line && sp1[-1] != ' ') sp1--;
    if (sp1 == line || sp1 == sp2) return -1; /* no space before the target, or no target */
    size_t method_end = (size_t)(sp1 - 1 - line);
    size_t m = method_ending_at(line, method_end);
    if (!m) return -1;
    size_t at = method_end - m;
    memset(&scratch, 0, sizeof scratch);
    return parse_request_line(&scratch, line + at, len - at, &msg) == TT_HTTP_ERR_NONE ? (long)at : -1;
}
