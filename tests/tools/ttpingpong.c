/* ttpingpong - what a traced syscall costs (tests/bench/bpf.sh).
 *
 * Two threads of one process bounce an N-byte message M times, with plain
 * write() and read(), over
 *   unix: an AF_UNIX socketpair, which the eBPF programs see but drop early
 *         (the socket is not TCP), and
 *   tcp:  a loopback TCP connection (TCP_NODELAY), whose bytes they copy.
 * Both threads are one process, so `--pid` of a tracer covers both ends.
 * Prints one JSON line: per transport the rounds, the read and write calls
 * made by both threads, ns per round trip and ns per syscall (the elapsed
 * time over every call; a round trip is serial, so that is the average
 * cost of one call on the critical path, wakeups included).
 *
 * --wait-signal: print "ready PID" on stderr and wait for SIGUSR1 before
 * starting, so a tracer can be attached to the pid first.
 * --one-thread: one thread plays both ends (write on one, read on the
 *   other, and back): the same four calls per round trip with no wakeup,
 *   no context switch and no second CPU, so (traced - untraced) is what the
 *   programs and tracepoints add to the calls themselves.
 * --getppid N: no sockets; getppid() N times, ns per call (what tracing
 *   costs a process it does not trace: the bystander).
 * --devnull N: no sockets; N reads of BYTES from /dev/zero and N writes of
 *   them to /dev/null, ns per call (a bystander that does file I/O: the
 *   read and write syscalls a tracer may hook). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PINGPONG_MAX_BYTES (1u << 20)

typedef struct pingpong_options {
    size_t bytes;
    uint64_t rounds, warmup;
    uint64_t getppid_calls; /* --getppid: that many getppid() calls instead of sockets */
    uint64_t devnull_pairs; /* --devnull: that many read+write pairs on /dev/zero, /dev/null */
    bool do_unix, do_tcp, wait_signal, one_thread;
} pingpong_options;

/* One end of a bounce: its socket, a buffer of the message size, and the
 * calls it made. */
typedef struct pingpong_end {
    int fd;
    uint8_t *buf;
    size_t bytes;
    uint64_t rounds, warmup;
    uint64_t calls, calls_after_warmup; /* all calls; those after the warm-up rounds */
    int error; /* errno of a failed call, or -1 for an early end of stream */
} pingpong_end;

typedef struct pingpong_result {
    uint64_t rounds, calls;
    double ns_per_round_trip, ns_per_syscall;
} pingpong_result;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Write all n bytes; 0, or -1 with e->error set. */
static int write_all(pingpong_end *e, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(e->fd, e->buf + off, n - off);
        e->calls++;
        if (w < 0) {
            if (errno == EINTR) continue;
            e->error = errno;
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
}

/* Read exactly n bytes; 0, or -1 with e->error set. */
static int read_all(pingpong_end *e, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t r = read(e->fd, e->buf + off, n - off);
        e->calls++;
        if (r < 0) {
            if (errno == EINTR) continue;
            e->error = errno;
            return -1;
        }
        if (r == 0) {
            e->error = -1;
            return -1;
        }
        off += (size_t)r;
    }
    return 0;
}

/* The echoing end: read a message, send it back, rounds times. */
static void *echo_thread(void *arg)
{
    pingpong_end *e = arg;
    uint64_t warm_calls = 0;
    for (uint64_t i = 0; i < e->rounds; i++) {
        if (i == e->warmup) warm_calls = e->calls;
        if (read_all(e, e->bytes) < 0 || write_all(e, e->bytes) < 0) break;
    }
    e->calls_after_warmup = e->calls - warm_calls;
    return NULL;
}

/* Bounce the message over the connected pair fds[0] (timing side) and
 * fds[1] (echo side); closes both. 0 with *res filled, or -1 with a reason
 * on stderr. */
