/* The --events text listing against the same lines written the long way
 * with printf (the format it had before it was built by hand): every
 * field at its edges, the milliseconds at half-microsecond ties and past
 * what a double keeps to the nanosecond, a difference that wrapped, every
 * flag bit and their mixes, an event's text holding every byte value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "test_rng.h"

static const char *const term_names[] = {"LF", "CR", "CRLF"};
static const char *const field_names[] = {"data", "event", "id", "retry", "other"};
static const char *const frame_names[] = {"data-no-space", "bom", "empty-data-line", "raw-line-sep",
                                          "unterminated", "truncated", "compressed", "bad-prefix"};
static const char *const has_names[] = {"text", "reasoning", "tool-args", "usage", "finish",
                                        "terminal", "choices", "role", "error", "special", "malformed",
                                        "empty-choices"};
#define N(a) (sizeof(a) / sizeof *(a))

/* The names joined with snprintf, as the listing did. */
static void ref_flags(char *buf, size_t cap, unsigned bits, const char *const *names, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(bits & (1u << i))) continue;
        int k = snprintf(buf + len, cap - len, "%s%s", len ? "|" : "", names[i]);
        if (k < 0 || (size_t)k >= cap - len) break;
        len += (size_t)k;
    }
    if (!len) snprintf(buf, cap, "-");
}

static void ref_escaped(FILE *out, const char *s, size_t n)
{
    putc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", out);
        else if (c == '\r') fputs("\\r", out);
        else if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) fprintf(out, "\\x%02x", c);
        else putc(c, out);
    }
    putc('"', out);
}

/* The listing of a's requests, written the long way. */
static void ref_listing(FILE *out, const tt_analysis *a)
{
    for (size_t i = 0; i < a->n_reqs; i++) {
        const tt_request *r = &a->reqs[i];
        char c[64], s[64];
        fprintf(out, "request %zu %s %s -> %s #%u %s %s status=%d dialect=%s events=%u\n", i,
                r->request_id[0] ? r->request_id : "-", tt_endpoint_format(&r->client, c, sizeof c),
                tt_endpoint_format(&r->server, s, sizeof s), r->ordinal, r->method[0] ? r->method : "-",
                r->path[0] ? r->path : "-", r->status, tt_dialect_name(r->dialect), r->n_events);
        for (uint32_t k = 0; k < r->n_events; k++) {
            const tt_event_rec *e = &r->events[k];
            char term[32], fields[48], flags[96], has[160];
            ref_flags(term, sizeof term, e->terminators, term_names, N(term_names));
            ref_flags(fields, sizeof fields, e->fields, field_names, N(field_names));
            ref_flags(flags, sizeof flags, e->frame_flags, frame_names, N(frame_names));
            ref_flags(has, sizeof has, e->has, has_names, N(has_names));
            fprintf(out, "  %4u %-9s t=%" PRIu64 " first=%" PRIu64, k, tt_event_kind_name((tt_event_kind)e->kind),
                    e->dispatch_ns, e->first_ns);
            if (r->req_first_ns != TT_NS_NONE)
                fprintf(out, " +%.3fms", (double)(e->dispatch_ns - r->req_first_ns) / 1e6);
            if (e->ready_ns != TT_NS_NONE && e->ready_ns <= e->dispatch_ns)
                fprintf(out, " queued=%.3fms", (double)(e->dispatch_ns - e->ready_ns) / 1e6);
            fprintf(out, " off=%" PRIu64 "..%" PRIu64 " type=%s data=%u text=%u hash=%016" PRIx64
                         " has=%s term=%s fields=%s lines=%u comments=%u chunks=%u shared=%u flags=%s",
                    e->first_off, e->dispatch_off, "-", e->data_len, e->text_bytes, e->text_hash, has, term, fields,
                    e->lines, e->comment_lines, e->last_chunk - e->first_chunk + 1, e->shared_chunk, flags);
            if (a->with_text && r->text && e->kind == TT_EV_TOKEN && e->text_off + e->text_bytes <= r->text_len) {
                fputs(" text=", out);
                ref_escaped(out, r->text + e->text_off, e->text_bytes);
            }
            putc('\n', out);
        }
    }
}

/* A difference in ns chosen to sit where the milliseconds are hard: a
 * half-microsecond tie or next to one, sub-microsecond, large, past 2^50. */
static uint64_t hard_gap(uint64_t *g, unsigned k)
{
    uint64_t us = tt_xorshift64(g) % 100000000u;
    switch (k % 8) {
    case 0: return us * 1000 + 500;
    case 1: return us * 1000 + 499;
    case 2: return us * 1000 + 501;
    case 3: return tt_xorshift64(g) % 1000;
    case 4: return (UINT64_C(1) << 50) + tt_xorshift64(g) % 1000000;
    case 5: return tt_xorshift64(g) % (UINT64_C(1) << 50);
    case 6: return us * 1000;
    default: return tt_xorshift64(g) % 1000000000u;
    }
}

