/* probe_setup.c - part of libtokentap-probe.so (probe_internal.h): the
 * process's ring file (made at its first record, or its first TCP
 * socket()), and the process's set-up: the constructor that decides
 * whether this process records, and what fork and exit do to the ring. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe_internal.h"

/* The longest a thread waits for another to finish making the ring. */
#define RING_MAKING_WAIT_NS (50ull * 1000 * 1000)
/* The most bytes of a ring file prefaulted (ring_prefault): the default
 * ring whole; of a larger one, its start (the rest faults in at records). */
#define PREFAULT_MAX (TT_PROBE_HEADER_SIZE + (size_t)TT_PROBE_DEFAULT_RING)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* ---- the ring file ---- */

static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    while (n) *p++ = tmp[--n];
    return p;
}

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

/* Take one of the spare ring files the collector keeps (probe_abi.h) as
 * this process's, renamed to path: its descriptor, or -1 when there is
 * none left (other processes took them) or the one taken is not len bytes
 * long (then it is removed). The collector made it and zeroed its first
 * page, so the program does not wait for that (a huge page is 2 MiB).
 * Processes starting together try them in different orders (from their
 * pid's turn on), so they seldom rename the same one. */
static int ring_take_spare(const char *path, size_t len)
{
    char spare[sizeof ring_dir + sizeof TT_PROBE_SPARE_PREFIX + 8];
    size_t dl = strlen(ring_dir), pl = sizeof TT_PROBE_SPARE_PREFIX - 1;
    memcpy(spare, ring_dir, dl);
    spare[dl] = '/';
    memcpy(spare + dl + 1, TT_PROBE_SPARE_PREFIX, pl);
    char *digit = spare + dl + 1 + pl;
    digit[1] = 0;
    _Static_assert(TT_PROBE_SPARES <= 10, "one digit per spare");
    for (unsigned k = 0; k < TT_PROBE_SPARES; k++) {
        *digit = (char)('0' + ((unsigned)owner_pid + k) % TT_PROBE_SPARES);
        if (syscall(SYS_renameat2, AT_FDCWD, spare, AT_FDCWD, path, RENAME_NOREPLACE) != 0) continue;
        int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == len)
            return fd;
        if (fd >= 0) syscall(SYS_close, fd);
        syscall(SYS_unlinkat, AT_FDCWD, path, 0);
        return -1;
    }
    return -1;
}

#ifndef GRND_NONBLOCK
#define GRND_NONBLOCK 1
#endif

/* A commit key for a new ring (probe_abi.h): random where the kernel has
 * entropy at hand, else mixed from the clock, the pid and an address (a
 * peer cannot guess it either way; it only has to differ from what a
 * program's bytes hold). */
static uint64_t ring_commit_key(void)
{
    uint64_t key = 0;
    if (syscall(SYS_getrandom, &key, sizeof key, GRND_NONBLOCK) != (long)sizeof key || !key) {
        key = mono_ns() ^ ((uint64_t)owner_pid << 40) ^ (uint64_t)(uintptr_t)&key;
        key ^= key >> 31;
        key *= 0x9e3779b97f4a7c15ull;
        key ^= key >> 29;
    }
    return key;
}

/* Create (or take the spare of) and map this process's ring file. Only
 * system calls (it runs in a fork child too). Returns true when recording
 * can start. */
static bool ring_create(void)
{
    char path[sizeof ring_dir + 64];
    size_t dl = strlen(ring_dir);
    memcpy(path, ring_dir, dl);
    char *p = path + dl;
    memcpy(p, "/ring.", 6);
    p = put_u64(p + 6, (uint64_t)owner_pid);
    *p++ = '.';
    uint64_t created = mono_ns();
    p = put_u64(p, created);
    *p = 0;
    size_t len = TT_PROBE_HEADER_SIZE + ring_bytes;
    int fd = ring_take_spare(path, len);
    bool sized = fd >= 0;
    if (fd < 0) fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    void *map = MAP_FAILED;
    if (sized || syscall(SYS_ftruncate, fd, (off_t)len) == 0)
        map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    syscall(SYS_close, fd);
    if (map == MAP_FAILED) {
        syscall(SYS_unlinkat, AT_FDCWD, path, 0);
        return false;
    }
    struct tt_probe_ring *h = map;
    h->version = TT_PROBE_VERSION;
    h->header_size = TT_PROBE_HEADER_SIZE;
    h->capacity = ring_bytes;
    h->pid = (uint32_t)owner_pid;
    h->ppid = (uint32_t)getppid();
    h->created_mono_ns = created;
    h->commit_key = ring_commit_key();
    __atomic_store_n(&h->magic, TT_PROBE_MAGIC, __ATOMIC_RELEASE);
    tt_producer_attach(&producer, h, (uint8_t *)map + TT_PROBE_HEADER_SIZE, ring_bytes);
    ring_map_len = len;
    return true;
}

/* With TOKENTAP_PROBE_PREFAULT=1: the ring just made and published gets
 * its pages (up to PREFAULT_MAX bytes of them) allocated and mapped now
 * (MADV_POPULATE_WRITE, Linux 5.14; a kernel without it, or a populate that
 * fails, leaves the faults to the records as without it), and touched, so
 * that records take no page fault and the first lap costs what the later
 * ones do. The calling thread pays for it, once, inside the call that made
 * the ring (the process's first TCP socket(), typically: milliseconds,
 * docs/probe.md); other threads record meanwhile. Off by default: that
 * stall would land on the program's first request. */
