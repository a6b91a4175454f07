/* test_probe_rings.c - the probe's ring files -> chunks: rings written by
 * a small producer that follows probe/probe.c's reservation rules (a PAD
 * record or an implicit skip at the ring's end), then read after the fact
 * or while written. Damaged rings must be refused or abandoned, never
 * trusted. */
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "../../probe/probe_abi.h"
#include "../../probe/probe_ring.h"
#include "golden.h"
#include "clocks/tsc_clock.h"
#include "core/util.h"
#include "source/probe_source.h"
#include "probe_recs.h"

/* ---- ring files ---- */

typedef struct ring_writer {
    uint8_t *map;
    size_t len;
    uint64_t cap, pos;
    uint64_t key;      /* the ring's commit_key */
    bool lazy;         /* published_pos left alone (the probe publishes it only now and then) */
} ring_writer;

#define WRITER_KEY 0x6b65792d72696e67ull

static void ring_writer_open(ring_writer *w, const char *dir, uint32_t pid, uint64_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/ring.%u.123", dir, pid);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    w->len = TT_PROBE_HEADER_SIZE + cap;
    assert_int_equal(ftruncate(fd, (off_t)w->len), 0);
    w->map = mmap(NULL, w->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(w->map != MAP_FAILED);
    close(fd);
    struct tt_probe_ring *h = (struct tt_probe_ring *)w->map;
    h->magic = TT_PROBE_MAGIC;
    h->version = TT_PROBE_VERSION;
    h->header_size = TT_PROBE_HEADER_SIZE;
    h->capacity = cap;
    h->pid = pid;
    h->commit_key = WRITER_KEY;
    w->cap = cap;
    w->pos = 0;
    w->key = WRITER_KEY;
    w->lazy = false;
}

/* Append one record the way the probe reserves space; commit unless told. */
static void ring_put(ring_writer *w, const uint8_t *rec, size_t n, bool commit)
{
    struct tt_probe_ring *h = (struct tt_probe_ring *)w->map;
    uint8_t *data = w->map + TT_PROBE_HEADER_SIZE;
    uint64_t off = w->pos % w->cap, room = w->cap - off;
    if (room < n) {
        if (room >= TT_PROBE_REC_MIN) {
            struct tt_probe_rec pad;
            memset(&pad, 0xEE, sizeof pad); /* stale bytes: only size, kind, commit count */
            pad.size = (uint32_t)room;
            pad.kind = TT_PROBE_KIND_PAD;
            pad.commit = (w->pos + 1) ^ w->key;
            memcpy(data + off, &pad, sizeof pad);
        }
        w->pos += room;
        off = 0;
    }
    memcpy(data + off, rec, n);
    ((struct tt_probe_rec *)(data + off))->commit = commit ? (w->pos + 1) ^ w->key : 0;
    w->pos += n;
    if (!w->lazy) h->published_pos = w->pos;
}

static void ring_writer_close(ring_writer *w) { munmap(w->map, w->len); }

static char *make_dir(void)
{
    char *dir = strdup("/tmp/tt_probe_src.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return dir;
}

static void remove_dir(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

/* Records crossing the ring's end (a PAD, then an implicit skip), read as
 * they come; the producer reuses the space the collector handed back. */
static void test_ring_wraps(void **state)
{
    char *dir = make_dir();
    ring_writer w;
    ring_writer_open(&w, dir, (uint32_t)getpid(), TT_PROBE_MIN_RING); /* alive: never retired */
    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, NULL, NULL, NULL, NULL, NULL, NULL);
    char err[256];
    assert_int_equal(tt_probe_source_open_dir(s, dir, false, err, sizeof err), 0);
    static uint8_t rec[8192];
    char data[2049];
    memset(data, 'a', 2048);
    data[2048] = 0;
    size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 1, data, 0);
    uint64_t total = 0;
    for (int round = 0; round < 3; round++) {
        /* fill most of the ring, read it, and go round again */
        uint64_t before = w.pos;
        for (int i = 0; i < 25; i++) {
            ring_put(&w, rec, n, true);
            total += 2048;
        }
        assert_int_equal(tt_probe_source_poll(s), 25);
        /* how full the ring was found: what tells run.c to poll again at once */
        assert_int_equal(tt_probe_source_last_fill(s), (w.pos - before) * 1000 / w.cap);
        assert_true(tt_probe_source_last_fill(s) >= 250);
        assert_int_equal(tt_probe_source_poll(s), 0);
        assert_int_equal(tt_probe_source_last_fill(s), 0);
        struct tt_probe_ring *h = (struct tt_probe_ring *)w.map;
        assert_int_equal(h->consumed_pos, w.pos);
    }
    /* a tail shorter than a record head: skipped without a PAD */
    size_t small_n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 2, "z", 0);
    while (w.cap - w.pos % w.cap >= 400) {
        ring_put(&w, rec, small_n, true);
        total += 1;
    }
    uint64_t room = w.cap - w.pos % w.cap;
    if (room >= 184) {
        size_t len = room - 64 - sizeof(struct tt_probe_rec);
        memset(data, 'b', len);
        data[len] = 0;
        ring_put(&w, rec, probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 2, data, 0),
                 true);
        total += len;
        small_n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 2, "z", 0);
    }
    assert_true(w.cap - w.pos % w.cap < TT_PROBE_REC_MIN);
    ring_put(&w, rec, small_n, true);
    total += 1;
    tt_probe_source_poll(s);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.data_bytes, total);
    assert_int_equal(st.bad_records, 0);
    assert_int_equal(st.bad_rings, 0);
    assert_int_equal(st.rings, 1);
    ring_writer_close(&w);
    tt_probe_source_free(s);
    tt_sb_free(&b);
    remove_dir(dir);
}

