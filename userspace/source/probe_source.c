/* probe_source.c - probe ring files -> tt_chunk (see probe_source.h). */
#include "source/probe_source.h"

#include "clocks/tsc_clock.h"
#include "source/chunk_conn.h"
#include "source/probe_hold.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../probe/probe_abi.h"

#define CONN_BUCKETS 1024u
#define CONN_MAX_FDS 4
/* The probe makes its ring file sparse: the collector allocates its pages
 * ahead of the producers, so that the traced program's first writes into
 * them cost a minor fault instead of a page allocation. */
#define ALLOC_AHEAD (2u << 20)
#define ALLOC_STEP (1u << 20)
#define HUGE_PAGE_BYTES (2u << 20)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

typedef struct probe_conn {
    tt_chunk_conn cc;
    uint32_t pid;
    uint64_t sock_id;
    uint8_t layer;
    int32_t fds[CONN_MAX_FDS]; /* fds seen naming the socket; -1 free */
    bool fds_overflow;         /* more fds than kept: closes never end it */
    struct probe_conn *next;
} probe_conn;

typedef struct probe_ring {
    char path[4096];
    uint32_t pid;
    uint8_t *map;
    size_t map_len;
    bool writable;
    int fd;             /* kept to allocate the ring's pages ahead of the producers; -1 when read-only */
    uint64_t allocated; /* ring bytes allocated so far (the producers' first lap) */
    bool huge_pages;    /* its file is on a tmpfs with huge pages (st_blksize 2 MiB or more) */
    uint64_t capacity, tail;
    uint64_t commit_key; /* the header's: a complete record's commit is (position + 1) ^ commit_key */
    bool broken, done;
    struct probe_ring *next;
} probe_ring;

typedef struct seen_pid {
    uint32_t pid;
    struct seen_pid *next;
} seen_pid;

struct tt_probe_source {
    tt_chunk_sinks sinks;
    probe_conn *buckets[CONN_BUCKETS];
    tt_probe_stats st;
    char dir[4096];
    bool have_dir, remove_done, finished;
    probe_ring *rings;
    seen_pid *pids;
    uint64_t done_drop_records, done_drop_bytes, done_untracked; /* counters of unmapped rings */
    unsigned last_fill_permille; /* the fullest ring at the last poll, in thousandths */
    uint64_t last_scan_ns;       /* CLOCK_MONOTONIC_COARSE of the last look for new ring files; 0: none yet */
    tt_probe_hold hold;          /* tt_probe_source_defer: records held (max_bytes 0: delivered at once) */
    bool drain_all;              /* finish: every ring drained, whatever its fill */
    tt_tsc_clock *tsc;           /* TT_PROBE_F_TSC records' ticks to ns (tt_probe_source_use_tsc); NULL: none */
};

/* A held record's delivery (probe_hold.h). */
static void deliver_held(void *ctx, uint32_t pid, const void *rec, size_t len)
{
    tt_probe_source_feed(ctx, pid, rec, len);
}

tt_probe_source *tt_probe_source_new(tt_chunk_fn on_client, void *client_ctx, tt_chunk_fn on_server,
                                     void *server_ctx, tt_chunk_fn on_client_tls, void *client_tls_ctx,
                                     tt_chunk_fn on_server_tls, void *server_tls_ctx)
{
    tt_probe_source *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    tt_chunk_sinks_route(&s->sinks, TT_VANTAGE_CLIENT, on_client, client_ctx);
    tt_chunk_sinks_route(&s->sinks, TT_VANTAGE_SERVER, on_server, server_ctx);
    tt_chunk_sinks_route(&s->sinks, TT_VANTAGE_CLIENT_TLS, on_client_tls, client_tls_ctx);
    tt_chunk_sinks_route(&s->sinks, TT_VANTAGE_SERVER_TLS, on_server_tls, server_tls_ctx);
    tt_probe_hold_init(&s->hold, deliver_held, s);
    return s;
}

void tt_probe_source_defer(tt_probe_source *s, size_t max_bytes)
{
    if (!max_bytes) tt_probe_hold_release(&s->hold);
    s->hold.max_bytes = max_bytes;
}