static int bounce(const char *name, int fds[2], const pingpong_options *o, pingpong_result *res)
{
    int rc = -1;
    pingpong_end ping = {.fd = fds[0], .bytes = o->bytes}, pong = {.fd = fds[1], .bytes = o->bytes};
    ping.buf = malloc(o->bytes);
    pong.buf = malloc(o->bytes);
    pong.rounds = o->warmup + o->rounds;
    pong.warmup = o->warmup;
    pthread_t th;
    bool started = false;
    if (!ping.buf || !pong.buf) {
        fprintf(stderr, "ttpingpong: out of memory\n");
        goto out;
    }
    memset(ping.buf, 'x', o->bytes);
    if (pthread_create(&th, NULL, echo_thread, &pong) != 0) {
        fprintf(stderr, "ttpingpong: cannot start a thread\n");
        goto out;
    }
    started = true;
    uint64_t t0 = 0, ping_warm_calls = 0;
    for (uint64_t i = 0; i < o->warmup + o->rounds; i++) {
        if (i == o->warmup) {
            t0 = mono_ns();
            ping_warm_calls = ping.calls;
        }
        if (write_all(&ping, o->bytes) < 0 || read_all(&ping, o->bytes) < 0) {
            fprintf(stderr, "ttpingpong: %s: round %llu: %s\n", name, (unsigned long long)i,
                    ping.error > 0 ? strerror(ping.error) : "the other end closed");
            goto out;
        }
    }
    uint64_t elapsed = mono_ns() - t0;
    pthread_join(th, NULL);
    started = false;
    if (pong.error) {
        fprintf(stderr, "ttpingpong: %s: echo side: %s\n", name,
                pong.error > 0 ? strerror(pong.error) : "the other end closed");
        goto out;
    }
    uint64_t calls = ping.calls - ping_warm_calls + pong.calls_after_warmup;
    res->rounds = o->rounds;
    res->calls = calls;
    res->ns_per_round_trip = (double)elapsed / (double)o->rounds;
    res->ns_per_syscall = calls ? (double)elapsed / (double)calls : 0;
    rc = 0;
out:
    close(fds[0]);
    close(fds[1]);
    if (started) pthread_join(th, NULL);
    free(ping.buf);
    free(pong.buf);
    return rc;
}

/* --one-thread: this thread writes on fds[0], reads on fds[1], writes
 * back on fds[1] and reads on fds[0], rounds times (after the warm-up);
 * closes both. 0 with *res filled, or -1 with a reason on stderr. */
static int bounce_one_thread(const char *name, int fds[2], const pingpong_options *o, pingpong_result *res)
{
    int rc = -1;
    pingpong_end a = {.fd = fds[0], .bytes = o->bytes}, b = {.fd = fds[1], .bytes = o->bytes};
    a.buf = malloc(o->bytes);
    b.buf = malloc(o->bytes);
    if (!a.buf || !b.buf) {
        fprintf(stderr, "ttpingpong: out of memory\n");
        goto out;
    }
    memset(a.buf, 'x', o->bytes);
    uint64_t t0 = 0, warm_calls = 0;
    for (uint64_t i = 0; i < o->warmup + o->rounds; i++) {
        if (i == o->warmup) {
            t0 = mono_ns();
            warm_calls = a.calls + b.calls;
        }
        if (write_all(&a, o->bytes) < 0 || read_all(&b, o->bytes) < 0 || write_all(&b, o->bytes) < 0 ||
            read_all(&a, o->bytes) < 0) {
            int e = a.error ? a.error : b.error;
            fprintf(stderr, "ttpingpong: %s: round %llu: %s\n", name, (unsigned long long)i,
                    e > 0 ? strerror(e) : "the other end closed");
            goto out;
        }
    }
    uint64_t elapsed = mono_ns() - t0;
    res->rounds = o->rounds;
    res->calls = a.calls + b.calls - warm_calls;
    res->ns_per_round_trip = (double)elapsed / (double)o->rounds;
    res->ns_per_syscall = res->calls ? (double)elapsed / (double)res->calls : 0;
    rc = 0;
out:
    close(fds[0]);
    close(fds[1]);
    free(a.buf);
    free(b.buf);
    return rc;
}