static void ring_prefault(void)
{
    size_t len = ring_map_len, prefault = len < PREFAULT_MAX ? len : PREFAULT_MAX;
    uint8_t *map = (uint8_t *)producer.head;
    if (madvise(map, prefault, MADV_POPULATE_WRITE) != 0) return;
    /* One read per page as well: under a hypervisor that builds its page
     * tables lazily (shadow paging) the first access of each page from
     * this process still traps after the populate; elsewhere this is a TLB
     * miss per page. */
    for (size_t off = 0; off < prefault; off += 4096) (void)*(volatile const uint8_t *)(map + off);
}

/* Another thread is making the ring: wait for it, yielding the CPU, up to
 * RING_MAKING_WAIT_NS. Making it is a handful of system calls (tens of
 * microseconds, milliseconds on a loaded machine), and it happens once, at
 * the process's first TCP socket(): threads that open their first
 * connections together (a client pool starting its first requests) would
 * otherwise lose those connections' first records (their requests) to
 * early drops. The thread making the ring never gets here (in_probe).
 * True when the ring was made. */
static bool ring_wait_made(void)
{
    uint64_t deadline = 0;
    for (;;) {
        int state = __atomic_load_n(&producer.state, __ATOMIC_ACQUIRE);
        if (state != TT_PRODUCER_CREATING) return state == TT_PRODUCER_READY;
        uint64_t t = mono_ns();
        if (!deadline) deadline = t + RING_MAKING_WAIT_NS;
        else if (t > deadline) return false;
        syscall(SYS_sched_yield);
    }
}

/* This process's ring, made now when it is the first record: a process
 * that never records (a shell that execs, a fork child that execs) makes
 * none. While another thread is making it, waits for that (bounded, see
 * ring_wait_made). False when it could not be made, or took too long. */
bool ring_ready(void)
{
    int state = __atomic_load_n(&producer.state, __ATOMIC_ACQUIRE);
    if (LIKELY(state == TT_PRODUCER_READY)) return true;
    if (state == TT_PRODUCER_CREATING) return ring_wait_made();
    if (state != TT_PRODUCER_NONE) return false;
    if (!__atomic_compare_exchange_n(&producer.state, &state, TT_PRODUCER_CREATING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return false;
    in_probe++;
    bool ok = ring_create();
    if (ok) tt_producer_publish(&producer);
    else __atomic_store_n(&producer.state, TT_PRODUCER_FAILED, __ATOMIC_RELEASE);
    if (ok && prefault_ring) ring_prefault();
    in_probe--;
    return ok;
}

/* ---- set-up ---- */

static void on_fork_child(void)
{
    if (!probe_active) return;
    /* Not READY first: a signal handler running meanwhile must not touch
     * the parent's ring while it is unmapped. in_probe keeps such a handler
     * from recording at all (it would wait on itself in ring_wait_made). */
    in_probe++;
    int state = __atomic_exchange_n(&producer.state, TT_PRODUCER_CREATING, __ATOMIC_SEQ_CST);
    __atomic_store_n(&producer.early_drop_records, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&producer.early_drop_bytes, 0, __ATOMIC_SEQ_CST);
    if (state == TT_PRODUCER_READY) munmap(producer.head, ring_map_len);
    producer.head = NULL;
    producer.data = NULL;
    producer.seen_consumed = 0;
    producer.reserved = 0;
    owner_pid = getpid();
    size_t high = fd_high < fd_table_len ? fd_high + 1 : fd_table_len;
    for (size_t i = 0; i < high; i++) {
        fd_slot *slot = slot_at(i);
        if (slot->lost[0] | slot->lost[1]) {
            slot->lost[0] = 0;
            slot->lost[1] = 0;
        }
    }
    __atomic_store_n(&producer.state, TT_PRODUCER_NONE, __ATOMIC_RELEASE);
    in_probe--;
}

static void on_exit_mark(void)
{
    if (__atomic_load_n(&producer.state, __ATOMIC_ACQUIRE) == TT_PRODUCER_READY && getpid() == owner_pid) {
        tt_producer_publish_all(&producer);
        __atomic_store_n(&producer.head->exited, 1, __ATOMIC_RELEASE);
    }
}

/* Active only when TOKENTAP_PROBE_DIR names a directory `tokentap run`
 * made: owned by this user, mode 0700, with the marker file in it. */
__attribute__((constructor)) static void probe_init(void)
{
    bind_reals();
    const char *dir = getenv(TT_PROBE_DIR_ENV);
    if (!dir || !*dir || strlen(dir) >= sizeof ring_dir) return;
    in_probe++;
    struct stat st;
    char marker[sizeof ring_dir + sizeof TT_PROBE_MARKER + 2];
    snprintf(marker, sizeof marker, "%s/%s", dir, TT_PROBE_MARKER);
    bool ok = stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 0777) == 0700 &&
              stat(marker, &st) == 0 && S_ISREG(st.st_mode);
    if (ok) {
        strcpy(ring_dir, dir);
        ring_bytes = tt_probe_ring_bytes(getenv(TT_PROBE_RING_ENV));
        const char *pf = getenv(TT_PROBE_PREFAULT_ENV);
        prefault_ring = pf && strcmp(pf, "1") == 0;
#if defined(__x86_64__)
        const char *clock = getenv(TT_PROBE_CLOCK_ENV);
        stamp_tsc = clock && strcmp(clock, "tsc") == 0;
#endif
        struct rlimit rl;
        size_t n = 65536;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > n) n = rl.rlim_cur;
        if (n > FD_TABLE_MAX) n = FD_TABLE_MAX;
        void *t = mmap(NULL, n * sizeof(fd_slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t != MAP_FAILED) {
            fd_table = t;
            fd_table_len = n;
            owner_pid = getpid();
            pthread_atfork(NULL, NULL, on_fork_child);
            atexit(on_exit_mark);
            __atomic_store_n(&probe_active, true, __ATOMIC_RELEASE);
        }
    }
    in_probe--;
}