static void test_ring_unfinished_and_damaged(void **state)
{
    char *dir = make_dir();
    ring_writer w;
    ring_writer_open(&w, dir, 100, TT_PROBE_MIN_RING);
    uint8_t rec[512];
    size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 1, "one", 0);
    ring_put(&w, rec, n, true);
    ring_put(&w, rec, n, false); /* the process died mid-record */
    ring_put(&w, rec, n, true);  /* after it: never reachable */
    ring_writer_close(&w);

    ring_writer_open(&w, dir, 101, TT_PROBE_MIN_RING);
    ring_put(&w, rec, n, true);
    struct tt_probe_rec *second = (struct tt_probe_rec *)(w.map + TT_PROBE_HEADER_SIZE + n);
    ring_put(&w, rec, n, true);
    second->size = 1u << 30; /* beyond the ring */
    ring_writer_close(&w);

    ring_writer_open(&w, dir, 102, TT_PROBE_MIN_RING);
    ((struct tt_probe_ring *)w.map)->published_pos = 10 * TT_PROBE_MIN_RING; /* ahead by more than the ring */
    ring_writer_close(&w);

    ring_writer_open(&w, dir, 103, TT_PROBE_MIN_RING);
    ((struct tt_probe_ring *)w.map)->capacity = 3 * 4096; /* not a power of two */
    ring_writer_close(&w);

    ring_writer_open(&w, dir, 104, TT_PROBE_MIN_RING);
    ((struct tt_probe_ring *)w.map)->pid = 7; /* not the pid in its name */
    ring_writer_close(&w);

    ring_writer_open(&w, dir, 105, TT_PROBE_MIN_RING);
    ((struct tt_probe_ring *)w.map)->magic = 0; /* still being created: tried again later */
    ring_writer_close(&w);

    char path[512];
    ring_writer_open(&w, dir, 106, TT_PROBE_MIN_RING); /* shorter than its capacity says */
    ring_writer_close(&w);
    char from[512];
    snprintf(from, sizeof from, "%s/ring.106.123", dir);
    assert_int_equal(truncate(from, TT_PROBE_HEADER_SIZE + 4096), 0);
    snprintf(path, sizeof path, "%s/not-a-ring", dir);
    FILE *f = fopen(path, "w");
    fputs("x", f);
    fclose(f);

    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, NULL, NULL, NULL, NULL, NULL, NULL);
    char err[256];
    assert_int_equal(tt_probe_source_open_dir(s, dir, false, err, sizeof err), 0);
    tt_probe_source_poll(s);
    tt_probe_source_poll(s);
    tt_probe_source_finish(s);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.records, 2);           /* the first of 100 and of 101 */
    assert_int_equal(st.unfinished_bytes, 2 * n);
    assert_int_equal(st.bad_rings, 5);         /* 101, 102, 103, 104, 106 */
    assert_int_equal(st.rings, 3);             /* 100, 101, 102 mapped */
    tt_probe_source_free(s);
    tt_sb_free(&b);
    remove_dir(dir);
}

