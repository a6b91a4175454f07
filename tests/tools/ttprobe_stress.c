/* ttprobe_stress - a program for the probe to be preloaded into (tests/e2e/
 * test_run_stress.sh): it moves known byte counts over loopback TCP and
 * checks that every wrapped call leaves errno as the real call set it.
 *
 *   ttprobe_stress stress [THREADS] [FORKS] [ROUNDS]
 *     an in-process echo server; THREADS threads and FORKS forked children
 *     each ping-pong ROUNDS messages of 1..4096 bytes with a mix of
 *     write/send/writev/sendmsg and read/recv/readv/recvmsg, switching to a
 *     dup()ed fd half way (closing the first), peeking (MSG_PEEK) and
 *     probing an empty socket (EAGAIN) on the way; another thread sends
 *     SIGUSR1 to the workers all along, and the handler write()s one byte on
 *     a TCP socket. Prints "tcp_bytes=N errno_bad=M signals=S" (N: bytes
 *     read plus bytes written on TCP by every process, which the probe must
 *     account for exactly).
 *   ttprobe_stress flood BYTES
 *     a thread writes BYTES in 256-byte writes, the main thread reads them
 *     (16 KiB reads). Prints "tcp_bytes=N calls=C elapsed_ns=T".
 *   ttprobe_stress race THREADS
 *     the process's first TCP sockets, made by THREADS threads released
 *     together: each connects and sends 1000 bytes to a listener made with
 *     raw system calls (which the probe does not see), so the probe's ring
 *     is made while the other threads already record. Prints
 *     "tcp_bytes=N" (bytes the threads sent).
 * Exit 0 when every echo matched and errno was always preserved. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ERRNO_MARK 7777

static atomic_ullong tcp_bytes;  /* bytes this process moved on TCP */
static atomic_ulong errno_bad;   /* calls that changed errno behind the program's back */
static atomic_ulong signals_seen;
static int signal_sink_fd = -1;  /* the handler writes here */
static uint16_t echo_port, sink_port;

static void die(const char *what)
{
    fprintf(stderr, "ttprobe_stress: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int listen_loopback(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &l) < 0)
        die("listen");
    *port = ntohs(a.sin_port);
    return fd;
}

static int connect_loopback(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0) die("socket");
    while (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        if (errno != EINTR) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Errno must come back as the program left it when the call succeeded. */
static void expect_mark(ssize_t r)
{
    if (r >= 0 && errno != ERRNO_MARK) atomic_fetch_add(&errno_bad, 1);
}

static void on_usr1(int sig)
{
    int saved = errno;
    atomic_fetch_add(&signals_seen, 1);
    if (signal_sink_fd >= 0) {
        errno = ERRNO_MARK;
        ssize_t r = write(signal_sink_fd, "s", 1);
        if (r > 0) atomic_fetch_add(&tcp_bytes, (unsigned long long)r);
        expect_mark(r);
    }
    errno = saved;
}

/* Write all of buf, one of four calls chosen by `how`. */
static void send_all(int fd, const uint8_t *buf, size_t n, unsigned how)
{
    size_t off = 0;
    while (off < n) {
        ssize_t r;
        errno = ERRNO_MARK;
        size_t left = n - off;
        switch (how % 4) {
        case 0: r = write(fd, buf + off, left); break;
        case 1: r = send(fd, buf + off, left, MSG_NOSIGNAL); break;
        case 2: {
            size_t half = left / 2;
            struct iovec iov[2] = {{(void *)(buf + off), half}, {(void *)(buf + off + half), left - half}};
            r = writev(fd, iov, 2);
            break;
        }
        default: {
            struct iovec iov = {(void *)(buf + off), left};
            struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
            r = sendmsg(fd, &m, MSG_NOSIGNAL);
            break;
        }
        }
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die("send");
        expect_mark(r);
        off += (size_t)r;
        atomic_fetch_add(&tcp_bytes, (unsigned long long)r);
    }
}

/* Read exactly n bytes, one of four calls chosen by `how`. */
static void recv_all(int fd, uint8_t *buf, size_t n, unsigned how)
{
    size_t off = 0;
    while (off < n) {
        ssize_t r;
        errno = ERRNO_MARK;
        size_t left = n - off;
        switch (how % 4) {
        case 0: r = read(fd, buf + off, left); break;
        case 1: r = recv(fd, buf + off, left, 0); break;
        case 2: {
            size_t half = left / 2;
            struct iovec iov[2] = {{buf + off, half}, {buf + off + half, left - half}};
            r = readv(fd, iov, 2);
            break;
        }
        default: {
            struct iovec iov = {buf + off, left};
            struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
            r = recvmsg(fd, &m, 0);
            break;
        }
        }
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die("recv");
        expect_mark(r);
        off += (size_t)r;
        atomic_fetch_add(&tcp_bytes, (unsigned long long)r);
    }
}

static void *echo_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    uint8_t buf[8192];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        atomic_fetch_add(&tcp_bytes, (unsigned long long)r);
        send_all(fd, buf, (size_t)r, (unsigned)r);
    }
    close(fd);
    return NULL;
}

