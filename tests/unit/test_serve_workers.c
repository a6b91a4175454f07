/* test_serve_workers.c - tokentap serve with several event loops: summing
 * the workers' histograms, logs that share one file across threads, and a
 * whole in-process server with 3 workers answering keep-alive requests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "serve/serve.h"
#include "serve/serve_metrics.h"

static void test_metrics_add(void **state)
{
    tt_serve_metrics a, b;
    tt_serve_metrics_init(&a);
    tt_serve_metrics_init(&b);
    tt_serve_hist_observe(&a.ttft, 2000000);  /* 2 ms: bucket le=0.005 */
    tt_serve_hist_observe(&b.ttft, 2000000);
    tt_serve_hist_observe(&b.ttft, 300000000); /* 0.3 s: le=0.5 */
    tt_serve_hist_observe(&b.itl, 5);
    b.requests_finished = 4;
    a.requests_finished = 1;
    tt_serve_metrics_add(&a, &b);
    assert_int_equal(a.ttft.count, 3);
    assert_int_equal(a.ttft.sum_ns, 304000000);
    assert_int_equal(a.ttft.counts[1], 2);
    assert_int_equal(a.ttft.counts[9], 1);
    assert_int_equal(a.itl.count, 1);
    assert_int_equal(a.e2e.count, 0);
    assert_int_equal(a.requests_finished, 5);
}

typedef struct log_writer {
    tt_serve_log log;
    int id;
} log_writer;

#define LINES_PER_WRITER 3000

static void *write_lines(void *arg)
{
    log_writer *w = arg;
    for (int k = 0; k < LINES_PER_WRITER; k++) {
        tt_sbuf *b = tt_serve_log_begin(&w->log);
        tt_sbuf_printf(b, "{\"w\":%d,\"k\":%d,\"pad\":\"%0*d\"}\n", w->id, k, 40 + k % 50, k);
        tt_serve_log_commit(&w->log);
        if (k % 97 == 0) (void)tt_serve_log_flush(&w->log);
    }
    return NULL;
}

static void test_log_share(void **state)
{
    char path[] = "/tmp/tt_serve_log_XXXXXX";
    int tmp = mkstemp(path);
    assert_true(tmp >= 0);
    close(tmp);
    tt_serve_log main_log, inactive, shared_inactive;
    char err[200];
    assert_int_equal(tt_serve_log_open(&main_log, path, err, sizeof err), 0);
    tt_sbuf_puts(tt_serve_log_begin(&main_log), "{\"first\":1}\n");
    assert_int_equal(tt_serve_log_flush(&main_log), 0);
    log_writer w[2] = {{.id = 0}, {.id = 1}};
    for (int i = 0; i < 2; i++) tt_serve_log_share(&w[i].log, &main_log);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, write_lines, &w[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) assert_int_equal(tt_serve_log_close(&w[i].log), 0);
    assert_int_equal(tt_serve_log_close(&main_log), 0);

    /* every line whole, each writer's lines in its order */
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256];
    int next[2] = {0, 0}, n = 0;
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "{\"first\":1}\n");
    while (fgets(line, sizeof line, f)) {
        int id, k, used = 0;
        assert_int_equal(sscanf(line, "{\"w\":%d,\"k\":%d,\"pad\":\"%*d\"}\n%n", &id, &k, &used), 2);
        assert_int_equal((size_t)used, strlen(line));
        assert_true(id == 0 || id == 1);
        assert_int_equal(k, next[id]);
        next[id]++;
        n++;
    }
    fclose(f);
    unlink(path);
    assert_int_equal(n, 2 * LINES_PER_WRITER);

    /* sharing an inactive log gives an inactive log */
    assert_int_equal(tt_serve_log_open(&inactive, NULL, err, sizeof err), 0);
    tt_serve_log_share(&shared_inactive, &inactive);
    assert_false(tt_serve_log_active(&shared_inactive));
    assert_null(tt_serve_log_begin(&shared_inactive));
    assert_int_equal(tt_serve_log_close(&shared_inactive), 0);
    assert_int_equal(tt_serve_log_close(&inactive), 0);
}

typedef struct run_args {
    tt_server *srv;
    int stop_fd;
    int rc;
} run_args;

static void *run_server(void *arg)
{
    run_args *a = arg;
    a->rc = tt_server_run(a->srv, a->stop_fd);
    return NULL;
}