/* --getppid: ns per getppid() over o->getppid_calls calls (a tenth more
 * before, as warm-up). */
static double getppid_ns(const pingpong_options *o)
{
    for (uint64_t i = 0; i < o->getppid_calls / 10; i++) syscall(SYS_getppid);
    uint64_t t0 = mono_ns();
    for (uint64_t i = 0; i < o->getppid_calls; i++) syscall(SYS_getppid);
    return (double)(mono_ns() - t0) / (double)o->getppid_calls;
}

/* --devnull: ns per call over o->devnull_pairs reads of o->bytes from
 * /dev/zero each written to /dev/null (a tenth more before, as warm-up);
 * negative when a file does not open or a call fails. */
static double devnull_ns(const pingpong_options *o)
{
    int in = open("/dev/zero", O_RDONLY | O_CLOEXEC), out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    char *buf = malloc(o->bytes);
    double ns = -1;
    if (in < 0 || out < 0 || !buf) goto done;
    for (uint64_t i = 0; i < o->devnull_pairs / 10; i++)
        if (read(in, buf, o->bytes) != (ssize_t)o->bytes || write(out, buf, o->bytes) != (ssize_t)o->bytes) goto done;
    uint64_t t0 = mono_ns();
    for (uint64_t i = 0; i < o->devnull_pairs; i++)
        if (read(in, buf, o->bytes) != (ssize_t)o->bytes || write(out, buf, o->bytes) != (ssize_t)o->bytes) goto done;
    ns = (double)(mono_ns() - t0) / (2.0 * (double)o->devnull_pairs);
done:
    if (ns < 0) fprintf(stderr, "ttpingpong: /dev/zero -> /dev/null: %s\n", strerror(errno));
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    free(buf);
    return ns;
}

static int unix_pair(int fds[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0) {
        fprintf(stderr, "ttpingpong: socketpair: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* A connected loopback TCP pair with Nagle off on both ends. */
static int tcp_pair(int fds[2])
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), cfd = -1, afd = -1, one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 1) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) < 0)
        goto fail;
    cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (cfd < 0 || connect(cfd, (struct sockaddr *)&a, sizeof a) < 0) goto fail;
    afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (afd < 0) goto fail;
    if (setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
        setsockopt(afd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        goto fail;
    close(lfd);
    fds[0] = cfd;
    fds[1] = afd;
    return 0;
fail:
    fprintf(stderr, "ttpingpong: loopback TCP: %s\n", strerror(errno));
    if (lfd >= 0) close(lfd);
    if (cfd >= 0) close(cfd);
    if (afd >= 0) close(afd);
    return -1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ttpingpong [-n BYTES] [-m ROUNDS] [-w WARMUP] [-t unix|tcp|both] [--one-thread]\n"
            "                  [--getppid N] [--devnull N] [--wait-signal]\n"
            "  Two threads bounce a BYTES-byte message ROUNDS times with write()/read() over an\n"
            "  AF_UNIX socketpair and/or a loopback TCP connection; one JSON line on stdout.\n"
            "  Defaults: -n 64 -m 100000 -w ROUNDS/10 -t both. --wait-signal: print 'ready PID'\n"
            "  on stderr, then wait for SIGUSR1 before the first connection. --one-thread: one\n"
            "  thread plays both ends (no wakeups). --getppid N: no sockets, N getppid() calls.\n"
            "  --devnull N: no sockets, N BYTES-byte reads from /dev/zero each written to /dev/null.\n");
}