/* The probe's own producer (probe/probe_ring.h) on a ring file. A record
 * dropped while another thread is still making the ring is counted in the
 * ring's header once it is made, in both orders of the race with the
 * maker's publish (the lost 256 bytes of test_run_stress.sh's "delivered +
 * dropped != moved"); then records through the full ring, wrapping:
 * delivered + dropped = moved, exactly. */
static void test_producer_drop_accounting(void **state)
{
    char *dir = make_dir();
    ring_writer w;
    ring_writer_open(&w, dir, (uint32_t)getpid(), TT_PROBE_MIN_RING);
    struct tt_probe_ring *h = (struct tt_probe_ring *)w.map;
    tt_probe_producer p;
    memset(&p, 0, sizeof p);
    uint64_t moved = 0, dropped_records = 0;

    p.state = TT_PRODUCER_CREATING; /* thread A is making the ring */
    tt_producer_drop(&p, 256);      /* thread B's record finds it not ready */
    moved += 256;
    dropped_records++;
    assert_int_equal(p.early_drop_records, 1);
    assert_int_equal(h->drop_records, 0);
    tt_producer_attach(&p, h, w.map + TT_PROBE_HEADER_SIZE, w.cap);
    tt_producer_publish(&p); /* A: ready, and B's drop moved into the header */
    assert_int_equal(h->drop_records, 1);
    assert_int_equal(h->drop_bytes, 256);
    assert_int_equal(p.early_drop_records, 0);
    /* thread C saw the ring not ready before A published, and notes its
     * drop only after A's flush: it must flush it itself */
    tt_producer_drop_early(&p, 512);
    moved += 512;
    dropped_records++;
    assert_int_equal(h->drop_records, 2);
    assert_int_equal(h->drop_bytes, 768);
    assert_int_equal(p.early_drop_records + p.early_drop_bytes, 0);

    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, NULL, NULL, NULL, NULL, NULL, NULL);
    char err[256];
    assert_int_equal(tt_probe_source_open_dir(s, dir, false, err, sizeof err), 0);
    char data[257];
    memset(data, 'q', 256);
    data[256] = 0;
    static uint8_t rec[1024];
    size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 1, data, 0);
    uint64_t put = 0;
    for (int i = 0; i < 1200; i++) {
        struct tt_probe_rec *r;
        uint64_t pos = tt_producer_reserve(&p, (uint32_t)n, &r);
        moved += 256;
        if (pos == UINT64_MAX) {
            tt_producer_drop(&p, 256);
            dropped_records++;
        } else {
            memcpy((uint8_t *)r + sizeof r->commit, rec + sizeof r->commit, n - sizeof r->commit);
            tt_producer_commit(&p, r, pos);
            tt_producer_prefetch(&p, pos + n); /* a hint, up to the ring's end and never past it */
            put++;
        }
        if (i % 300 == 299) tt_probe_source_poll(s); /* hands space back: the producer wraps */
    }
    tt_probe_source_poll(s);
    assert_true(put > 400);
    assert_true(dropped_records > 100);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.bad_records, 0);
    assert_int_equal(st.bad_rings, 0);
    assert_int_equal(st.drop_records, dropped_records);
    assert_int_equal(st.data_bytes, put * 256);
    assert_int_equal(st.data_bytes + st.drop_bytes, moved);
    ring_writer_close(&w);
    tt_probe_source_free(s);
    tt_sb_free(&b);
    remove_dir(dir);
}

/* Records are found by their commit words: the producers publish their
 * position only now and then (never, here), and what lies past the last
 * complete record (an older lap's records, or a program's bytes that look
 * like a complete record to a reader that ignored the ring's key) is not
 * read. */
