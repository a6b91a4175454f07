/* fuzz_probe_source.c - libFuzzer harness for the probe's record reader
 * (userspace/source/probe_source.c): the rings are shared with the traced
 * program, so nothing in them may be trusted.
 *
 * Input: byte 0 chooses the split, the rest is used twice:
 *  1. as a stream of records handed to tt_probe_source_feed one by one,
 *     each cut at its own `size` field (clamped), in an exact-size copy so
 *     that any read past a record is caught;
 *  2. as a ring file image: a valid header (so the ring is not simply
 *     refused; its commit_key 0, so that commit words in the input read as
 *     positions + 1) over a 64 KiB ring holding the bytes, with
 *     published_pos and consumed_pos taken from the input, read by
 *     tt_probe_source_poll in two steps: first with the published position
 *     at the split point, then at its full value (the collector finds
 *     records by their commit words either way; the published position
 *     tells it how full the ring is and whether it contradicts itself).
 * Every delivered chunk's bytes are read, and its offset must follow the
 * previous chunk's on the same connection and direction. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../probe/probe_abi.h"
#include "source/probe_source.h"

typedef struct fuzz_sink {
    uint64_t sum;
    uint64_t next_offset[64][2]; /* by conn_id % 64, direction */
    uint64_t last_conn[64];
} fuzz_sink;

static void check_chunk(void *ctx, const tt_chunk *c)
{
    fuzz_sink *s = ctx;
    if (c->kind == TT_CHUNK_DATA) {
        if (c->len && !c->data) abort();
        for (size_t i = 0; i < c->len; i++) s->sum += c->data[i];
    }
    if (c->kind != TT_CHUNK_DATA && c->kind != TT_CHUNK_GAP) return;
    unsigned k = (unsigned)(c->conn->conn_id % 64), d = c->dir ? 1 : 0;
    if (s->last_conn[k] != c->conn->conn_id) {
        s->last_conn[k] = c->conn->conn_id;
        s->next_offset[k][0] = s->next_offset[k][1] = 0;
    }
    if (c->offset != s->next_offset[k][d]) abort(); /* a stream's bytes must be contiguous */
    s->next_offset[k][d] = c->offset + c->len;
}

static tt_probe_source *new_source(fuzz_sink *sink)
{
    memset(sink, 0, sizeof *sink);
    return tt_probe_source_new(check_chunk, sink, check_chunk, sink, check_chunk, sink, check_chunk, sink);
}

static void feed_records(const uint8_t *data, size_t size)
{
    fuzz_sink sink;
    tt_probe_source *s = new_source(&sink);
    if (!s) return;
    size_t at = 0;
    while (at < size) {
        size_t left = size - at, n = left;
        if (left >= 16) {
            uint32_t claimed;
            memcpy(&claimed, data + at + 8, sizeof claimed); /* struct tt_probe_rec.size */
            if (claimed >= 8 && claimed < left) n = claimed;
        }
        uint8_t *copy = malloc(n ? n : 1);
        if (!copy) break;
        memcpy(copy, data + at, n);
        tt_probe_source_feed(s, 1000u + (uint32_t)(at & 3), copy, n);
        free(copy);
        at += n;
    }
    tt_probe_source_free(s);
}

static char ring_dir[64];

static void read_ring(const uint8_t *data, size_t size, uint8_t split)
{
    if (!ring_dir[0]) {
        snprintf(ring_dir, sizeof ring_dir, "/tmp/fuzz_probe_source.XXXXXX");
        if (!mkdtemp(ring_dir)) abort();
    }
    const uint64_t cap = TT_PROBE_MIN_RING;
    const uint32_t pid = (uint32_t)getpid(); /* alive: the ring is never retired mid-run */
    char path[128];
    snprintf(path, sizeof path, "%s/ring.%u.1", ring_dir, pid);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) abort();
    size_t len = TT_PROBE_HEADER_SIZE + cap;
    if (ftruncate(fd, (off_t)len) != 0) abort();
    uint8_t *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) abort();
    struct tt_probe_ring *h = (struct tt_probe_ring *)map;
    uint64_t positions[2] = {0, 0};
    if (size >= 16) {
        memcpy(positions, data, 16);
        data += 16;
        size -= 16;
    }
    memcpy(map + TT_PROBE_HEADER_SIZE, data, size < cap ? size : cap);
    h->magic = TT_PROBE_MAGIC;
    h->version = TT_PROBE_VERSION;
    h->header_size = TT_PROBE_HEADER_SIZE;
    h->capacity = cap;
    h->pid = pid;
    /* mostly plausible positions: within a few laps, consumed <= reserved */
    uint64_t reserved = positions[0] % (4 * cap), consumed = positions[1] % (cap + 1);
    consumed = consumed > reserved ? reserved : reserved - consumed;
    if (positions[1] >> 63) consumed = positions[1]; /* and sometimes not at all */
    h->consumed_pos = consumed;
    h->published_pos = consumed + (reserved - consumed) * split / 255;

    fuzz_sink sink;
    tt_probe_source *s = new_source(&sink);
    char err[256];
    if (s && tt_probe_source_open_dir(s, ring_dir, false, err, sizeof err) == 0) {
        tt_probe_source_poll(s);
        h->published_pos = reserved < consumed ? consumed : reserved;
        tt_probe_source_poll(s);
        tt_probe_source_finish(s);
        tt_probe_stats st;
        tt_probe_source_stats(s, &st);
        if (st.rings + st.bad_rings == 0) abort(); /* the file was neither read nor refused */
    }
    tt_probe_source_free(s);
    munmap(map, len);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t split = data[0];
    feed_records(data + 1, size - 1);
    read_ring(data + 1, size - 1, split);
    return 0;
}
