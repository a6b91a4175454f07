/* ttprobe_bench - the probe's added cost per intercepted call, paired in
 * one process (tests/bench/probe.sh).
 *
 *   ttprobe_bench BLOCKS ITERS [WARMUP]
 * A loopback TCP pair; each iteration writes 64 bytes on one end and reads
 * them on the other. Blocks alternate between the libc calls (wrapped by
 * the probe when it is preloaded) and the same system calls made directly
 * with syscall(2) (never wrapped), so both see the same kernel, cache and
 * load. Per block, the thread's CPU time per call (CLOCK_THREAD_CPUTIME_ID:
 * time other processes took from it, the collector's included, does not
 * count, the page faults it took do) and its wall time.
 *
 * Two phases, both paired: when the probe is recording (this process's
 * ring file is found in $TOKENTAP_PROBE_DIR), the first lap: blocks until
 * the records have filled the ring once, every page of it touched by this
 * process for the first time (a page fault per 4 KiB). Then WARMUP write+
 * read pairs, not measured, and the steady state: BLOCKS blocks, the ring's
 * pages already mapped. Prints the medians over blocks and their
 * differences:
 * "wrapped_ns=W direct_ns=D added_ns=A wall_added_ns=B calls=N
 *  clock_after_call_ns=C tsc_after_call_ns=T
 *  first_lap_added_ns=F first_lap_wall_added_ns=G first_lap_blocks=K
 *  first_lap_faults=P steady_faults=Q first_socket_ns=S"
 * C is a floor under any recorder's cost: in the steady state a third
 * kind of block, the direct calls each followed by a read of
 * CLOCK_MONOTONIC (as a recorder stamps them), against the direct calls
 * alone; T the same with a read of the time-stamp counter (as the probe
 * stamps them under run where the TSC is usable).
 * (added_ns is the steady state; F, G and K are "na" without a ring; P and
 * Q are the thread's minor page faults in each phase; S is the wall time of
 * the process's first socket(), in which the probe makes its ring, and
 * prefaults it with TOKENTAP_PROBE_PREFAULT=1). */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../probe/probe_abi.h"

static uint64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* This process's ring header, mapped read-only, or NULL without one. */
static const struct tt_probe_ring *find_own_ring(void)
{
    const char *dir = getenv(TT_PROBE_DIR_ENV);
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) return NULL;
    char prefix[64], path[4096];
    snprintf(prefix, sizeof prefix, "ring.%d.", (int)getpid());
    const struct tt_probe_ring *ring = NULL;
    struct dirent *e;
    while (!ring && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        void *map = mmap(NULL, TT_PROBE_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        if (map != MAP_FAILED) ring = map;
    }
    closedir(d);
    return ring;
}

enum { ARM_WRAPPED, ARM_DIRECT, ARM_DIRECT_CLOCK, ARM_DIRECT_TSC, ARMS };

typedef struct samples {
    double *cpu[ARMS], *wall[ARMS];
    int n[ARMS];
} samples;

/* The time-stamp counter (the probe's stamp under run where it is
 * usable); 0 on other CPUs. */
static uint64_t tsc_now(void)
{
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    return 0;
#endif
}

/* One block of iters write+read pairs: through libc (wrapped), through
 * syscall(2) (direct), or direct with a clock (or TSC) read after each call. */
static int run_block(int w, int r, int iters, int arm, samples *out)
{
    char msg[64], buf[64];
    memset(msg, 'p', sizeof msg);
    volatile uint64_t stamps = 0;
    uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < iters; i++) {
        if (arm == ARM_WRAPPED) {
            if (write(w, msg, sizeof msg) != (ssize_t)sizeof msg || read(r, buf, sizeof buf) != (ssize_t)sizeof buf)
                return -1;
        } else {
            if (syscall(SYS_write, w, msg, sizeof msg) != (long)sizeof msg) return -1;
            if (arm == ARM_DIRECT_CLOCK) stamps += now_ns(CLOCK_MONOTONIC);
            if (arm == ARM_DIRECT_TSC) stamps += tsc_now();
            if (syscall(SYS_read, r, buf, sizeof buf) != (long)sizeof buf) return -1;
            if (arm == ARM_DIRECT_CLOCK) stamps += now_ns(CLOCK_MONOTONIC);
            if (arm == ARM_DIRECT_TSC) stamps += tsc_now();
        }
    }
    int k = arm;
    out->cpu[k][out->n[k]] = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (2.0 * iters);
    out->wall[k][out->n[k]++] = (double)(now_ns(CLOCK_MONOTONIC) - w0) / (2.0 * iters);
    return 0;
}

