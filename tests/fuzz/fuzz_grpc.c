/* fuzz_grpc.c - libFuzzer harness for the gRPC message framing.
 * frame_fuzz.h parses the body whole, at random cuts and byte by byte
 * through the framer and traps when the runs disagree or a chunk field
 * names the wrong feed. Then one more whole run checks what the framing
 * itself promises (grpc.h): events tile the body from offset 0, each
 * first_off < dispatch_off <= body length, data_len <= TT_SSE_MAX_EVENT,
 * a message's data are the body's bytes after its prefix, nothing follows
 * a BAD_PREFIX or UNTERMINATED event, and the ignored count is the rest of
 * the body after a bad flag byte. */
#include "frame_fuzz.h"

#include "proto/grpc.h"

typedef struct tile {
    const uint8_t *body;
    size_t len;
    uint64_t next_off; /* where the next event must start */
    bool closed;       /* a BAD_PREFIX or UNTERMINATED event went by */
    uint64_t bad_off;
    bool bad;
} tile;

static void tile_event(void *ud, const tt_event_frame *ev)
{
    tile *t = ud;
    if (t->closed || ev->first_off != t->next_off || ev->first_off >= ev->dispatch_off || ev->dispatch_off > t->len ||
        ev->data_len > TT_SSE_MAX_EVENT || !ev->data || ev->type)
        __builtin_trap();
    if (ev->lines) {
        uint64_t at = ev->first_off + TT_GRPC_PREFIX_LEN;
        if (at + ev->data_len > ev->dispatch_off || memcmp(ev->data, t->body + at, ev->data_len) != 0)
            __builtin_trap();
        bool compressed = t->body[ev->first_off] == 1;
        if (compressed != !!(ev->flags & TT_FRAME_COMPRESSED)) __builtin_trap();
    } else if (ev->data_len) {
        __builtin_trap();
    }
    if (ev->flags & TT_FRAME_BAD_PREFIX) {
        if (t->body[ev->first_off] <= 1 || ev->dispatch_off != ev->first_off + 1) __builtin_trap();
        t->bad = true;
        t->bad_off = ev->first_off;
        t->closed = true;
    } else if (t->body[ev->first_off] > 1) {
        __builtin_trap();
    }
    if (ev->flags & TT_FRAME_UNTERMINATED) {
        if (ev->dispatch_off != t->len) __builtin_trap();
        t->closed = true;
    }
    t->next_off = ev->dispatch_off;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frame_fuzz_one(TT_FRAMING_GRPC, data, size);
    if (size == 0) return 0;
    tile t = { .body = data + 1, .len = size - 1 };
    static const tt_frame_callbacks cb = { tile_event, NULL };
    tt_grpc_parser *p = tt_grpc_new(&cb, &t);
    if (!p) __builtin_trap();
    uint8_t *copy = malloc(t.len ? t.len : 1);
    if (t.len) memcpy(copy, t.body, t.len);
    tt_grpc_feed(p, copy, t.len, 0, 1);
    free(copy);
    tt_grpc_finish(p, 2);
    if (t.next_off != t.len && !t.bad) __builtin_trap();
    if (tt_grpc_ignored_bytes(p) != (t.bad ? t.len - t.bad_off : 0)) __builtin_trap();
    tt_grpc_free(p);
    return 0;
}