/* ---- records -> chunks ---- */

static unsigned conn_bucket(uint32_t pid, uint64_t sock_id, uint8_t layer)
{
    uint64_t h = (sock_id * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)pid << 1 | layer) * 0xC2B2AE3D27D4EB4Full;
    return (unsigned)(h >> 40) % CONN_BUCKETS;
}

/* The instant of a record's bytes: a send's entry (the program handed the
 * bytes over; eBPF stamps writes the same way), else the call's return. */
static uint64_t rec_instant(const struct tt_probe_rec *r)
{
    return r->dir == TT_PROBE_DIR_SEND && r->enter_ns ? r->enter_ns : r->ts_ns;
}

static void note_pid(tt_probe_source *s, uint32_t pid)
{
    for (seen_pid *p = s->pids; p; p = p->next)
        if (p->pid == pid) return;
    seen_pid *p = malloc(sizeof *p);
    if (!p) return;
    p->pid = pid;
    p->next = s->pids;
    s->pids = p;
    s->st.processes++;
}

static probe_conn *conn_find(tt_probe_source *s, uint32_t pid, uint64_t sock_id, uint8_t layer, probe_conn ***link)
{
    unsigned b = conn_bucket(pid, sock_id, layer);
    for (probe_conn **pp = &s->buckets[b]; *pp; pp = &(*pp)->next) {
        probe_conn *c = *pp;
        if (c->pid == pid && c->sock_id == sock_id && c->layer == layer) {
            if (link) *link = pp;
            return c;
        }
    }
    return NULL;
}

static void conn_add_fd(probe_conn *c, int32_t fd)
{
    int free_at = -1;
    for (int i = 0; i < CONN_MAX_FDS; i++) {
        if (c->fds[i] == fd) return;
        if (c->fds[i] < 0 && free_at < 0) free_at = i;
    }
    if (free_at >= 0) c->fds[free_at] = fd;
    else c->fds_overflow = true;
}

/* The connection a data record belongs to, made on first sight. */
static probe_conn *conn_for(tt_probe_source *s, uint32_t pid, const struct tt_probe_rec *r)
{
    probe_conn *c = conn_find(s, pid, r->sock_id, r->layer, NULL);
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c) return NULL;
        c->pid = pid;
        c->sock_id = r->sock_id;
        c->layer = r->layer;
        for (int i = 0; i < CONN_MAX_FDS; i++) c->fds[i] = -1;
        c->cc.tls = r->layer == TT_PROBE_LAYER_TLS;
        bool guessed = r->role == TT_PROBE_ROLE_UNKNOWN;
        bool local_is_server = guessed ? r->dir == TT_PROBE_DIR_RECV : r->role == TT_PROBE_ROLE_SERVER;
        bool v6 = (r->flags & TT_PROBE_F_IPV6) != 0;
        tt_endpoint local, remote;
        tt_chunk_endpoint_from(&local, r->laddr, r->lport, v6);
        tt_chunk_endpoint_from(&remote, r->raddr, r->rport, v6);
        tt_chunk_conn_orient(&c->cc, &local, &remote, local_is_server, guessed);
        c->cc.info.conn_id = tt_chunk_sinks_next_conn_id(&s->sinks);
        c->cc.info.first_seen_ns = rec_instant(r);
        unsigned b = conn_bucket(pid, r->sock_id, r->layer);
        c->next = s->buckets[b];
        s->buckets[b] = c;
        s->st.connections++;
        note_pid(s, pid);
    }
    conn_add_fd(c, r->fd);
    if (r->ts_ns > c->cc.last_ns) c->cc.last_ns = r->ts_ns;
    return c;
}

static tt_direction conn_dir(const probe_conn *c, uint8_t probe_dir)
{
    return probe_dir == TT_PROBE_DIR_SEND ? tt_chunk_conn_send_dir(&c->cc) : tt_chunk_conn_recv_dir(&c->cc);
}

static void emit_lost(tt_probe_source *s, probe_conn *c, const struct tt_probe_rec *r)
{
    for (uint8_t d = 0; d < 2; d++)
        if (r->lost[d] && !c->cc.ended[conn_dir(c, d)])
            tt_chunk_conn_emit(&s->sinks, &c->cc, conn_dir(c, d), TT_CHUNK_GAP, rec_instant(r), NULL, r->lost[d]);
}