static void test_ring_found_by_commit_words(void **state)
{
    char *dir = make_dir();
    ring_writer w;
    ring_writer_open(&w, dir, (uint32_t)getpid(), TT_PROBE_MIN_RING); /* alive: never retired */
    w.lazy = true;
    struct tt_probe_ring *h = (struct tt_probe_ring *)w.map;
    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, NULL, NULL, NULL, NULL, NULL, NULL);
    char err[256];
    assert_int_equal(tt_probe_source_open_dir(s, dir, false, err, sizeof err), 0);

    static uint8_t small[512], big[32768], fake[512];
    static char payload[30001];
    size_t n = probe_rec(small, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 1, "small", 0);
    memset(payload, 'p', 30000);
    size_t big_n = probe_rec(big, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 1, payload, 0);
    /* where the tail stops in the second lap, after ten small records: the
     * big record's bytes there hold a whole record, complete as a keyless
     * commit word would say */
    uint64_t fake_off = 10 * n;
    size_t fake_n = probe_rec(fake, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 1, "FAKE", 0);
    ((struct tt_probe_rec *)fake)->commit = w.cap + fake_off + 1;
    assert_true(fake_off > sizeof(struct tt_probe_rec) && fake_off + fake_n < big_n);
    memcpy(big + fake_off, fake, fake_n);

    ring_put(&w, big, big_n, true);
    size_t first_lap = 1;
    while (w.pos + n <= w.cap) {
        ring_put(&w, small, n, true);
        first_lap++;
    }
    assert_int_equal(tt_probe_source_poll(s), first_lap);
    assert_int_equal(h->published_pos, 0);
    assert_int_equal(tt_probe_source_last_fill(s), 0); /* nothing published: how full is not known */
    assert_int_equal(h->consumed_pos, w.pos);

    for (int i = 0; i < 10; i++) ring_put(&w, small, n, true); /* the second lap, over the first */
    assert_int_equal(w.pos, w.cap + fake_off);
    assert_int_equal(tt_probe_source_poll(s), 10);
    assert_int_equal(tt_probe_source_poll(s), 0);
    ring_put(&w, small, n, true); /* a real record there now */
    assert_int_equal(tt_probe_source_poll(s), 1);

    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.records, first_lap + 11);
    assert_int_equal(st.data_bytes, 30000 + 5 * (first_lap - 1 + 11));
    assert_int_equal(st.bad_records, 0);
    assert_int_equal(st.bad_rings, 0);
    ring_writer_close(&w);
    tt_probe_source_free(s);
    tt_sb_free(&b);
    remove_dir(dir);
}

/* The ring of a process that is gone is retired (its file removed, when
 * the directory is the collector's) once its complete records are read,
 * whether or not the process published its position (a process killed
 * before its exit handlers never does); one with a published record that
 * was never completed stays, and that record counts as unfinished. */
static void test_ring_retired_unpublished(void **state)
{
    char *dir = make_dir();
    uint8_t rec[512];
    size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 1, "one", 0);
    ring_writer w;
    ring_writer_open(&w, dir, 100, TT_PROBE_MIN_RING); /* killed: nothing published */
    w.lazy = true;
    ring_put(&w, rec, n, true);
    ring_put(&w, rec, n, true);
    ring_writer_close(&w);
    ring_writer_open(&w, dir, 101, TT_PROBE_MIN_RING); /* exited mid-record: published */
    ring_put(&w, rec, n, true);
    ring_put(&w, rec, n, false);
    ring_writer_close(&w);

    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, NULL, NULL, NULL, NULL, NULL, NULL);
    char err[256];
    assert_int_equal(tt_probe_source_open_dir(s, dir, true, err, sizeof err), 0);
    assert_int_equal(tt_probe_source_poll(s), 3);
    char path[600];
    snprintf(path, sizeof path, "%s/ring.100.123", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/ring.101.123", dir);
    assert_int_equal(access(path, F_OK), 0);
    tt_probe_source_finish(s);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.records, 3);
    assert_int_equal(st.unfinished_bytes, n);
    assert_int_equal(st.bad_rings, 0);
    tt_probe_source_free(s);
    tt_sb_free(&b);
    remove_dir(dir);
}

/* The producer's cursor is its own: the header's published_pos moves only
 * when a reservation crosses a multiple of TT_PROBE_PUBLISH_BYTES, never
 * back, and exactly at the exit's tt_producer_publish_all; the collector
 * reads the records either way. */
