/* Fuzz the eBPF source's record decoder without the kernel: the input is a
 * run of records, each a 2-byte little-endian length then that many bytes
 * (a struct tt_socktap_event head and its data, READY records included),
 * fed to tt_bpf_source_feed; the chunks go to a tracker per vantage. Must
 * never crash, leak or read out of bounds, and every chunk must keep the
 * chunk contract (chunk_check.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/socktap.h"
#include "source/bpf_source.h"
#include "timeline/conn_tracker.h"

typedef struct sink {
    tt_tracker *t;
} sink;

static void to_tracker(void *ctx, const tt_chunk *c)
{
    sink *s = ctx;
    if (c->kind == TT_CHUNK_DATA && c->len && !c->data) __builtin_trap();
    if (c->kind == TT_CHUNK_READY && c->offset + c->len < c->offset) __builtin_trap();
    tt_tracker_chunk(s->t, c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sink server = {tt_tracker_new(NULL)}, client = {tt_tracker_new(NULL)}, tls = {tt_tracker_new(NULL)};
    tt_bpf_source *src = tt_bpf_source_new(to_tracker, &server, to_tracker, &client);
    tt_bpf_source_route_tls(src, to_tracker, &tls, to_tracker, &tls); /* TT_SOCKTAP_F_TLS records: the plaintext streams */
    uint8_t rec[sizeof(struct tt_socktap_event) + 512];
    size_t i = 0;
    while (i + 2 <= size) {
        size_t len = (size_t)data[i] | (size_t)data[i + 1] << 8;
        i += 2;
        if (len > sizeof rec) len = sizeof rec;
        if (len > size - i) len = size - i;
        memcpy(rec, data + i, len); /* aligned, as the ring buffer gives it */
        tt_bpf_source_feed(src, rec, len);
        i += len;
    }
    tt_bpf_source_free(src); /* finishes: END and RELEASE for every connection */
    tt_tracker_free(server.t);
    tt_tracker_free(client.t);
    tt_tracker_free(tls.t);
    return 0;
}
