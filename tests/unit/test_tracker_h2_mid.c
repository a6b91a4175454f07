/* The connection tracker on HTTP/2 joined mid-stream (no SYN, no
 * preface; issue 15): the exchange of h2_exchange.h entered at every byte of
 * every write, whole, byte by byte and with the source's guess of the
 * client wrong: frame boundaries found from every offset
 * (tt_http2_find_sync, never a false one), DATA as the whole parse gives
 * it, every token after the cut timed at its instant, the connection
 * noted; a request whose HPACK refers to entries from before the cut keeps
 * its known fields; responses met without their HEADERS framed from their
 * DATA (SSE, gRPC); HTTP/1.1 text, the goldens included, never read as
 * HTTP/2 from any offset. */
#include "h2_exchange.h"
#include "golden.h"

/* ---- joined mid-stream ---- */

/* One direction's bytes of the script, and where each write and each
 * frame begins in them. */
typedef struct flat {
    uint8_t *p;
    size_t n;
    size_t frame_at[128], n_frames;
} flat;

static void flatten(const h2_script *s, tt_direction dir, flat *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < s->n; i++) {
        if (s->w[i].dir != dir) continue;
        f->p = realloc(f->p, f->n + s->w[i].n);
        assert_non_null(f->p);
        memcpy(f->p + f->n, s->w[i].p, s->w[i].n);
        f->n += s->w[i].n;
    }
    size_t at = dir == TT_DIR_C2S ? TT_HTTP2_PREFACE_LEN : 0;
    while (at + 9 <= f->n) {
        assert_true(f->n_frames < 128);
        f->frame_at[f->n_frames++] = at;
        at += 9 + ((size_t)f->p[at] << 16 | (size_t)f->p[at + 1] << 8 | f->p[at + 2]);
    }
    assert_int_equal(at, f->n);
}

/* DATA payloads as the parser hands them over, with the stream offset of
 * their frame. */
typedef struct got_data {
    uint32_t sid[128];
    uint64_t frame_off[128];
    char bytes[128][200];
    size_t len[128];
    size_t n;
    uint64_t base, cur_frame;
    unsigned errors;
} got_data;

static void gd_frame(void *ud, const tt_h2_frame *fr)
{
    got_data *g = ud;
    g->cur_frame = fr->off + g->base;
}

static void gd_data(void *ud, uint32_t sid, tt_direction dir, const uint8_t *d, size_t n, uint64_t body_off,
                    uint64_t ns)
{
    got_data *g = ud;
    assert_true(g->n < 128 && n < 200);
    g->sid[g->n] = sid;
    g->frame_off[g->n] = g->cur_frame;
    memcpy(g->bytes[g->n], d, n);
    g->len[g->n++] = n;
}

static void gd_error(void *ud, tt_direction d, tt_h2_error c, const char *m, uint64_t o)
{
    got_data *g = ud;
    if (getenv("DBG")) fprintf(stderr, "dir %d error %s: %s\n", d, tt_http2_error_name(c), m);
    g->errors++;
}

static const tt_http2_callbacks gd_cb = {.on_data = gd_data, .on_frame = gd_frame, .on_error = gd_error};

/* The server's bytes entered at every offset: tt_http2_find_sync finds the
 * first frame boundary followed by a confirming chain (never a false one),
 * and the midstream parser fed from there, whole or byte by byte, hands
 * over exactly the DATA payloads the whole-stream parse gives for the
 * frames from there on, with no error. The client's bytes likewise find
 * their boundaries; HTTP/1.1 text never syncs. */