static void test_producer_publishes_lazily(void **state)
{
    char *dir = make_dir();
    ring_writer w;
    ring_writer_open(&w, dir, (uint32_t)getpid(), 4 * TT_PROBE_MIN_RING);
    struct tt_probe_ring *h = (struct tt_probe_ring *)w.map;
    tt_probe_producer p;
    memset(&p, 0, sizeof p);
    tt_producer_attach(&p, h, w.map + TT_PROBE_HEADER_SIZE, w.cap);
    tt_producer_publish(&p);
    assert_int_equal(p.commit_key, WRITER_KEY);

    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, NULL, NULL, NULL, NULL, NULL, NULL);
    char err[256];
    assert_int_equal(tt_probe_source_open_dir(s, dir, false, err, sizeof err), 0);
    static uint8_t rec[2048];
    static char data[1024 - sizeof(struct tt_probe_rec) + 1];
    memset(data, 'd', sizeof data - 1);
    size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_SEND, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 1, data, 0);
    assert_int_equal(n, 1024);
    assert_int_equal(TT_PROBE_PUBLISH_BYTES % n, 0);
    size_t per_step = TT_PROBE_PUBLISH_BYTES / n;
    for (size_t i = 0; i < per_step + 10; i++) {
        struct tt_probe_rec *r = NULL;
        uint64_t pos = tt_producer_reserve(&p, (uint32_t)n, &r);
        assert_int_equal(pos, i * n);
        assert_non_null(r);
        memcpy((uint8_t *)r + sizeof r->commit, rec + sizeof r->commit, n - sizeof r->commit);
        tt_producer_commit(&p, r, pos);
        if (i + 1 < per_step) assert_int_equal(h->published_pos, 0); /* the header left alone */
        else assert_int_equal(h->published_pos, TT_PROBE_PUBLISH_BYTES);
        if (i + 2 == per_step) assert_int_equal(tt_probe_source_poll(s), per_step - 1);
    }
    assert_int_equal(tt_probe_source_poll(s), 11);
    tt_producer_publish_pos(&p, 100); /* never back */
    assert_int_equal(h->published_pos, TT_PROBE_PUBLISH_BYTES);
    tt_producer_publish_all(&p);
    assert_int_equal(h->published_pos, (per_step + 10) * n);
    assert_int_equal(p.reserved, (per_step + 10) * n);
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.records, per_step + 10);
    assert_int_equal(st.bad_records, 0);
    ring_writer_close(&w);
    tt_probe_source_free(s);
    tt_sb_free(&b);
    remove_dir(dir);
}