static int connect_to(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Read until `end` has been seen `times` times in total (or EOF/timeout); returns the bytes. */
static size_t read_until(int fd, const char *end, int times, char *buf, size_t cap)
{
    size_t len = 0;
    int seen = 0;
    while (len + 1 < cap && seen < times) {
        ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
        if (n <= 0) break;
        len += (size_t)n;
        buf[len] = 0;
        seen = 0;
        for (const char *p = buf; (p = strstr(p, end)); p += strlen(end)) seen++;
    }
    buf[len] = 0;
    return len;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* GET /metrics on a new connection; the whole answer in buf. */
static void fetch_metrics(uint16_t port, char *buf, size_t cap)
{
    int fd = connect_to(port);
    assert_true(fd >= 0);
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(send(fd, req, sizeof req - 1, 0), (ssize_t)(sizeof req - 1));
    read_until(fd, "@@never@@", 1, buf, cap); /* to EOF */
    close(fd);
}

#define CLIENTS 7

static void test_server_three_workers(void **state)
{
    char path[] = "/tmp/tt_serve_wlog_XXXXXX";
    int tmp = mkstemp(path);
    assert_true(tmp >= 0);
    close(tmp);
    tt_serve_config cfg = {
        .profile = tt_serve_profile_find("vllm"),
        .gen = {.default_tokens = 5, .tokens_max = 100, .model = "m", .created = 1700000000},
        .ttft = {.kind = TT_DIST_FIXED, .a_ns = 0},
        .itl = {.kind = TT_DIST_FIXED, .a_ns = 200000},
        .seed = 1, .nodelay = true, .max_body = 1u << 20,
        .faults = {.close_after = -1, .error_after = -1},
        .workers = 3,
    };
    tt_serve_log log;
    char err[200];
    assert_int_equal(tt_serve_log_open(&log, path, err, sizeof err), 0);
    tt_sbuf_puts(tt_serve_log_begin(&log), "{\"type\":\"clock\"}\n");
    tt_server *srv = tt_server_new(&cfg, "127.0.0.1", 0, &log, err, sizeof err);
    assert_non_null(srv);
    const char *addr = tt_server_address(srv);
    uint16_t port = (uint16_t)atoi(strrchr(addr, ':') + 1);
    run_args a = {.srv = srv, .stop_fd = eventfd(0, EFD_CLOEXEC), .rc = -5};
    assert_true(a.stop_fd >= 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, run_server, &a), 0);

    static const char req[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 58\r\n\r\n"
                              "{\"stream\":true,\"max_tokens\":4,\"messages\":[],\"model\":\"m1\"}\n";
    int fds[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        fds[i] = connect_to(port);
        assert_true(fds[i] >= 0);
    }
    static char buf[65536];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < CLIENTS; i++) assert_int_equal(send(fds[i], req, sizeof req - 1, 0), (ssize_t)(sizeof req - 1));
        for (int i = 0; i < CLIENTS; i++) {
            read_until(fds[i], "0\r\n\r\n", 1, buf, sizeof buf);
            assert_int_equal(count_of(buf, "HTTP/1.1 200 OK"), 1);
            assert_int_equal(count_of(buf, "data: "), 6); /* role, 4 tokens, [DONE] */
            assert_int_equal(count_of(buf, "data: [DONE]\n\n\r\n0\r\n\r\n"), 1);
        }
    }
    /* another worker counts its stream's end just after the send: poll until all are in */
    for (int tries = 0; tries < 200; tries++) {
        fetch_metrics(port, buf, sizeof buf);
        if (strstr(buf, "vllm:request_success_total{model_name=\"m\"} 14\n")) break;
        usleep(10000);
    }
    assert_non_null(strstr(buf, "vllm:request_success_total{model_name=\"m\"} 14\n"));
    assert_non_null(strstr(buf, "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 14\n"));
    assert_non_null(strstr(buf, "vllm:inter_token_latency_seconds_count{model_name=\"m\"} 42\n"));
    for (int i = 0; i < CLIENTS; i++) close(fds[i]);

    uint64_t one = 1;
    assert_int_equal(write(a.stop_fd, &one, sizeof one), (ssize_t)sizeof one);
    pthread_join(th, NULL);
    assert_int_equal(a.rc, 0);
    tt_server_free(srv);
    assert_int_equal(tt_serve_log_close(&log), 0);
    close(a.stop_fd);

    /* the log: clock first, then per request a request line and 1 + 6 write lines */
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    int requests = 0, writes = 0, n = 0;
    while (fgets(line, sizeof line, f)) {
        assert_non_null(strchr(line, '\n'));
        if (n++ == 0) assert_string_equal(line, "{\"type\":\"clock\"}\n");
        if (!strncmp(line, "{\"type\":\"request\"", 17) && strstr(line, "\"stream\":true")) requests++;
        if (!strncmp(line, "{\"type\":\"write\"", 15)) writes++;
    }
    fclose(f);
    unlink(path);
    assert_int_equal(requests, 2 * CLIENTS);
    assert_true(writes >= 2 * CLIENTS * 7 + 1); /* head + 6 events each, and the /metrics answer */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_add),
        cmocka_unit_test(test_log_share),
        cmocka_unit_test(test_server_three_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