static void test_h2_find_sync_every_offset(void **state)
{
    (void)state;
    h2_script s;
    build(&s);
    for (int dir = 0; dir < 2; dir++) {
        flat f;
        flatten(&s, (tt_direction)dir, &f);
        got_data whole = {0};
        /* the reference: the client's bytes from their start; the server's
         * alone from their first byte, a frame boundary (midstream: the
         * requests that open its streams are not fed) */
        tt_http2_conn *c = dir == TT_DIR_C2S ? tt_http2_new(&gd_cb, &whole) : tt_http2_new_midstream(&gd_cb, &whole);
        tt_http2_feed(c, (tt_direction)dir, f.p, f.n, 1);
        tt_http2_free(c);
        assert_int_equal(whole.errors, 0);
        for (size_t o = 0; o <= f.n; o++) {
            size_t from = 0;
            long at = tt_http2_find_sync(f.p + o, f.n - o, (tt_direction)dir, &from);
            /* the first boundary at or after o that has a chain behind it */
            size_t k = 0;
            while (k < f.n_frames && f.frame_at[k] < o) k++;
            /* found when TT_HTTP2_SYNC_FRAMES frames follow; with fewer (a
             * chain ending at the end) it may wait on a false candidate */
            long want = -1;
            bool strong = false;
            if (k < f.n_frames) {
                size_t left = f.n_frames - k;
                strong = left >= TT_HTTP2_SYNC_FRAMES;
                if (strong || left >= (f.frame_at[k] == o ? 1u : 2u)) want = (long)(f.frame_at[k] - o);
            }
            if (!strong && at == -1) want = -1;
            if (at != want) fail_msg("dir %d offset %zu: sync at %ld, want %ld", dir, o, at, want);
            if (at < 0) continue;
            for (int bytewise = 0; bytewise < 2; bytewise++) {
                got_data mid = {.base = o + (size_t)at};
                tt_http2_conn *m = tt_http2_new_midstream(&gd_cb, &mid);
                const uint8_t *p = f.p + o + at;
                size_t n = f.n - o - (size_t)at;
                if (bytewise)
                    for (size_t i = 0; i < n; i++) tt_http2_feed(m, (tt_direction)dir, p + i, 1, 2);
                else
                    tt_http2_feed(m, (tt_direction)dir, p, n, 2);
                tt_http2_free(m);
                if (mid.errors) fail_msg("dir %d offset %zu: %u errors", dir, o, mid.errors);
                size_t j = 0;
                while (j < whole.n && whole.frame_off[j] < mid.base) j++;
                if (whole.n - j != mid.n) fail_msg("dir %d offset %zu: %zu payloads, want %zu", dir, o, mid.n, whole.n - j);
                for (size_t i = 0; i < mid.n; i++, j++)
                    if (mid.sid[i] != whole.sid[j] || mid.frame_off[i] != whole.frame_off[j] ||
                        mid.len[i] != whole.len[j] || memcmp(mid.bytes[i], whole.bytes[j], mid.len[i]))
                        fail_msg("dir %d offset %zu: payload %zu differs", dir, o, i);
            }
        }
        free(f.p);
    }
    static const char *const text[] = {
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"choices\":[]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"\\u0000\"}}]}\r\n\r\n",
    };
    for (size_t i = 0; i < 3; i++)
        for (int dir = 0; dir < 2; dir++)
            for (size_t o = 0; o < strlen(text[i]); o++) {
                size_t from = 0;
                assert_int_equal(tt_http2_find_sync((const uint8_t *)text[i] + o, strlen(text[i]) - o,
                                                    (tt_direction)dir, &from), -1);
            }
    h2_script_free(&s);
}

/* Tokens of the exchange: the instant of the write where their first byte
 * is, and of the write completing them (SSE streams only: NDJSON is not
 * told from a body without its head). */
static const struct { uint64_t first, done; } SSE_TOKENS[] = {
    {20 * MS, 20 * MS}, {21 * MS, 21 * MS}, {30 * MS, 31 * MS}, {31 * MS, 31 * MS}, {33 * MS, 33 * MS}};

/* The tracker on the exchange entered at every byte of every write (the
 * writes before dropped, the connection's orientation guessed, offsets
 * from 0), whole and byte by byte: read as HTTP/2 joined mid-stream (a
 * note), no crash; every token it times is one of the whole exchange's at
 * the same instant, and every SSE token whose bytes all come after the
 * cut is there; the same with the source's guess of the client wrong:
 * the frames set it right. */
