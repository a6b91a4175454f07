/* tttlsbench - what a traced SSL call costs (issue 13's bench,
 * tests/bench/tls.sh). The process to trace prints its pid first and, given
 * GO_FILE, waits for it before the measured part.
 *
 * calls: a TLS client and server (OpenSSL, TLS 1.3) joined by a BIO pair in
 * one thread, so no syscall and no network sits in the measured calls:
 * after the handshake, BLOCKS blocks of CALLS rounds of SSL_write(64
 * bytes) on the client and SSL_read(64 bytes) on the server, each block's
 * thread CPU time (user and kernel: a uprobe's trap is charged to the
 * thread that hit it) per SSL call; prints the median over the blocks. One
 * socket read on a TCP connection first, so that the reads pair with it
 * like a memory-BIO library's would (bpf/README.md): every call is traced
 * in full, its plaintext copied into the ring.
 *
 * flood: a TLS client and server over loopback TCP, two threads: the client
 * sends one POST, the server answers an SSE stream of FRAMES chat chunks
 * (one SSL_write each) as fast as it can, then [DONE] and close; prints the
 * frames per second the client read.
 *
 * usage: tttlsbench CERT KEY calls BLOCKS CALLS [GO_FILE]
 *        tttlsbench CERT KEY flood FRAMES [GO_FILE] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "tttlsbench: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

typedef struct server_args {
    SSL_CTX *ctx;
    int listen_fd;
    long flood_frames; /* 0: echo */
} server_args;

static void *server_main(void *p)
{
    server_args *a = p;
    int fd = accept(a->listen_fd, NULL, NULL);
    if (fd < 0) die("accept failed");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SSL *ssl = SSL_new(a->ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) != 1) die("SSL_accept failed");
    if (a->flood_frames) {
        char req[512];
        if (SSL_read(ssl, req, sizeof req) <= 0) die("no request");
        static const char head[] = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        if (SSL_write(ssl, head, sizeof head - 1) != (int)sizeof head - 1) die("SSL_write failed");
        char frame[96];
        for (long i = 0; i < a->flood_frames; i++) {
            int n = snprintf(frame, sizeof frame, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%ld\"}}]}\n\n",
                             i % 10);
            if (SSL_write(ssl, frame, n) != n) die("SSL_write failed");
        }
        static const char done[] = "data: [DONE]\n\n";
        if (SSL_write(ssl, done, sizeof done - 1) != (int)sizeof done - 1) die("SSL_write failed");
    }
    SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
    return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static void wait_go(const char *go)
{
    if (!go) return;
    for (int i = 0; i < 3000 && access(go, F_OK) != 0; i++) usleep(10000);
}

int main(int argc, char **argv)
{
    if (argc < 5 || (strcmp(argv[3], "calls") && strcmp(argv[3], "flood")) ||
        (!strcmp(argv[3], "calls") && argc < 6)) {
        fprintf(stderr, "usage: tttlsbench CERT KEY calls BLOCKS CALLS [GO_FILE]\n"
                        "       tttlsbench CERT KEY flood FRAMES [GO_FILE]\n");
        return 2;
    }
    bool flood = !strcmp(argv[3], "flood");
    long blocks = flood ? 0 : atol(argv[4]), calls = flood ? 0 : atol(argv[5]);
    long frames = flood ? atol(argv[4]) : 0;
    const char *go = flood ? (argc > 5 ? argv[5] : NULL) : (argc > 6 ? argv[6] : NULL);

    SSL_CTX *sctx = SSL_CTX_new(TLS_server_method()), *cctx = SSL_CTX_new(TLS_client_method());
    if (!sctx || !cctx) die("SSL_CTX_new failed");
    if (SSL_CTX_use_certificate_file(sctx, argv[1], SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_use_PrivateKey_file(sctx, argv[2], SSL_FILETYPE_PEM) != 1)
        die("cannot load the certificate or key");
    SSL_CTX_set_verify(cctx, SSL_VERIFY_NONE, NULL);

    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) || listen(lfd, 1) ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl))
        die("cannot listen on loopback");
    printf("pid=%d\n", (int)getpid());
    fflush(stdout);
    wait_go(go);

    if (!flood) {
        /* one socket read on a TCP connection: the thread's last socket read */
        int cfd = socket(AF_INET, SOCK_STREAM, 0), afd;
        if (cfd < 0 || connect(cfd, (struct sockaddr *)&sa, sizeof sa) || (afd = accept(lfd, NULL, NULL)) < 0)
            die("loopback connection failed");
        char byte = 'x';
        if (write(afd, &byte, 1) != 1 || read(cfd, &byte, 1) != 1) die("loopback byte failed");
        SSL *cli = SSL_new(cctx), *srv = SSL_new(sctx);
        BIO *cb, *sb;
        if (!cli || !srv || !BIO_new_bio_pair(&cb, 1 << 16, &sb, 1 << 16)) die("BIO pair failed");
        SSL_set_bio(cli, cb, cb);
        SSL_set_bio(srv, sb, sb);
        SSL_set_connect_state(cli);
        SSL_set_accept_state(srv);
        for (int i = 0; i < 100 && (!SSL_is_init_finished(cli) || !SSL_is_init_finished(srv)); i++) {
            SSL_do_handshake(cli);
            SSL_do_handshake(srv);
        }
        if (!SSL_is_init_finished(cli) || !SSL_is_init_finished(srv)) die("handshake over the BIO pair failed");
        uint64_t *cpu = calloc((size_t)blocks, sizeof *cpu);
        char msg[64], back[64];
        memset(msg, 'x', sizeof msg);
        for (long b = 0; b < blocks; b++) {
            uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
            for (long i = 0; i < calls; i++) {
                if (SSL_write(cli, msg, sizeof msg) != (int)sizeof msg) die("SSL_write failed");
                if (SSL_read(srv, back, sizeof back) != (int)sizeof back) die("SSL_read failed");
            }
            cpu[b] = (now_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (uint64_t)(2 * calls);
        }
        qsort(cpu, (size_t)blocks, sizeof *cpu, cmp_u64);
        printf("ssl_calls=%ld cpu_ns_per_call=%llu\n", 2 * calls * blocks, (unsigned long long)cpu[blocks / 2]);
        free(cpu);
        SSL_free(cli);
        SSL_free(srv);
        close(cfd);
        close(afd);
    } else {
        server_args a = {sctx, lfd, frames};
        pthread_t th;
        pthread_create(&th, NULL, server_main, &a);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) die("connect failed");
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        SSL *ssl = SSL_new(cctx);
        SSL_set_fd(ssl, fd);
        if (SSL_connect(ssl) != 1) die("SSL_connect failed");
        static const char req[] = "POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\nx-request-id: flood\r\n"
                                  "content-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        if (SSL_write(ssl, req, sizeof req - 1) != (int)sizeof req - 1) die("SSL_write failed");
        char buf[16384];
        uint64_t t0 = now_ns(CLOCK_MONOTONIC);
        long bytes = 0;
        for (;;) {
            int n = SSL_read(ssl, buf, sizeof buf);
            if (n <= 0) break;
            bytes += n;
        }
        uint64_t t1 = now_ns(CLOCK_MONOTONIC);
        printf("frames=%ld bytes=%ld seconds=%.3f frames_per_s=%.0f\n", frames, bytes, (double)(t1 - t0) / 1e9,
               (double)frames / ((double)(t1 - t0) / 1e9));
        SSL_shutdown(ssl);
        SSL_free(ssl);
        close(fd);
        pthread_join(th, NULL);
    }
    SSL_CTX_free(sctx);
    SSL_CTX_free(cctx);
    return 0;
}