static void *sink_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    uint8_t buf[4096];
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        atomic_fetch_add(&tcp_bytes, (unsigned long long)r);
    }
    close(fd);
    return NULL;
}

typedef struct acceptor {
    int lfd;
    void *(*serve)(void *);
} acceptor;

static void *accept_loop(void *arg)
{
    acceptor *a = arg;
    for (;;) {
        int fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            break;
        }
        pthread_t t;
        if (pthread_create(&t, NULL, a->serve, (void *)(intptr_t)fd) != 0) die("pthread_create");
        pthread_detach(t);
    }
    return NULL;
}

/* One client: ROUNDS ping-pongs on one connection, a dup half way. */
static void client_rounds(unsigned rounds, unsigned seed)
{
    int fd = connect_loopback(echo_port);
    uint8_t out[4096], in[4096];
    for (unsigned i = 0; i < rounds; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 8) % sizeof out;
        for (size_t k = 0; k < n; k++) out[k] = (uint8_t)(seed + k);
        send_all(fd, out, n, seed >> 3);
        if (i % 16 == 5) { /* peeked bytes are not delivered; a later read takes them */
            ssize_t r;
            do r = recv(fd, in, 1, MSG_PEEK); while (r < 0 && errno == EINTR);
            if (r != 1) die("peek");
        }
        recv_all(fd, in, n, seed >> 5);
        if (memcmp(in, out, n) != 0) {
            fprintf(stderr, "ttprobe_stress: echo mismatch\n");
            exit(1);
        }
        if (i % 16 == 9) { /* an empty socket: EAGAIN comes back untouched */
            errno = 0;
            ssize_t r = recv(fd, in, sizeof in, MSG_DONTWAIT);
            if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) atomic_fetch_add(&errno_bad, 1);
        }
        if (i == rounds / 2) {
            int fd2 = dup(fd);
            if (fd2 < 0) die("dup");
            close(fd);
            fd = fd2;
        }
    }
    close(fd);
}

static atomic_int stop_signals;

typedef struct worker {
    pthread_t t;
    unsigned rounds, seed;
    atomic_int done;
} worker;

/* A worker lives on until the signals stop: pthread_kill on a thread that
 * has ended and been joined is undefined (it crashed here). */
static void *worker_main(void *arg)
{
    worker *w = arg;
    client_rounds(w->rounds, w->seed);
    atomic_store(&w->done, 1);
    struct timespec pause = {0, 1000 * 1000};
    while (!atomic_load(&stop_signals)) nanosleep(&pause, NULL);
    return NULL;
}

typedef struct signaller {
    worker *workers;
    int n;
} signaller;