static void test_h2_midstream_tracker(void **state)
{
    (void)state;
    h2_script s;
    build(&s);
    size_t runs = 0;
    for (size_t cw = 1; cw < s.n; cw++) {
        for (size_t ck = 0; ck < s.w[cw].n; ck++) {
            /* (write 1 whole is the client's preface: read as prior knowledge,
             * the server's SETTINGS before it lost: not a mid-stream entry) */
            if (cw == 1 && ck == 0) continue;
            for (int mode = 0; mode < 3; mode++, runs++) {
                bool bytewise = mode == 1, swapped = mode == 2;
                if (bytewise && ck % 7) continue; /* byte by byte at every 7th cut: enough, and quick */
                h2_feed f;
                memset(&f, 0, sizeof f);
                f.t = tt_tracker_new(NULL);
                f.conn.conn_id = 11;
                f.conn.orientation_guessed = true;
                tt_endpoint cl = {.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
                tt_endpoint sv = {.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
                /* swapped: the source guessed the server to be the client */
                f.conn.client = swapped ? sv : cl;
                f.conn.server = swapped ? cl : sv;
                for (size_t i = cw; i < s.n; i++) {
                    const h2_write *w = &s.w[i];
                    size_t k0 = i == cw ? ck : 0;
                    tt_direction d = (tt_direction)(w->dir ^ swapped);
                    if (bytewise)
                        for (size_t k = k0; k < w->n; k++) h2_feed_chunk(&f, d, TT_CHUNK_DATA, w->p + k, 1, w->ns);
                    else
                        h2_feed_chunk(&f, d, TT_CHUNK_DATA, w->p + k0, w->n - k0, w->ns);
                }
                h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 50 * MS);
                h2_feed_chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 50 * MS);
                h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 51 * MS);
                tt_tracker_sort(f.t);
                size_t n, nn;
                const tt_request *r = tt_tracker_requests(f.t, &n);
                const tt_conn_note *notes = tt_tracker_notes(f.t, &nn);
                bool joined = false;
                for (size_t i = 0; i < nn; i++) joined |= notes[i].analysed && strstr(notes[i].reason, "joined mid-stream") != NULL;
                uint64_t cut_ns = s.w[cw].ns;
                size_t want = 0, have = 0;
                for (size_t t = 0; t < sizeof SSE_TOKENS / sizeof SSE_TOKENS[0]; t++) {
                    if (SSE_TOKENS[t].first <= cut_ns) continue;
                    want++;
                    bool found = false;
                    for (size_t i = 0; i < n && !found; i++)
                        for (uint32_t e = 0; e < r[i].n_events; e++)
                            found |= r[i].events[e].kind == TT_EV_TOKEN &&
                                     r[i].events[e].dispatch_ns == SSE_TOKENS[t].done;
                    if (!found) fail_msg("cut at write %zu byte %zu mode %d: token at %llu ms missing", cw, ck, mode,
                                         (unsigned long long)(SSE_TOKENS[t].done / MS));
                }
                for (size_t i = 0; i < n; i++) {
                    for (uint32_t e = 0; e < r[i].n_events; e++) {
                        if (r[i].events[e].kind != TT_EV_TOKEN) continue;
                        have++;
                        uint64_t ns = r[i].events[e].dispatch_ns;
                        bool known = ns == 20 * MS || ns == 21 * MS || ns == 23 * MS || ns == 31 * MS || ns == 33 * MS;
                        if (!known) fail_msg("cut at write %zu byte %zu: a token at %llu ns", cw, ck,
                                             (unsigned long long)ns);
                    }
                    if (r[i].incomplete & TT_INC_REQUEST_NOT_SEEN) continue;
                    /* a request seen whole: after the cut */
                    if (r[i].req_first_ns < cut_ns)
                        fail_msg("cut at write %zu byte %zu: request at %llu seen", cw, ck,
                                 (unsigned long long)r[i].req_first_ns);
                }
                if (have < want) fail_msg("cut at write %zu byte %zu: %zu tokens < %zu", cw, ck, have, want);
                for (size_t i = 0; i < n; i++)
                    if (r[i].token_events && r[i].client.port != 40000)
                        fail_msg("cut at write %zu byte %zu mode %d: client and server the wrong way", cw, ck, mode);
                if (want && !joined) fail_msg("cut at write %zu byte %zu: no mid-stream note", cw, ck);
                if (cw == 3 && ck == 0) {
                    /* stream 3's request refers to HPACK entries stream 1's made */
                    bool hpack = false;
                    for (size_t i = 0; i < nn; i++) hpack |= strstr(notes[i].reason, "HPACK entries not captured") != NULL;
                    const tt_request *r3 = NULL;
                    for (size_t i = 0; i < n; i++)
                        if (!(r[i].incomplete & TT_INC_REQUEST_NOT_SEEN) && r[i].req_first_ns == 4 * MS) r3 = &r[i];
                    if (!hpack || !r3) fail_msg("mode %d: stream 3's request or the HPACK note missing", mode);
                    if (strcmp(r3->method, "POST") || r3->status != 200 || strcmp(r3->fields.model, "m-r3"))
                        fail_msg("mode %d: stream 3's known fields lost", mode);
                    /* x-request-id's name is stream 1's table entry: unknown, so empty, never wrong */
                    if (r3->request_id[0]) fail_msg("mode %d: an unknown field given a value", mode);
                }
                tt_tracker_free(f.t);
            }
        }
    }
    assert_true(runs > 500);
    h2_script_free(&s);
}