/* The peer's bytes ended (a read returned 0, or close_notify at the TLS
 * layer): that direction of this layer's connection ends cleanly. */
static void feed_eof(tt_probe_source *s, uint32_t pid, const struct tt_probe_rec *r)
{
    probe_conn *c = conn_find(s, pid, r->sock_id, r->layer, NULL);
    if (!c) return;
    emit_lost(s, c, r);
    if (r->ts_ns > c->cc.last_ns) c->cc.last_ns = r->ts_ns;
    tt_chunk_conn_fin(&s->sinks, &c->cc, conn_dir(c, TT_PROBE_DIR_RECV), c->cc.last_ns);
}

/* close(fd): the fd leaves each layer's connection of that socket; the
 * connection ends with its last fd: the local end's sending direction
 * cleanly (closing sends FIN), the other cut off unless an EOF ended it. */
static void feed_close(tt_probe_source *s, uint32_t pid, const struct tt_probe_rec *r)
{
    for (uint8_t layer = 0; layer < 2; layer++) {
        probe_conn **link;
        probe_conn *c = conn_find(s, pid, r->sock_id, layer, &link);
        if (!c) continue;
        if (layer == r->layer) emit_lost(s, c, r);
        bool left = c->fds_overflow;
        for (int i = 0; i < CONN_MAX_FDS; i++) {
            if (c->fds[i] == r->fd) c->fds[i] = -1;
            else if (c->fds[i] >= 0) left = true;
        }
        if (left) continue;
        *link = c->next;
        s->st.closes++;
        uint64_t ns = r->ts_ns > c->cc.last_ns ? r->ts_ns : c->cc.last_ns;
        tt_chunk_conn_fin(&s->sinks, &c->cc, conn_dir(c, TT_PROBE_DIR_SEND), ns);
        tt_chunk_conn_end(&s->sinks, &c->cc, ns);
        free(c);
    }
}

int tt_probe_source_feed(tt_probe_source *s, uint32_t pid, const void *rec, size_t len)
{
    struct tt_probe_rec r;
    if (len < sizeof r) {
        s->st.bad_records++;
        return -1;
    }
    memcpy(&r, rec, sizeof r);
    const uint8_t *data = (const uint8_t *)rec + sizeof r;
    bool data_kind = r.kind == TT_PROBE_KIND_DATA;
    if (r.kind >= TT_PROBE_KIND_COUNT || r.dir > TT_PROBE_DIR_RECV || r.layer > TT_PROBE_LAYER_TLS ||
        r.role > TT_PROBE_ROLE_SERVER || r.len > len - sizeof r || r.len > r.total_len ||
        (!data_kind && (r.len || r.total_len)) || r.lost[0] > UINT32_MAX * 64ull || r.lost[1] > UINT32_MAX * 64ull ||
        (data_kind && r.total_len == 0) || (data_kind && r.len < r.total_len && !(r.flags & TT_PROBE_F_TRUNCATED)) ||
        (r.enter_ns && (!data_kind || r.dir != TT_PROBE_DIR_SEND || r.enter_ns > r.ts_ns)) ||
        (r.kind == TT_PROBE_KIND_EOF && r.dir != TT_PROBE_DIR_RECV)) {
        s->st.bad_records++;
        return -1;
    }
    /* ticks: as CLOCK_MONOTONIC, or refused without a converter (a PAD's
     * head is not written whole: its flags may be an older record's) */
    if ((r.flags & TT_PROBE_F_TSC) && r.kind != TT_PROBE_KIND_PAD) {
        if (!s->tsc) {
            s->st.bad_records++;
            return -1;
        }
        tt_tsc_clock_cover(s->tsc, r.ts_ns); /* ts_ns >= enter_ns */
        r.ts_ns = tt_tsc_clock_to_mono(s->tsc, r.ts_ns);
        if (r.enter_ns) r.enter_ns = tt_tsc_clock_to_mono(s->tsc, r.enter_ns);
    }
    s->st.records++;
    if (r.kind == TT_PROBE_KIND_PAD) return 0;
    if (r.kind == TT_PROBE_KIND_CLOSE) {
        feed_close(s, pid, &r);
        return 0;
    }
    if (r.kind == TT_PROBE_KIND_EOF) {
        feed_eof(s, pid, &r);
        return 0;
    }
    if (!data_kind) return 0; /* CONNECT/ACCEPT: the role rides on every data record */
    probe_conn *c = conn_for(s, pid, &r);
    if (!c) return -1;
    tt_direction dir = conn_dir(c, r.dir);
    if (c->cc.ended[dir]) { /* bytes after that direction's end of file: the record contradicts the stream */
        s->st.records--;
        s->st.bad_records++;
        return -1;
    }
    emit_lost(s, c, &r);
    uint64_t ns = rec_instant(&r);
    if (r.len) tt_chunk_conn_emit(&s->sinks, &c->cc, dir, TT_CHUNK_DATA, ns, data, r.len);
    if (r.total_len > r.len)
        tt_chunk_conn_emit(&s->sinks, &c->cc, dir, TT_CHUNK_GAP, ns, NULL, (size_t)r.total_len - r.len);
    return 0;
}