static void *signal_loop(void *arg)
{
    signaller *s = arg;
    while (!atomic_load(&stop_signals)) {
        for (int i = 0; i < s->n; i++) pthread_kill(s->workers[i].t, SIGUSR1);
        struct timespec pause = {0, 200 * 1000};
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static int stress(int threads, int forks, unsigned rounds)
{
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    static acceptor echo, sink;
    echo.lfd = listen_loopback(&echo_port);
    echo.serve = echo_conn;
    sink.lfd = listen_loopback(&sink_port);
    sink.serve = sink_conn;
    pthread_t ta, ts;
    if (pthread_create(&ta, NULL, accept_loop, &echo) || pthread_create(&ts, NULL, accept_loop, &sink))
        die("pthread_create");
    signal_sink_fd = connect_loopback(sink_port);

    int pipes[64][2];
    pid_t kids[64];
    if (forks > 64) forks = 64;
    worker *ws = calloc((size_t)threads, sizeof *ws);
    if (!ws) die("calloc");
    for (int i = 0; i < threads; i++) {
        ws[i].rounds = rounds;
        ws[i].seed = 1000u + (unsigned)i;
        if (pthread_create(&ws[i].t, NULL, worker_main, &ws[i])) die("pthread_create");
    }
    signaller sg = {ws, threads};
    pthread_t tsig;
    if (pthread_create(&tsig, NULL, signal_loop, &sg)) die("pthread_create");
    /* fork while the threads run: each child runs its own rounds */
    for (int k = 0; k < forks; k++) {
        if (pipe(pipes[k]) < 0) die("pipe");
        kids[k] = fork();
        if (kids[k] < 0) die("fork");
        if (kids[k] == 0) {
            close(pipes[k][0]);
            atomic_store(&tcp_bytes, 0);
            atomic_store(&errno_bad, 0);
            client_rounds(rounds, 5000u + (unsigned)k);
            char line[64];
            int n = snprintf(line, sizeof line, "%llu %lu\n", (unsigned long long)atomic_load(&tcp_bytes),
                             (unsigned long)atomic_load(&errno_bad));
            if (write(pipes[k][1], line, (size_t)n) != n) _exit(1);
            _exit(0);
        }
        close(pipes[k][1]);
    }
    for (int i = 0; i < threads; i++) {
        struct timespec pause = {0, 1000 * 1000};
        while (!atomic_load(&ws[i].done)) nanosleep(&pause, NULL);
    }
    atomic_store(&stop_signals, 1);
    pthread_join(tsig, NULL);
    for (int i = 0; i < threads; i++) pthread_join(ws[i].t, NULL);
    unsigned long long total_children = 0;
    unsigned long bad_children = 0;
    for (int k = 0; k < forks; k++) {
        char line[64] = "";
        ssize_t n = read(pipes[k][0], line, sizeof line - 1);
        int st;
        waitpid(kids[k], &st, 0);
        unsigned long long b;
        unsigned long e;
        if (n <= 0 || sscanf(line, "%llu %lu", &b, &e) != 2 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "ttprobe_stress: child %d failed\n", k);
            return 1;
        }
        total_children += b;
        bad_children += e;
        close(pipes[k][0]);
    }
    close(signal_sink_fd);
    signal_sink_fd = -1;
    /* let the echo and sink threads see the ends and account the last bytes */
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    unsigned long bad = atomic_load(&errno_bad) + bad_children;
    printf("tcp_bytes=%llu errno_bad=%lu signals=%lu\n", atomic_load(&tcp_bytes) + total_children, bad,
           (unsigned long)atomic_load(&signals_seen));
    free(ws);
    return bad ? 1 : 0;
}

typedef struct flood_args {
    int fd;
    unsigned long long bytes;
    unsigned long long calls;
} flood_args;

static void *flood_writer(void *arg)
{
    flood_args *f = arg;
    uint8_t frame[256];
    memset(frame, 'x', sizeof frame);
    for (unsigned long long sent = 0; sent < f->bytes;) {
        size_t n = f->bytes - sent < sizeof frame ? (size_t)(f->bytes - sent) : sizeof frame;
        ssize_t r = write(f->fd, frame, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die("flood write");
        sent += (unsigned long long)r;
        f->calls++;
    }
    shutdown(f->fd, SHUT_WR);
    return NULL;
}

static int flood(unsigned long long bytes)
{
    uint16_t port;
    int lfd = listen_loopback(&port);
    int wfd = connect_loopback(port);
    int rfd = accept(lfd, NULL, NULL);
    if (rfd < 0) die("accept");
    flood_args f = {.fd = wfd, .bytes = bytes};
    uint64_t t0 = now_ns();
    pthread_t t;
    if (pthread_create(&t, NULL, flood_writer, &f)) die("pthread_create");
    uint8_t buf[16384];
    unsigned long long got = 0, reads = 0;
    for (;;) {
        ssize_t r = read(rfd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) die("flood read");
        if (r == 0) break;
        got += (unsigned long long)r;
        reads++;
    }
    pthread_join(t, NULL);
    uint64_t elapsed = now_ns() - t0;
    close(rfd);
    close(wfd);
    close(lfd);
    printf("tcp_bytes=%llu calls=%llu elapsed_ns=%llu\n", got + bytes, f.calls + reads, (unsigned long long)elapsed);
    return got == bytes ? 0 : 1;
}

#define RACE_BYTES 1000

typedef struct {
    pthread_barrier_t *start;
    uint16_t port;
} race_args;

static void *race_client(void *arg)
{
    race_args *r = arg;
    pthread_barrier_wait(r->start);
    int fd = connect_loopback(r->port);
    uint8_t buf[RACE_BYTES];
    memset(buf, 'r', sizeof buf);
    send_all(fd, buf, sizeof buf, 1);
    close(fd);
    return NULL;
}

/* `race THREADS`: see the header. The listener and the reads go straight to
 * the kernel, so the threads' socket() calls are the process's first TCP
 * sockets the probe sees. Exit 0 when the listener got every byte. */
static int race(int threads)
{
    int lfd = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    if (lfd < 0 || syscall(SYS_bind, lfd, &a, sizeof a) < 0 || syscall(SYS_listen, lfd, 128) < 0 ||
        syscall(SYS_getsockname, lfd, &a, &l) < 0)
        die("raw listen");
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    race_args r = {.start = &start, .port = ntohs(a.sin_port)};
    pthread_t *ts = calloc((size_t)threads, sizeof *ts);
    if (!ts) die("calloc");
    for (int i = 0; i < threads; i++)
        if (pthread_create(&ts[i], NULL, race_client, &r)) die("pthread_create");
    unsigned long long got = 0;
    for (int i = 0; i < threads; i++) {
        int cfd = (int)syscall(SYS_accept4, lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0) die("raw accept");
        char buf[4096];
        for (;;) {
            long n = syscall(SYS_recvfrom, cfd, buf, sizeof buf, 0, NULL, NULL);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) die("raw recv");
            if (n == 0) break;
            got += (unsigned long long)n;
        }
        syscall(SYS_close, cfd);
    }
    for (int i = 0; i < threads; i++) pthread_join(ts[i], NULL);
    free(ts);
    syscall(SYS_close, lfd);
    unsigned long long sent = (unsigned long long)threads * RACE_BYTES;
    printf("tcp_bytes=%llu\n", sent);
    return got == sent ? 0 : 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && !strcmp(argv[1], "stress")) {
        int threads = argc > 2 ? atoi(argv[2]) : 4;
        int forks = argc > 3 ? atoi(argv[3]) : 2;
        unsigned rounds = argc > 4 ? (unsigned)atoi(argv[4]) : 200;
        return stress(threads < 1 ? 1 : threads, forks < 0 ? 0 : forks, rounds ? rounds : 1);
    }
    if (argc == 3 && !strcmp(argv[1], "flood")) return flood(strtoull(argv[2], NULL, 10));
    if (argc == 3 && !strcmp(argv[1], "race")) {
        int threads = atoi(argv[2]);
        return race(threads < 1 ? 1 : threads);
    }
    fprintf(stderr, "usage: ttprobe_stress stress [THREADS] [FORKS] [ROUNDS] | flood BYTES | race THREADS\n");
    return 2;
}