/* An HTTP/2 connection evicted (the tracker follows one connection at a
 * time, and another opens) comes back read as HTTP/2 joined mid-stream,
 * its SYN's orientation kept: the tokens after the eviction are timed,
 * and what the eviction cut is filed evicted (what had finished before
 * stays whole). Evicted after every
 * write of the exchange. */
static void test_h2_evicted_comes_back(void **state)
{
    (void)state;
    h2_script s;
    build(&s);
    for (size_t cw = 2; cw < s.n; cw++) {
        h2_feed f, other;
        memset(&f, 0, sizeof f);
        memset(&other, 0, sizeof other);
        f.t = other.t = tt_tracker_new(&(tt_tracker_options){.max_connections = 1});
        f.conn.conn_id = 11;
        f.conn.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
        f.conn.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
        other.conn.conn_id = 12;
        for (size_t i = 0; i < s.n; i++) {
            if (i == cw) h2_feed_chunk(&other, TT_DIR_C2S, TT_CHUNK_DATA, (const uint8_t *)"G", 1, s.w[i].ns); /* evicts 11 */
            h2_feed_chunk(&f, s.w[i].dir, TT_CHUNK_DATA, s.w[i].p, s.w[i].n, s.w[i].ns);
        }
        h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 50 * MS);
        h2_feed_chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 50 * MS);
        h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 51 * MS);
        tt_tracker_sort(f.t);
        size_t n;
        const tt_request *r = tt_tracker_requests(f.t, &n);
        uint64_t cut_ns = s.w[cw].ns;
        for (size_t t = 0; t < sizeof SSE_TOKENS / sizeof SSE_TOKENS[0]; t++) {
            if (SSE_TOKENS[t].first < cut_ns) continue;
            bool found = false;
            for (size_t i = 0; i < n && !found; i++)
                for (uint32_t e = 0; e < r[i].n_events; e++)
                    found |= r[i].events[e].kind == TT_EV_TOKEN && r[i].events[e].dispatch_ns == SSE_TOKENS[t].done &&
                             r[i].client.port == 40000;
            if (!found) fail_msg("evicted before write %zu: token at %llu ms missing", cw,
                                 (unsigned long long)(SSE_TOKENS[t].done / MS));
        }
        for (size_t i = 0; i < n; i++)
            if (r[i].client.port == 40000 && r[i].req_first_ns != TT_NS_NONE && r[i].req_first_ns < cut_ns &&
                r[i].incomplete && !(r[i].incomplete & TT_INC_EVICTED))
                fail_msg("evicted before write %zu: a request cut by it (%#x) not marked evicted", cw,
                         r[i].incomplete);
        tt_tracker_free(f.t);
    }
    h2_script_free(&s);
}

/* Joined where the client's bytes start at a frame (its request seen
 * whole) but the server's inside its response HEADERS: the response is
 * framed from its DATA (sniffed SSE), filed with the request. */