/* ---- ring files ---- */

static uint64_t load_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

/* Map a ring file; NULL when it is not (yet) a ring: a file whose magic
 * is still 0 is being created and is tried again at the next poll. */
static probe_ring *ring_open(tt_probe_source *s, const char *path, uint32_t pid, bool *retry)
{
    *retry = false;
    bool writable = true;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        writable = false;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)TT_PROBE_HEADER_SIZE) {
        *retry = st.st_size < (off_t)TT_PROBE_HEADER_SIZE && S_ISREG(st.st_mode);
        close(fd);
        return NULL;
    }
    size_t len = (size_t)st.st_size;
    void *map = mmap(NULL, len, writable ? PROT_READ | PROT_WRITE : PROT_READ, writable ? MAP_SHARED : MAP_PRIVATE,
                     fd, 0);
    if (map == MAP_FAILED || !writable) {
        close(fd);
        fd = -1;
    }
    if (map == MAP_FAILED) return NULL;
    struct tt_probe_ring *h = map;
    uint64_t magic = load_u64(&h->magic);
    uint64_t cap = h->capacity;
    if (magic == 0) {
        munmap(map, len);
        if (fd >= 0) close(fd);
        *retry = true;
        return NULL;
    }
    if (magic != TT_PROBE_MAGIC || h->version != TT_PROBE_VERSION || h->header_size != TT_PROBE_HEADER_SIZE ||
        cap < TT_PROBE_MIN_RING || cap > TT_PROBE_MAX_RING || (cap & (cap - 1)) != 0 ||
        len < TT_PROBE_HEADER_SIZE + cap || h->pid != pid) {
        munmap(map, len);
        if (fd >= 0) close(fd);
        s->st.bad_rings++;
        return NULL;
    }
    probe_ring *r = calloc(1, sizeof *r);
    if (!r) {
        munmap(map, len);
        if (fd >= 0) close(fd);
        return NULL;
    }
    r->fd = fd;
    r->huge_pages = st.st_blksize >= HUGE_PAGE_BYTES;
    snprintf(r->path, sizeof r->path, "%s", path);
    r->pid = pid;
    r->map = map;
    r->map_len = len;
    r->writable = writable;
    r->capacity = cap;
    r->commit_key = load_u64(&h->commit_key);
    r->tail = load_u64(&h->consumed_pos);
    if (r->tail % 8) { /* records start on 8-byte boundaries: a damaged header */
        r->broken = true;
        s->st.bad_rings++;
    }
    s->st.rings++;
    return r;
}

/* Allocate the ring's pages up to ALLOC_AHEAD past the producers. On a
 * tmpfs fallocate only reserves a page: it is zeroed at its first fault,
 * in the producer (a 2 MiB page: hundreds of microseconds in the middle
 * of one of its calls), so a huge page is also faulted in here, read-only
 * (MADV_POPULATE_READ, Linux 5.14: the contents are not touched, so it is
 * safe beside the producers), and zeroed on this thread. */