static void test_open_dir_errors(void **state)
{
    tt_probe_source *s = tt_probe_source_new(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    char err[256];
    assert_int_equal(tt_probe_source_open_dir(s, "/nonexistent/tokentap", false, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/tokentap"));
    assert_int_equal(tt_probe_source_poll(s), 0);
    tt_probe_source_free(s);
    tt_probe_source_free(NULL);
}

/* New ring files are looked for at most every 20 ms (a look is four system
 * calls): a ring made after a poll is found by a poll 20 ms later, and by
 * the last drain (finish) whenever it came. */
static void test_new_rings_found_later(void **state)
{
    (void)state;
    char *dir = make_dir();
    tt_strbuf b = {0};
    tt_probe_source *s = tt_probe_source_new(trace_chunk, &b, NULL, NULL, NULL, NULL, NULL, NULL);
    char err[256];
    assert_int_equal(tt_probe_source_open_dir(s, dir, false, err, sizeof err), 0);
    assert_int_equal(tt_probe_source_poll(s), 0); /* looks: nothing there yet */
    static uint8_t rec[512];
    size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, TT_PROBE_DIR_RECV, TT_PROBE_ROLE_CLIENT, 0, 5, 9, 1, "abc", 0);
    ring_writer w1, w2;
    ring_writer_open(&w1, dir, (uint32_t)getpid(), TT_PROBE_MIN_RING);
    ring_put(&w1, rec, n, true);
    struct timespec wait = {0, 25 * 1000 * 1000};
    nanosleep(&wait, NULL);
    assert_int_equal(tt_probe_source_poll(s), 1); /* 20 ms on: looked again */
    ring_writer_open(&w2, dir, (uint32_t)getpid() + 1, TT_PROBE_MIN_RING);
    ring_put(&w2, rec, n, true);
    tt_probe_source_finish(s); /* the last drain looks whatever the time */
    tt_probe_stats st;
    tt_probe_source_stats(s, &st);
    assert_int_equal(st.records, 2);
    assert_int_equal(st.rings, 2);
    ring_writer_close(&w1);
    ring_writer_close(&w2);
    tt_probe_source_free(s);
    tt_sb_free(&b);
    remove_dir(dir);
}

/* A deferring source (tt_probe_source_defer) leaves a ring under a quarter
 * full alone while its process lives, takes every record out of one a
 * quarter full without delivering any, and delivers them at finish: the
 * same chunks, in the same order, as a source delivering at once. Held
 * records past max_bytes are delivered before more are held; a ring whose
 * process is gone is taken whatever its fill. */
static void put_records(ring_writer *w, int first, int count)
{
    static uint8_t rec[512];
    for (int i = first; i < first + count; i++) {
        char data[300];
        memset(data, 'a' + i % 26, 200);
        snprintf(data + 200, sizeof data - 200, "#%d", i);
        size_t n = probe_rec(rec, TT_PROBE_KIND_DATA, i % 3 ? TT_PROBE_DIR_RECV : TT_PROBE_DIR_SEND,
                            TT_PROBE_ROLE_CLIENT, 0, 5, 9, (uint64_t)i + 1, data, 0);
        ring_put(w, rec, n, true);
    }
}

/* Two sources over two rings of one live process, fed the same records:
 * `now` delivers at once, `later` defers with max_bytes. */
typedef struct defer_pair {
    char *dir_now, *dir_later;
    ring_writer now_w, later_w;
    tt_strbuf now_b, later_b;
    tt_probe_source *now, *later;
} defer_pair;

static void defer_pair_open(defer_pair *p, size_t max_bytes)
{
    memset(p, 0, sizeof *p);
    p->dir_now = make_dir();
    p->dir_later = make_dir();
    uint32_t alive = (uint32_t)getpid();
    ring_writer_open(&p->now_w, p->dir_now, alive, TT_PROBE_MIN_RING);
    ring_writer_open(&p->later_w, p->dir_later, alive, TT_PROBE_MIN_RING);
    p->now = tt_probe_source_new(trace_chunk, &p->now_b, NULL, NULL, NULL, NULL, NULL, NULL);
    p->later = tt_probe_source_new(trace_chunk, &p->later_b, NULL, NULL, NULL, NULL, NULL, NULL);
    char err[256];
    assert_int_equal(tt_probe_source_open_dir(p->now, p->dir_now, false, err, sizeof err), 0);
    assert_int_equal(tt_probe_source_open_dir(p->later, p->dir_later, false, err, sizeof err), 0);
    tt_probe_source_defer(p->later, max_bytes);
}

static void defer_pair_close(defer_pair *p)
{
    ring_writer_close(&p->now_w);
    ring_writer_close(&p->later_w);
    tt_probe_source_free(p->now);
    tt_probe_source_free(p->later);
    tt_sb_free(&p->now_b);
    tt_sb_free(&p->later_b);
    remove_dir(p->dir_now);
    remove_dir(p->dir_later);
}

static void test_deferred_delivery(void **state)
{
    (void)state;
    defer_pair p;
    defer_pair_open(&p, 1u << 20);
    uint32_t alive = (uint32_t)getpid();
    char err[256];
    struct tt_probe_ring *later_h = (struct tt_probe_ring *)p.later_w.map;

    put_records(&p.now_w, 0, 10); /* about 3 KiB: under a quarter of 64 KiB */
    put_records(&p.later_w, 0, 10);
    assert_int_equal(tt_probe_source_poll(p.now), 10);
    assert_int_equal(tt_probe_source_poll(p.later), 0);
    assert_int_equal(later_h->consumed_pos, 0);
    assert_null(p.later_b.s);
    assert_true(tt_probe_source_last_fill(p.later) > 0);

    put_records(&p.now_w, 10, 50); /* past a quarter */
    put_records(&p.later_w, 10, 50);
    assert_int_equal(tt_probe_source_poll(p.now), 50);
    assert_int_equal(tt_probe_source_poll(p.later), 60);
    assert_true(tt_probe_source_last_fill(p.later) >= 250);
    assert_int_equal(later_h->consumed_pos, p.later_w.pos); /* the space is handed back */
    assert_null(p.later_b.s);                               /* but nothing delivered yet */
    tt_probe_stats st;
    tt_probe_source_stats(p.later, &st);
    assert_int_equal(st.records, 0);

    put_records(&p.now_w, 60, 5);
    put_records(&p.later_w, 60, 5);
    tt_probe_source_finish(p.now);
    tt_probe_source_finish(p.later);
    assert_non_null(p.later_b.s);
    assert_string_equal(p.later_b.s, p.now_b.s);
    tt_probe_source_stats(p.later, &st);
    assert_int_equal(st.records, 65);
    assert_int_equal(st.bad_records, 0);

    /* held past max_bytes: delivered before the finish */
    char *dir_cap = make_dir();
    ring_writer cap_w;
    ring_writer_open(&cap_w, dir_cap, alive, TT_PROBE_MIN_RING);
    tt_strbuf cap_b = {0};
    tt_probe_source *capped = tt_probe_source_new(trace_chunk, &cap_b, NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(tt_probe_source_open_dir(capped, dir_cap, false, err, sizeof err), 0);
    tt_probe_source_defer(capped, 4096);
    put_records(&cap_w, 0, 65);
    assert_int_equal(tt_probe_source_poll(capped), 65);
    tt_probe_source_stats(capped, &st);
    assert_true(st.records > 0 && st.records < 65);
    tt_probe_source_finish(capped);
    assert_string_equal(cap_b.s, p.now_b.s);

    /* a ring whose process is gone is taken under a quarter full */
    char *dir_gone = make_dir();
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) _exit(0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    ring_writer gone_w;
    ring_writer_open(&gone_w, dir_gone, (uint32_t)child, TT_PROBE_MIN_RING);
    tt_strbuf gone_b = {0};
    tt_probe_source *gone = tt_probe_source_new(trace_chunk, &gone_b, NULL, NULL, NULL, NULL, NULL, NULL);
    assert_int_equal(tt_probe_source_open_dir(gone, dir_gone, false, err, sizeof err), 0);
    tt_probe_source_defer(gone, 1u << 20);
    put_records(&gone_w, 0, 3);
    assert_int_equal(tt_probe_source_poll(gone), 3);
    assert_null(gone_b.s);
    tt_probe_source_finish(gone);
    assert_non_null(gone_b.s);

    defer_pair_close(&p);
    ring_writer_close(&cap_w);
    ring_writer_close(&gone_w);
    tt_probe_source_free(capped);
    tt_probe_source_free(gone);
    tt_sb_free(&cap_b);
    tt_sb_free(&gone_b);
    remove_dir(dir_cap);
    remove_dir(dir_gone);
}

/* Past max_bytes a deferring source delivers its oldest held block, not
 * every record it holds: the rest stay held (the rings are drained again
 * after a block's delivery, not after all of it), and the chunks at finish
 * are a source delivering at once's, in the same order. */
static void test_deferred_cap_releases_oldest_block(void **state)
{
    (void)state;
    defer_pair p;
    defer_pair_open(&p, 3u << 20); /* one and a half 2 MiB blocks */
    const int total = 12000, batch = 100; /* about 3.4 MB held: past the cap once */
    for (int i = 0; i < total; i += batch) {
        put_records(&p.now_w, i, batch);
        put_records(&p.later_w, i, batch);
        assert_int_equal(tt_probe_source_poll(p.now), batch);
        assert_int_equal(tt_probe_source_poll(p.later), batch);
    }
    tt_probe_stats st;
    tt_probe_source_stats(p.later, &st);
    /* a record is held in about 280 bytes: one 2 MiB block went out, and
     * over 1 MiB is still held (delivering all at the cap leaves < 0.4) */
    assert_true(st.records > 0);
    assert_true(st.records <= (uint64_t)total - (1u << 20) / 280);
    tt_probe_source_finish(p.now);
    tt_probe_source_finish(p.later);
    assert_non_null(p.later_b.s);
    assert_string_equal(p.later_b.s, p.now_b.s);
    tt_probe_source_stats(p.later, &st);
    assert_int_equal(st.records, total);
    defer_pair_close(&p);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_wraps),
        cmocka_unit_test(test_ring_unfinished_and_damaged),
        cmocka_unit_test(test_producer_drop_accounting),
        cmocka_unit_test(test_ring_found_by_commit_words),
        cmocka_unit_test(test_ring_retired_unpublished),
        cmocka_unit_test(test_producer_publishes_lazily),
        cmocka_unit_test(test_open_dir_errors),
        cmocka_unit_test(test_new_rings_found_later),
        cmocka_unit_test(test_deferred_delivery),
        cmocka_unit_test(test_deferred_cap_releases_oldest_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