static void test_h2_midstream_head_unseen(void **state)
{
    (void)state;
    h2_script s;
    h2_script_init(&s);
    h2_write *w = h2_write_at(&s, TT_DIR_C2S, 1 * MS);
    h2_frame(w, TT_H2_SETTINGS, 0, 0, NULL, 0);
    chat_request(&s, w, 1, "/v1/chat/completions", "r1");
    w = h2_write_at(&s, TT_DIR_S2C, 2 * MS);
    h2_headers(&s, w, 1, 0, RESP_SSE);
    h2_data(h2_write_at(&s, TT_DIR_S2C, 3 * MS), 1, 0, tok("a"));
    h2_data(h2_write_at(&s, TT_DIR_S2C, 4 * MS), 1, 0, tok("b"));
    h2_data(h2_write_at(&s, TT_DIR_S2C, 5 * MS), 1, TT_H2_FLAG_END_STREAM, "data: [DONE]\n\n");
    h2_feed f;
    memset(&f, 0, sizeof f);
    f.t = tt_tracker_new(NULL);
    f.conn.conn_id = 13;
    f.conn.orientation_guessed = true;
    f.conn.client = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 40000};
    f.conn.server = (tt_endpoint){.family = 4, .addr = {127, 0, 0, 1}, .port = 8000};
    for (size_t i = 0; i < s.n; i++) {
        size_t k0 = i == 1 ? 4 : 0; /* the server's bytes begin inside the HEADERS frame */
        h2_feed_chunk(&f, s.w[i].dir, TT_CHUNK_DATA, s.w[i].p + k0, s.w[i].n - k0, s.w[i].ns);
    }
    h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 9 * MS);
    h2_feed_chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 9 * MS);
    h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 10 * MS);
    size_t n;
    const tt_request *r = tt_tracker_requests(f.t, &n);
    assert_int_equal(n, 1);
    assert_string_equal(r->request_id, "r1");
    assert_string_equal(r->path, "/v1/chat/completions");
    assert_false(r->incomplete & TT_INC_REQUEST_NOT_SEEN);
    assert_int_equal(r->framing, TT_FRAMING_SSE);
    assert_int_equal(r->token_events, 2);
    assert_int_equal(r->first_token_ns, 3 * MS);
    assert_int_equal(r->last_token_ns, 4 * MS);
    assert_true(r->terminal_seen);
    tt_tracker_free(f.t);
    h2_script_free(&s);
}

/* Joined inside a gRPC response (its HEADERS and the request before the
 * capture): the DATA payloads, each whole length-prefixed messages, are
 * framed as gRPC, each message an event at its frame's instant. */
static void test_h2_midstream_grpc(void **state)
{
    (void)state;
    h2_script s;
    memset(&s, 0, sizeof s);
    static const uint8_t msg[] = {0, 0, 0, 0, 4, 0x0a, 0x02, 'h', 'i'};
    static const uint8_t two[] = {0, 0, 0, 0, 4, 0x0a, 0x02, 'a', 'b', 0, 0, 0, 0, 2, 0x08, 0x01};
    h2_write *w = h2_write_at(&s, TT_DIR_S2C, 1 * MS);
    h2_put(w, "\x17\x42\x99", 3); /* the end of a frame begun before the capture */
    h2_frame(w, TT_H2_DATA, 0, 1, msg, sizeof msg);
    h2_frame(h2_write_at(&s, TT_DIR_S2C, 2 * MS), TT_H2_DATA, 0, 1, msg, sizeof msg);
    h2_frame(h2_write_at(&s, TT_DIR_S2C, 3 * MS), TT_H2_DATA, 0, 1, two, sizeof two);
    uint8_t inc[4] = {0, 0, 0x40, 0};
    h2_frame(h2_write_at(&s, TT_DIR_C2S, 4 * MS), TT_H2_WINDOW_UPDATE, 0, 0, inc, 4);
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        h2_feed f;
        memset(&f, 0, sizeof f);
        f.t = tt_tracker_new(NULL);
        f.conn.conn_id = 15;
        f.conn.orientation_guessed = true;
        for (size_t i = 0; i < s.n; i++) {
            if (bytewise)
                for (size_t k = 0; k < s.w[i].n; k++) h2_feed_chunk(&f, s.w[i].dir, TT_CHUNK_DATA, s.w[i].p + k, 1, s.w[i].ns);
            else
                h2_feed_chunk(&f, s.w[i].dir, TT_CHUNK_DATA, s.w[i].p, s.w[i].n, s.w[i].ns);
        }
        h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_FIN, NULL, 0, 9 * MS);
        h2_feed_chunk(&f, TT_DIR_S2C, TT_CHUNK_FIN, NULL, 0, 9 * MS);
        h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 10 * MS);
        size_t n;
        const tt_request *r = tt_tracker_requests(f.t, &n);
        assert_int_equal(n, 1);
        assert_true(r->incomplete & TT_INC_REQUEST_NOT_SEEN);
        assert_int_equal(r->framing, TT_FRAMING_GRPC);
        assert_int_equal(r->n_events, 4);
        assert_int_equal(r->events[0].dispatch_ns, 1 * MS);
        assert_int_equal(r->events[1].dispatch_ns, 2 * MS);
        assert_int_equal(r->events[3].dispatch_ns, 3 * MS);
        tt_tracker_free(f.t);
    }
    h2_script_free(&s);
}