static void ring_allocate_ahead(probe_ring *r, uint64_t head)
{
    if (r->fd < 0 || r->allocated >= r->capacity) return;
    uint64_t want = head + ALLOC_AHEAD < r->capacity ? head + ALLOC_AHEAD : r->capacity;
    while (r->allocated < want) {
        uint64_t step = r->capacity - r->allocated < ALLOC_STEP ? r->capacity - r->allocated : ALLOC_STEP;
        off_t at = (off_t)(TT_PROBE_HEADER_SIZE + r->allocated);
        if (fallocate(r->fd, 0, at, (off_t)step) != 0) {
            r->allocated = r->capacity; /* not supported here: the producers fault pages in themselves */
            break;
        }
        if (r->huge_pages) (void)madvise(r->map + at, (size_t)step, MADV_POPULATE_READ);
        r->allocated += step;
    }
}

/* Whether the record at absolute position pos of ring r is complete. */
static bool ring_committed(const probe_ring *r, uint64_t pos)
{
    const struct tt_probe_rec *rec =
        (const struct tt_probe_rec *)(r->map + TT_PROBE_HEADER_SIZE + (pos & (r->capacity - 1)));
    return load_u64(&rec->commit) == ((pos + 1) ^ r->commit_key);
}

/* The bytes the producers published as reserved beyond the collector's
 * tail (probe_abi.h: published_pos lags the producers by up to
 * TT_PROBE_PUBLISH_BYTES and a record, and the tail may pass it); more
 * than the ring holds when the header contradicts itself. */
static uint64_t ring_waiting(const probe_ring *r)
{
    uint64_t published = load_u64(&((const struct tt_probe_ring *)r->map)->published_pos);
    return published > r->tail ? published - r->tail : 0;
}

/* Deliver the complete records of ring r in order, at most a ring's worth
 * in one call; *fill_permille is raised to the part of the ring (in
 * thousandths) the producers had published as waiting. */
static size_t ring_drain(tt_probe_source *s, probe_ring *r, unsigned *fill_permille)
{
    if (r->broken || r->done) return 0;
    struct tt_probe_ring *h = (struct tt_probe_ring *)r->map;
    const uint8_t *data = r->map + TT_PROBE_HEADER_SIZE;
    uint64_t mask = r->capacity - 1;
    size_t handled = 0;
    uint64_t waiting = ring_waiting(r);
    if (waiting > r->capacity) r->broken = true;
    else if (waiting * 1000 / r->capacity > *fill_permille) *fill_permille = (unsigned)(waiting * 1000 / r->capacity);
    ring_allocate_ahead(r, r->tail + waiting);
    /* Records are found by their commit words, not by the producers'
     * position (which they publish lazily); our position is stored once
     * per batch: the shared line moves between cores once, not once per
     * record. */
    uint64_t stop = r->tail + r->capacity;
    while (!r->broken && r->tail < stop) {
        uint64_t off = r->tail & mask, room = r->capacity - off;
        if (room < TT_PROBE_REC_MIN) {
            /* the implicit skip: taken once the record after it is complete */
            if (!ring_committed(r, r->tail + room)) break;
            r->tail += room;
            continue;
        }
        const struct tt_probe_rec *rec = (const struct tt_probe_rec *)(data + off);
        if (!ring_committed(r, r->tail)) break; /* not reserved, or not yet complete */
        uint32_t size = __atomic_load_n(&rec->size, __ATOMIC_RELAXED);
        if (size < TT_PROBE_REC_MIN || size % 8 || size > room) {
            r->broken = true;
            break;
        }
        if (__atomic_load_n(&rec->kind, __ATOMIC_RELAXED) != TT_PROBE_KIND_PAD) {
            if (s->hold.max_bytes) {
                tt_probe_hold_put(&s->hold, r->pid, rec, size);
                handled++;
            } else if (tt_probe_source_feed(s, r->pid, rec, size) == 0) {
                handled++;
            }
        }
        r->tail += size;
        if (handled % 256 == 255 && r->writable) __atomic_store_n(&h->consumed_pos, r->tail, __ATOMIC_RELEASE);
    }
    if (r->writable) __atomic_store_n(&h->consumed_pos, r->tail, __ATOMIC_RELEASE);
    if (r->broken) s->st.bad_rings++;
    return handled;
}