static void test_listing_matches_printf(void **state)
{
    (void)state;
    enum { N_REQ = 3, N_EV = 4000 };
    static tt_request reqs[N_REQ];
    static tt_event_rec events[N_REQ][N_EV];
    static char text[300] = "a \"quoted\"\\ line\n\r\t\x01\x7f end ";
    size_t text_len = strlen(text);
    for (int c = 0; c < 256; c++) text[text_len++] = (char)c; /* every byte, NUL and >= 0x80 too */
    uint64_t g = 42;
    memset(reqs, 0, sizeof reqs);
    for (unsigned i = 0; i < N_REQ; i++) {
        tt_request *r = &reqs[i];
        r->client = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 1}, .port = (uint16_t)(40000 + i)};
        r->server = (tt_endpoint){.family = 4, .addr = {10, 0, 0, 2}, .port = 8000};
        r->ordinal = i;
        r->status = i == 2 ? 0 : 200;
        if (i != 1) snprintf(r->request_id, sizeof r->request_id, "req-%u", i);
        if (i != 2) snprintf(r->method, sizeof r->method, "POST");
        if (i != 2) snprintf(r->path, sizeof r->path, "/v1/chat/completions");
        r->req_first_ns = i == 1 ? TT_NS_NONE : UINT64_C(1700000000000000000) + i;
        r->events = events[i];
        r->n_events = N_EV;
        r->text = text;
        r->text_len = text_len;
        for (unsigned k = 0; k < N_EV; k++) {
            tt_event_rec *e = &events[i][k];
            uint64_t base = r->req_first_ns == TT_NS_NONE ? UINT64_C(1700000000000000000) : r->req_first_ns;
            e->dispatch_ns = k % 97 == 5 ? base - 1 - tt_xorshift64(&g) % 1000 : base + hard_gap(&g, k); /* some wrap */
            e->first_ns = e->dispatch_ns - tt_xorshift64(&g) % 1000;
            switch (k % 3) {
            case 0: e->ready_ns = TT_NS_NONE; break;
            case 1: e->ready_ns = e->dispatch_ns - hard_gap(&g, k + 3) % (e->dispatch_ns + 1); break;
            default: e->ready_ns = e->dispatch_ns + 1; /* after the dispatch: not shown */
            }
            e->first_off = tt_xorshift64(&g) % 100000000;
            e->dispatch_off = e->first_off + tt_xorshift64(&g) % 5000;
            e->kind = (uint8_t)(k % TT_EV_COUNT);
            e->data_len = k % 11 == 0 ? UINT32_MAX : (uint32_t)(tt_xorshift64(&g) % 100000);
            e->text_off = (uint32_t)(tt_xorshift64(&g) % 8);
            e->text_bytes = k % 13 == 0 ? 1000 : (uint32_t)(tt_xorshift64(&g) % (r->text_len - e->text_off + 1));
            e->text_hash = k % 17 == 0 ? 0 : tt_xorshift64(&g);
            e->has = k % 19 == 0 ? 0xffffffffu : (uint32_t)(tt_xorshift64(&g) & 0xfff);
            e->terminators = (uint8_t)(tt_xorshift64(&g) & 7);
            e->fields = (uint8_t)(tt_xorshift64(&g) & 0x1f);
            e->frame_flags = k % 23 == 0 ? 0xffu : (uint32_t)(tt_xorshift64(&g) & 0xff);
            e->lines = (uint16_t)(k % 29 == 0 ? UINT16_MAX : tt_xorshift64(&g) % 50);
            e->comment_lines = (uint16_t)(tt_xorshift64(&g) % 5);
            e->first_chunk = (uint32_t)(tt_xorshift64(&g) % 1000);
            e->last_chunk = e->first_chunk + (uint32_t)(tt_xorshift64(&g) % 4);
            e->shared_chunk = (uint16_t)(tt_xorshift64(&g) % 3);
            e->type_id = 0;
        }
    }
    for (int with_text = 0; with_text < 2; with_text++) {
        tt_analysis a;
        memset(&a, 0, sizeof a);
        a.reqs = reqs;
        a.n_reqs = N_REQ;
        a.with_text = with_text;
        char *got = NULL, *want = NULL;
        size_t got_len = 0, want_len = 0;
        FILE *f = open_memstream(&got, &got_len);
        FILE *w = open_memstream(&want, &want_len);
        assert_non_null(f);
        assert_non_null(w);
        tt_report_events_text(f, &a);
        ref_listing(w, &a);
        fclose(f);
        fclose(w);
        assert_int_equal(got_len, want_len);
        assert_memory_equal(got, want, want_len);
        free(got);
        free(want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing_matches_printf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