static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    if (!s || !*s || *s == '-') return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static int parse_options(pingpong_options *o, int argc, char **argv)
{
    *o = (pingpong_options){.bytes = 64, .rounds = 100000, .do_unix = true, .do_tcp = true};
    bool warmup_set = false;
    uint64_t v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--wait-signal")) {
            o->wait_signal = true;
        } else if (!strcmp(a, "--one-thread")) {
            o->one_thread = true;
        } else if (!strcmp(a, "--getppid") && parse_u64(val, 1, 1000000000000ull, &v)) {
            o->getppid_calls = v;
            i++;
        } else if (!strcmp(a, "--devnull") && parse_u64(val, 1, 1000000000000ull, &v)) {
            o->devnull_pairs = v;
            i++;
        } else if (!strcmp(a, "-n") && parse_u64(val, 1, PINGPONG_MAX_BYTES, &v)) {
            o->bytes = (size_t)v;
            i++;
        } else if (!strcmp(a, "-m") && parse_u64(val, 1, 1000000000, &v)) {
            o->rounds = v;
            i++;
        } else if (!strcmp(a, "-w") && parse_u64(val, 0, 1000000000, &v)) {
            o->warmup = v;
            warmup_set = true;
            i++;
        } else if (!strcmp(a, "-t") && val && (!strcmp(val, "unix") || !strcmp(val, "tcp") || !strcmp(val, "both"))) {
            o->do_unix = strcmp(val, "tcp") != 0;
            o->do_tcp = strcmp(val, "unix") != 0;
            i++;
        } else {
            return -1;
        }
    }
    if (!warmup_set) o->warmup = o->rounds / 10;
    return 0;
}

static void print_result(const char *name, const pingpong_result *r, bool comma)
{
    printf("%s\"%s\":{\"rounds\":%llu,\"syscalls\":%llu,\"syscalls_per_round_trip\":%.2f,"
           "\"ns_per_round_trip\":%.1f,\"ns_per_syscall\":%.1f}",
           comma ? "," : "", name, (unsigned long long)r->rounds, (unsigned long long)r->calls,
           (double)r->calls / (double)r->rounds, r->ns_per_round_trip, r->ns_per_syscall);
}

int main(int argc, char **argv)
{
    pingpong_options o;
    if (parse_options(&o, argc, argv) != 0) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (o.wait_signal) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigprocmask(SIG_BLOCK, &set, NULL);
        fprintf(stderr, "ready %ld\n", (long)getpid());
        fflush(stderr);
        int sig;
        if (sigwait(&set, &sig) != 0) {
            fprintf(stderr, "ttpingpong: sigwait failed\n");
            return 1;
        }
    }
    if (o.getppid_calls) {
        double ns = getppid_ns(&o);
        printf("{\"pid\":%ld,\"getppid\":{\"calls\":%llu,\"ns_per_call\":%.2f}}\n", (long)getpid(),
               (unsigned long long)o.getppid_calls, ns);
        return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
    }
    if (o.devnull_pairs) {
        double ns = devnull_ns(&o);
        if (ns < 0) return 1;
        printf("{\"pid\":%ld,\"devnull\":{\"bytes\":%zu,\"calls\":%llu,\"ns_per_call\":%.2f}}\n", (long)getpid(),
               o.bytes, (unsigned long long)(2 * o.devnull_pairs), ns);
        return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
    }
    pingpong_result ru = {0}, rt = {0};
    int fds[2];
    int (*run)(const char *, int[2], const pingpong_options *, pingpong_result *) =
        o.one_thread ? bounce_one_thread : bounce;
    if (o.do_unix && (unix_pair(fds) < 0 || run("unix", fds, &o, &ru) < 0)) return 1;
    if (o.do_tcp && (tcp_pair(fds) < 0 || run("tcp", fds, &o, &rt) < 0)) return 1;
    printf("{\"pid\":%ld,\"bytes\":%zu,\"warmup\":%llu,\"threads\":%d", (long)getpid(), o.bytes,
           (unsigned long long)o.warmup, o.one_thread ? 1 : 2);
    if (o.do_unix) print_result("unix", &ru, true);
    if (o.do_tcp) print_result("tcp", &rt, true);
    printf("}\n");
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