static void ring_counters(const probe_ring *r, uint64_t *drops, uint64_t *drop_bytes, uint64_t *untracked)
{
    const struct tt_probe_ring *h = (const struct tt_probe_ring *)r->map;
    *drops += load_u64(&h->drop_records);
    *drop_bytes += load_u64(&h->drop_bytes);
    *untracked += load_u64(&h->untracked_fds);
}

/* A drained ring whose process is gone is unmapped (and deleted when the
 * directory is ours). The process is found gone first, and the ring read
 * once more after that: a record it completed just before it went (after
 * this poll's drain) is still delivered. */
static void ring_retire_if_done(tt_probe_source *s, probe_ring *r)
{
    if (r->done || r->broken) return;
    if (ring_waiting(r) || ring_committed(r, r->tail)) return;
    if (kill((pid_t)r->pid, 0) == 0 || errno != ESRCH) return;
    unsigned fill = 0;
    ring_drain(s, r, &fill);
    /* a record reserved and never completed keeps the ring, counted as
     * unfinished at the end (seen where the process published it: at its
     * exit handlers, or in an earlier crossing) */
    if (r->broken || ring_waiting(r)) return;
    ring_counters(r, &s->done_drop_records, &s->done_drop_bytes, &s->done_untracked);
    munmap(r->map, r->map_len);
    r->map = NULL;
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    r->done = true;
    if (s->remove_done) unlink(r->path);
}

static bool ring_known(const tt_probe_source *s, const char *path)
{
    for (const probe_ring *r = s->rings; r; r = r->next)
        if (!strcmp(r->path, path)) return true;
    return false;
}

/* "ring.<pid>.<digits>" -> pid */
static bool ring_name(const char *name, uint32_t *pid)
{
    if (strncmp(name, "ring.", 5) != 0) return false;
    const char *p = name + 5;
    uint64_t v = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++) v = v * 10 + (uint64_t)(*p - '0');
    if (!digits || *p != '.' || v == 0 || v > 0x7fffffff) return false;
    for (p++, digits = 0; *p >= '0' && *p <= '9'; p++) digits++;
    if (!digits || *p) return false;
    *pid = (uint32_t)v;
    return true;
}

static void scan_dir(tt_probe_source *s)
{
    DIR *d = opendir(s->dir);
    if (!d) return;
    struct dirent *e;
    probe_ring **tail = &s->rings;
    while (*tail) tail = &(*tail)->next;
    while ((e = readdir(d)) != NULL) {
        uint32_t pid;
        if (!ring_name(e->d_name, &pid)) continue;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name) >= sizeof path) continue;
        if (ring_known(s, path)) continue;
        bool retry;
        probe_ring *r = ring_open(s, path, pid, &retry);
        if (!r && retry) continue;
        if (!r) {
            /* remember a refused file so it is not tried again */
            r = calloc(1, sizeof *r);
            if (!r) continue;
            snprintf(r->path, sizeof r->path, "%s", path);
            r->fd = -1;
            r->broken = true;
        }
        *tail = r;
        tail = &r->next;
    }
    closedir(d);
}

int tt_probe_source_open_dir(tt_probe_source *s, const char *dir, bool remove_done, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: %s", dir, errno ? strerror(errno) : "not a directory");
        return -1;
    }
    if (strlen(dir) >= sizeof s->dir - 64) {
        snprintf(err, errlen, "%s: path too long", dir);
        return -1;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->have_dir = true;
    s->remove_done = remove_done;
    return 0;
}

/* New ring files are looked for at most this often: a look is an opendir,
 * readdir and closedir (four system calls, several microseconds here),
 * and a new process's ring keeps its records meanwhile. */
#define SCAN_EVERY_NS (20ull * 1000 * 1000)

static uint64_t coarse_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Deferring, ring r is left as it is unless it is a quarter full or its
 * process is gone (its pages are still allocated ahead of the producers);
 * *fill_permille is raised to its fill either way. */