/* HTTP/1.1 captured mid-connection (orientation guessed) stays HTTP/1.1:
 * a response body first, then a whole exchange, whole and byte by byte. */
static void test_h1_midstream_not_h2(void **state)
{
    (void)state;
    static const char body[] = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n0\r\n\r\n";
    static const char req[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        h2_feed f;
        memset(&f, 0, sizeof f);
        f.t = tt_tracker_new(NULL);
        f.conn.conn_id = 12;
        f.conn.orientation_guessed = true;
        const struct { tt_direction dir; const char *p; uint64_t ns; } w[] = {
            {TT_DIR_S2C, body, 100}, {TT_DIR_C2S, req, 200}, {TT_DIR_S2C, resp, 300}};
        for (size_t i = 0; i < 3; i++) {
            size_t n = strlen(w[i].p);
            if (bytewise)
                for (size_t k = 0; k < n; k++) h2_feed_chunk(&f, w[i].dir, TT_CHUNK_DATA, (const uint8_t *)w[i].p + k, 1, w[i].ns);
            else
                h2_feed_chunk(&f, w[i].dir, TT_CHUNK_DATA, (const uint8_t *)w[i].p, n, w[i].ns);
        }
        h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 600);
        size_t n, nn;
        const tt_request *r = tt_tracker_requests(f.t, &n);
        const tt_conn_note *notes = tt_tracker_notes(f.t, &nn);
        for (size_t i = 0; i < nn; i++) assert_null(strstr(notes[i].reason, "HTTP/2"));
        bool post = false;
        for (size_t i = 0; i < n; i++) post |= !strcmp(r[i].method, "POST");
        assert_true(post);
        tt_tracker_free(f.t);
    }
}

/* The HTTP/1.1, SSE, NDJSON and dialect golden inputs (text as it travels
 * in HTTP/1.1) never show an HTTP/2 frame chain, from any offset, in
 * either direction; fed to the tracker as a connection joined mid-stream
 * from every offset they are never read as HTTP/2. */
static void test_h1_goldens_never_h2(void **state)
{
    (void)state;
    static const char *const dirs[] = {"tests/golden/http1", "tests/golden/sse", "tests/golden/ndjson",
                                       "tests/golden/dialect"};
    size_t inputs = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        size_t n;
        char **files = tt_golden_list(dirs[d], &n);
        for (size_t i = 0; i < n; i++) {
            tt_golden g;
            assert_int_equal(tt_golden_load(files[i], &g), 0);
            inputs++;
            for (size_t o = 0; o < g.input_len; o++) {
                for (int dir = 0; dir < 2; dir++) {
                    size_t from = 0;
                    long at = tt_http2_find_sync(g.input + o, g.input_len - o, (tt_direction)dir, &from);
                    if (at >= 0) fail_msg("%s from %zu (dir %d): a frame chain at %ld", files[i], o, dir, at);
                }
                h2_feed f;
                memset(&f, 0, sizeof f);
                f.t = tt_tracker_new(NULL);
                f.conn.conn_id = 14;
                f.conn.orientation_guessed = true;
                h2_feed_chunk(&f, TT_DIR_S2C, TT_CHUNK_DATA, g.input + o, g.input_len - o, 1);
                h2_feed_chunk(&f, TT_DIR_C2S, TT_CHUNK_RELEASE, NULL, 0, 2);
                size_t nn;
                const tt_conn_note *notes = tt_tracker_notes(f.t, &nn);
                for (size_t k = 0; k < nn; k++)
                    if (notes[k].analysed || strstr(notes[k].reason, "mid-stream")) fail_msg("%s from %zu: %s", files[i], o, notes[k].reason);
                tt_tracker_free(f.t);
            }
            tt_golden_free(&g);
        }
        tt_golden_list_free(files, n);
    }
    assert_true(inputs > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2_find_sync_every_offset),
        cmocka_unit_test(test_h2_midstream_tracker),
        cmocka_unit_test(test_h2_midstream_head_unseen),
        cmocka_unit_test(test_h2_evicted_comes_back),
        cmocka_unit_test(test_h2_midstream_grpc),
        cmocka_unit_test(test_h1_midstream_not_h2),
        cmocka_unit_test(test_h1_goldens_never_h2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
