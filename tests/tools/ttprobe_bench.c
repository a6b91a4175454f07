/* ttprobe_bench - the probe's added cost per intercepted call, paired in
 * one process (tests/bench/probe.sh).
 *
 *   ttprobe_bench BLOCKS ITERS [WARMUP]
 * A loopback TCP pair; WARMUP write+read pairs first, not measured (a
 * warmed-up probe: its ring's pages already mapped in this process); each iteration writes 64 bytes on one end and reads
 * them on the other. Blocks alternate between the libc calls (wrapped by
 * the probe when it is preloaded) and the same system calls made directly
 * with syscall(2) (never wrapped), so both see the same kernel, cache and
 * load. Prints the medians over blocks of the thread's CPU time per call
 * (CLOCK_THREAD_CPUTIME_ID: time other processes took from it, the
 * collector's included, does not count) for each and their difference,
 * then the same in wall time:
 * "wrapped_ns=W direct_ns=D added_ns=A wall_added_ns=B calls=N". */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
    int blocks = argc > 1 ? atoi(argv[1]) : 200, iters = argc > 2 ? atoi(argv[2]) : 1000;
    long warmup = argc > 3 ? atol(argv[3]) : 0;
    if (blocks < 2 || iters < 1 || warmup < 0) return 2;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
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
    double *wrapped = calloc((size_t)blocks, sizeof *wrapped), *direct = calloc((size_t)blocks, sizeof *direct);
    double *wrapped_wall = calloc((size_t)blocks, sizeof *wrapped), *direct_wall = calloc((size_t)blocks, sizeof *direct);
    if (!wrapped || !direct || !wrapped_wall || !direct_wall) return 1;
    for (long i = 0; i < warmup; i++)
        if (write(w, msg, sizeof msg) != (ssize_t)sizeof msg || read(r, buf, sizeof buf) != (ssize_t)sizeof buf)
            return 1;
    int nw = 0, nd = 0;
    for (int b = 0; b < 2 * blocks; b++) {
        bool use_libc = b % 2 == 0;
        uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < iters; i++) {
            if (use_libc) {
                if (write(w, msg, sizeof msg) != (ssize_t)sizeof msg || read(r, buf, sizeof buf) != (ssize_t)sizeof buf)
                    return 1;
            } else {
                if (syscall(SYS_write, w, msg, sizeof msg) != (long)sizeof msg ||
                    syscall(SYS_read, r, buf, sizeof buf) != (long)sizeof buf)
                    return 1;
            }
        }
        double per_call = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (2.0 * iters);
        double per_call_wall = (double)(now_ns(CLOCK_MONOTONIC) - w0) / (2.0 * iters);
        if (use_libc) {
            wrapped_wall[nw] = per_call_wall;
            wrapped[nw++] = per_call;
        } else {
            direct_wall[nd] = per_call_wall;
            direct[nd++] = per_call;
        }
    }
    double mw = median(wrapped, nw), md = median(direct, nd);
    double wall_added = median(wrapped_wall, nw) - median(direct_wall, nd);
    printf("wrapped_ns=%.1f direct_ns=%.1f added_ns=%.1f wall_added_ns=%.1f calls=%d\n", mw, md, mw - md, wall_added,
           2 * blocks * iters);
    free(wrapped);
    free(direct);
    free(wrapped_wall);
    free(direct_wall);
    return 0;
}