static bool ring_left_for_later(tt_probe_source *s, probe_ring *r, unsigned *fill_permille)
{
    if (!s->hold.max_bytes || s->drain_all || r->broken || r->done) return false;
    uint64_t waiting = ring_waiting(r);
    /* also a position beyond the ring: ring_drain judges that */
    if (waiting >= r->capacity * TT_PROBE_SOURCE_PRESSING_PERMILLE / 1000) return false;
    unsigned fill = (unsigned)(waiting * 1000 / r->capacity);
    if (fill > *fill_permille) *fill_permille = fill;
    if (kill((pid_t)r->pid, 0) != 0 && errno == ESRCH) return false;
    ring_allocate_ahead(r, r->tail + waiting);
    return true;
}

size_t tt_probe_source_poll(tt_probe_source *s)
{
    if (!s->have_dir || s->finished) return 0;
    if (s->tsc) tt_tsc_clock_sample(s->tsc); /* before the records it converts: most fall between two pairs */
    uint64_t now = coarse_now_ns();
    if (!s->last_scan_ns || now - s->last_scan_ns >= SCAN_EVERY_NS) {
        scan_dir(s);
        s->last_scan_ns = now ? now : 1;
    }
    size_t n = 0;
    unsigned fill = 0;
    for (probe_ring *r = s->rings; r; r = r->next) {
        if (ring_left_for_later(s, r, &fill)) continue;
        n += ring_drain(s, r, &fill);
        ring_retire_if_done(s, r);
    }
    s->last_fill_permille = fill;
    /* deferring, with a ring and none pressing: a spare block made ahead */
    if (fill < TT_PROBE_SOURCE_PRESSING_PERMILLE && !s->drain_all && s->rings) tt_probe_hold_spare_ahead(&s->hold);
    return n;
}

void tt_probe_source_finish(tt_probe_source *s)
{
    if (s->finished) return;
    s->last_scan_ns = 0; /* the last poll looks for every ring file */
    s->drain_all = true;
    tt_probe_source_poll(s);
    tt_probe_hold_free(&s->hold);
    for (probe_ring *r = s->rings; r; r = r->next) {
        if (r->done || r->broken || !r->map) continue;
        uint64_t waiting = ring_waiting(r);
        if (waiting <= r->capacity) s->st.unfinished_bytes += waiting;
    }
    s->finished = true;
    for (unsigned b = 0; b < CONN_BUCKETS; b++) {
        probe_conn *c = s->buckets[b];
        s->buckets[b] = NULL;
        while (c) {
            probe_conn *next = c->next;
            tt_chunk_conn_end(&s->sinks, &c->cc, c->cc.last_ns);
            free(c);
            c = next;
        }
    }
}

unsigned tt_probe_source_last_fill(const tt_probe_source *s)
{
    return s->last_fill_permille;
}

void tt_probe_source_stats(const tt_probe_source *s, tt_probe_stats *out)
{
    *out = s->st;
    out->data_bytes = s->sinks.data_bytes;
    out->gaps = s->sinks.gaps;
    out->gap_bytes = s->sinks.gap_bytes;
    out->drop_records = s->done_drop_records;
    out->drop_bytes = s->done_drop_bytes;
    out->untracked_fds = s->done_untracked;
    for (const probe_ring *r = s->rings; r; r = r->next)
        if (r->map) ring_counters(r, &out->drop_records, &out->drop_bytes, &out->untracked_fds);
}

void tt_probe_source_free(tt_probe_source *s)
{
    if (!s) return;
    tt_probe_source_finish(s);
    probe_ring *r = s->rings;
    while (r) {
        probe_ring *next = r->next;
        if (r->map) munmap(r->map, r->map_len);
        if (r->fd >= 0) close(r->fd);
        if (s->remove_done && !r->broken) unlink(r->path);
        free(r);
        r = next;
    }
    seen_pid *p = s->pids;
    while (p) {
        seen_pid *next = p->next;
        free(p);
        p = next;
    }
    tt_tsc_clock_free(s->tsc);
    free(s);
}

bool tt_probe_source_use_tsc(tt_probe_source *s)
{
    if (!s->tsc && tt_tsc_usable()) s->tsc = tt_tsc_clock_new(true);
    return s->tsc != NULL;
}