static bool samples_init(samples *s, int blocks)
{
    memset(s, 0, sizeof *s);
    for (int k = 0; k < ARMS; k++) {
        s->cpu[k] = calloc((size_t)blocks, sizeof(double));
        s->wall[k] = calloc((size_t)blocks, sizeof(double));
        if (!s->cpu[k] || !s->wall[k]) return false;
    }
    return true;
}

static void samples_free(samples *s)
{
    for (int k = 0; k < ARMS; k++) {
        free(s->cpu[k]);
        free(s->wall[k]);
    }
}

static long minor_faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : 0;
}

int main(int argc, char **argv)
{
    int blocks = argc > 1 ? atoi(argv[1]) : 200, iters = argc > 2 ? atoi(argv[2]) : 1000;
    long warmup = argc > 3 ? atol(argv[3]) : 0;
    if (blocks < 2 || iters < 1 || warmup < 0) return 2;
    /* the process's first TCP socket: the probe makes its ring in it */
    uint64_t s0 = now_ns(CLOCK_MONOTONIC);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    uint64_t first_socket_ns = now_ns(CLOCK_MONOTONIC) - s0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 1) ||
        getsockname(lfd, (struct sockaddr *)&a, &l))
        return 1;
    int w = socket(AF_INET, SOCK_STREAM, 0);
    if (w < 0 || connect(w, (struct sockaddr *)&a, sizeof a)) return 1;
    int r = accept(lfd, NULL, NULL);
    if (r < 0) return 1;
    int one = 1;
    setsockopt(w, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char msg[64], buf[64];
    memset(msg, 'p', sizeof msg);
    const struct tt_probe_ring *ring = find_own_ring();
    /* first lap: until the ring's positions pass its capacity (bounded, in
     * case the collector drops records or is not draining) */
    samples lap;
    int lap_max = 4096;
    if (!samples_init(&lap, lap_max)) return 1;
    long faults0 = minor_faults();
    while (ring && lap.n[0] < lap_max && __atomic_load_n(&ring->published_pos, __ATOMIC_ACQUIRE) < ring->capacity)
        if (run_block(w, r, iters, ARM_WRAPPED, &lap) || run_block(w, r, iters, ARM_DIRECT, &lap)) return 1;
    for (long i = 0; i < warmup; i++)
        if (write(w, msg, sizeof msg) != (ssize_t)sizeof msg || read(r, buf, sizeof buf) != (ssize_t)sizeof buf)
            return 1;
    long faults1 = minor_faults();
    samples steady;
    if (!samples_init(&steady, blocks)) return 1;
    for (int b = 0; b < blocks; b++)
        if (run_block(w, r, iters, ARM_WRAPPED, &steady) || run_block(w, r, iters, ARM_DIRECT, &steady) ||
            run_block(w, r, iters, ARM_DIRECT_CLOCK, &steady) || run_block(w, r, iters, ARM_DIRECT_TSC, &steady))
            return 1;
    long faults2 = minor_faults();
    double mw = median(steady.cpu[0], steady.n[0]), md = median(steady.cpu[1], steady.n[1]);
    double wall_added = median(steady.wall[0], steady.n[0]) - median(steady.wall[1], steady.n[1]);
    printf("wrapped_ns=%.1f direct_ns=%.1f added_ns=%.1f wall_added_ns=%.1f calls=%d clock_after_call_ns=%.1f"
           " tsc_after_call_ns=%.1f",
           mw, md, mw - md, wall_added, 2 * blocks * iters,
           median(steady.cpu[ARM_DIRECT_CLOCK], steady.n[ARM_DIRECT_CLOCK]) - md,
           median(steady.cpu[ARM_DIRECT_TSC], steady.n[ARM_DIRECT_TSC]) - md);
    if (lap.n[0]) {
        double lw = median(lap.cpu[0], lap.n[0]) - median(lap.cpu[1], lap.n[1]);
        double lwall = median(lap.wall[0], lap.n[0]) - median(lap.wall[1], lap.n[1]);
        printf(" first_lap_added_ns=%.1f first_lap_wall_added_ns=%.1f first_lap_blocks=%d", lw, lwall, lap.n[0]);
    } else {
        printf(" first_lap_added_ns=na first_lap_wall_added_ns=na first_lap_blocks=na");
    }
    printf(" first_lap_faults=%ld steady_faults=%ld first_socket_ns=%llu\n", faults1 - faults0, faults2 - faults1,
           (unsigned long long)first_socket_ns);
    samples_free(&lap);
    samples_free(&steady);
    return 0;
}
