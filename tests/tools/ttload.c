/* ttload - a load client for `tokentap serve` (make bench, the e2e tests).
 *
 * One thread, one epoll set. Opens C keep-alive connections to HOST:PORT and
 * sends streaming POST /v1/chat/completions requests on each, one after the
 * other, until R requests are done or the time limit passes. Responses are
 * read with the project's HTTP/1.1 parser (chunked coding removed) and SSE
 * events counted by their blank-line separators (LF LF or CRLF CRLF).
 * Prints one JSON line of totals on stdout.
 *
 * Bounded on purpose: it refuses any target that is not loopback
 * (127.0.0.0/8 or ::1); it is a tool for measuring a local server. */
#include "proto/http1.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct load_options {
    int connections;
    uint64_t requests;    /* 0: no limit but the time */
    double seconds;
    int tokens;
    bool include_usage;
    bool busy_poll;       /* poll epoll without sleeping (fewer wake-ups for the server to pay) */
    const char *path;
    const char *target;
} load_options;

typedef struct load_totals {
    uint64_t requests_sent, requests_done, conns_served, events, errors, bad_status, body_bytes;
    int open_now, open_peak, in_flight_now, in_flight_peak;
} load_totals;

typedef struct sse_counter {
    uint64_t line_len;      /* bytes since the last LF */
    bool line_is_cr;        /* those bytes are exactly one CR */
    bool event_has_lines;   /* a non-blank line since the last separator */
} sse_counter;

struct load_state;

typedef struct load_conn {
    struct load_state *load;
    int fd;
    int index;
    bool connecting, in_stream, want_out, failed;
    uint64_t seq;           /* requests started on this connection */
    uint64_t done_here;     /* requests completed since the last connect */
    uint64_t done_ever;
    char out[512];
    size_t out_len, out_off;
    tt_http1_parser *parser;
    sse_counter sse;
} load_conn;

typedef struct load_state {
    load_options opt;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    int epfd;
    load_conn *conns;
    load_totals t;
    bool stopping;
} load_state;

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { (void)sig; interrupted = 1; }

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    }
    return false;
}

/* HOST:PORT or [V6]:PORT; numeric hosts only (no name lookups), plus "localhost". */
static int resolve_target(load_state *s, const char *target)
{
    char host[128];
    const char *port;
    if (target[0] == '[') {
        const char *close = strchr(target, ']');
        if (!close || close[1] != ':' || (size_t)(close - target - 1) >= sizeof host) return -1;
        memcpy(host, target + 1, (size_t)(close - target - 1));
        host[close - target - 1] = 0;
        port = close + 2;
    } else {
        const char *colon = strrchr(target, ':');
        if (!colon || (size_t)(colon - target) >= sizeof host) return -1;
        memcpy(host, target, (size_t)(colon - target));
        host[colon - target] = 0;
        port = colon + 1;
    }
    if (!strcmp(host, "localhost")) strcpy(host, "127.0.0.1");
    char *end;
    long p = strtol(port, &end, 10);
    if (!*port || *end || p < 1 || p > 65535) return -1;
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res) return -1;
    bool ok = is_loopback(res->ai_addr) && res->ai_addrlen <= sizeof s->addr;
    if (ok) {
        memcpy(&s->addr, res->ai_addr, res->ai_addrlen);
        s->addr_len = res->ai_addrlen;
    }
    freeaddrinfo(res);
    return ok ? 0 : -2;
}

static void sse_count(load_totals *t, sse_counter *c, const uint8_t *data, size_t len)
{
    const uint8_t *p = data, *end = data + len;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            size_t n = (size_t)(end - p);
            c->line_is_cr = (c->line_len == 0 && n == 1 && p[0] == '\r');
            c->line_len += n;
            return;
        }
        size_t n = (size_t)(nl - p);
        uint64_t line_len = c->line_len + n;
        bool blank = line_len == 0 || (line_len == 1 && (n == 1 ? p[0] == '\r' : c->line_is_cr));
        if (blank) {
            if (c->event_has_lines) t->events++;
            c->event_has_lines = false;
        } else {
            c->event_has_lines = true;
        }
        c->line_len = 0;
        c->line_is_cr = false;
        p = nl + 1;
    }
}

static void on_head(void *ud, const tt_http_head *head)
{
    load_conn *c = ud;
    if (head->interim) return;
    if (head->status != 200) {
        c->load->t.bad_status++;
        c->failed = true;
    }
}

static void on_body(void *ud, const uint8_t *data, size_t len, uint64_t body_off, uint64_t ns)
{
    load_conn *c = ud;
    c->load->t.body_bytes += len;
    sse_count(&c->load->t, &c->sse, data, len);
}

static void on_end(void *ud, const tt_http_msg_end *end)
{
    load_conn *c = ud;
    c->load->t.in_flight_now--;
    c->in_stream = false;
    if (end->how != TT_HTTP_END_COMPLETE || c->failed) {
        c->failed = true;
        return;
    }
    c->load->t.requests_done++;
    if (c->done_ever++ == 0) c->load->t.conns_served++;
    c->done_here++;
    c->sse = (sse_counter){0};
}

static void on_error(void *ud, tt_http_error code, const char *msg, uint64_t off)
{
    load_conn *c = ud;
    c->failed = true;
    fprintf(stderr, "ttload: connection %d: response parse error at %llu: %s\n", c->index,
            (unsigned long long)off, msg ? msg : "?");
}

static const tt_http_callbacks load_callbacks = {on_head, on_body, on_end, on_error};

static void set_interest(load_conn *c, bool want_out)
{
    if (c->want_out == want_out) return;
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(c->load->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want_out;
}

static void close_conn(load_conn *c)
{
    if (c->fd < 0) return;
    if (c->in_stream) c->load->t.in_flight_now--;
    c->in_stream = false;
    close(c->fd);
    c->fd = -1;
    c->load->t.open_now--;
    tt_http1_free(c->parser);
    c->parser = NULL;
}

static int open_conn(load_conn *c)
{
    load_state *s = c->load;
    int fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&s->addr, s->addr_len) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    c->parser = tt_http1_new(TT_HTTP_RESPONSE, &load_callbacks, c);
    if (!c->parser) {
        close(fd);
        return -1;
    }
    c->fd = fd;
    c->connecting = true;
    c->failed = false;
    c->done_here = 0;
    c->out_len = c->out_off = 0;
    c->sse = (sse_counter){0};
    c->want_out = true;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        tt_http1_free(c->parser);
        c->parser = NULL;
        close(fd);
        c->fd = -1;
        return -1;
    }
    s->t.open_now++;
    if (s->t.open_now > s->t.open_peak) s->t.open_peak = s->t.open_now;
    return 0;
}

static bool may_start_request(const load_state *s)
{
    return !s->stopping && (s->opt.requests == 0 || s->t.requests_sent < s->opt.requests);
}

static void flush_out(load_conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                set_interest(c, true);
                return;
            }
            if (errno == EINTR) continue;
            c->failed = true;
            return;
        }
        c->out_off += (size_t)n;
    }
    set_interest(c, false);
}

static void start_request(load_conn *c)
{
    load_state *s = c->load;
    char body[256];
    int blen = snprintf(body, sizeof body,
                        "{\"model\":\"m\",\"stream\":true,\"max_tokens\":%d,%s"
                        "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}",
                        s->opt.tokens, s->opt.include_usage ? "\"stream_options\":{\"include_usage\":true}," : "");
    int n = snprintf(c->out, sizeof c->out,
                     "POST %s HTTP/1.1\r\nHost: load\r\nContent-Type: application/json\r\n"
                     "x-request-id: ttload-%d-%llu\r\nContent-Length: %d\r\n\r\n%s",
                     s->opt.path, c->index, (unsigned long long)c->seq, blen, body);
    if (n < 0 || (size_t)n >= sizeof c->out) {
        c->failed = true;
        return;
    }
    c->seq++;
    c->out_len = (size_t)n;
    c->out_off = 0;
    c->in_stream = true;
    s->t.requests_sent++;
    if (++s->t.in_flight_now > s->t.in_flight_peak) s->t.in_flight_peak = s->t.in_flight_now;
    tt_http1_expect_response(c->parser, false);
    flush_out(c);
}

/* The connection failed or the server closed it: count an error, and open a
 * new one when this one had been useful (so a dead server cannot spin us). */
static void fail_conn(load_conn *c)
{
    load_state *s = c->load;
    bool had_progress = c->done_here > 0;
    if (!s->stopping) s->t.errors++;
    close_conn(c);
    if (had_progress && may_start_request(s) && open_conn(c) != 0) s->t.errors++;
}

static void handle_readable(load_conn *c, uint8_t *buf, size_t cap)
{
    for (;;) {
        ssize_t n = recv(c->fd, buf, cap, 0);
        if (n > 0) {
            tt_http1_feed(c->parser, buf, (size_t)n, 0);
            if ((size_t)n < cap || c->failed) return;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n < 0 && errno == EINTR) continue;
        /* EOF or reset: an error unless the connection was idle after the last request */
        if (c->in_stream || may_start_request(c->load)) c->failed = true;
        else close_conn(c);
        return;
    }
}

static void handle_event(load_conn *c, uint32_t events, uint8_t *buf, size_t cap)
{
    if (c->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        if ((events & (EPOLLERR | EPOLLHUP)) || getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
            fail_conn(c);
            return;
        }
        c->connecting = false;
        if (may_start_request(c->load)) start_request(c);
        else set_interest(c, false);
    } else if (events & EPOLLOUT) {
        flush_out(c);
    }
    if (c->fd >= 0 && !c->failed && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) handle_readable(c, buf, cap);
    if (c->fd < 0) return;
    if (c->failed) {
        fail_conn(c);
        return;
    }
    if (!c->in_stream) {
        if (may_start_request(c->load)) start_request(c);
        else close_conn(c);
        if (c->fd >= 0 && c->failed) fail_conn(c);
    }
}

static int raise_fd_limit(int connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
    rlim_t need = (rlim_t)connections + 64;
    if (rl.rlim_cur >= need) return 0;
    if (rl.rlim_max < need) rl.rlim_max = need; /* only root may raise the hard limit */
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0) return 0;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    return rl.rlim_cur >= need ? 0 : -1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: ttload [-c CONNECTIONS] [-n REQUESTS] [-d SECONDS] [-T MAX_TOKENS] [--usage]\n"
            "              [--path PATH] [--busy-poll] HOST:PORT\n"
            "  HOST must be loopback (127.0.0.0/8, ::1 or localhost). Defaults: -c 10 -d 10 -T 16,\n"
            "  requests unlimited (until -d), path /v1/chat/completions.\n"
            "  --busy-poll: never sleep in epoll_wait (takes a whole core; spares the server\n"
            "  the cost of waking this process on every send).\n");
}

static int parse_options(load_options *o, int argc, char **argv)
{
    *o = (load_options){.connections = 10, .seconds = 10, .tokens = 16, .path = "/v1/chat/completions"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--usage")) {
            o->include_usage = true;
        } else if (!strcmp(a, "--busy-poll")) {
            o->busy_poll = true;
        } else if (!strcmp(a, "-c") && v) {
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1000000) return -1;
            o->connections = (int)n;
            i++;
        } else if (!strcmp(a, "-n") && v) {
            unsigned long long n = strtoull(v, &end, 10);
            if (*end || v[0] == '-') return -1;
            o->requests = n;
            i++;
        } else if (!strcmp(a, "-d") && v) {
            o->seconds = strtod(v, &end);
            if (*end || !(o->seconds > 0) || o->seconds > 86400) return -1;
            i++;
        } else if (!strcmp(a, "-T") && v) {
            long n = strtol(v, &end, 10);
            if (*end || n < 0 || n > 1000000) return -1;
            o->tokens = (int)n;
            i++;
        } else if (!strcmp(a, "--path") && v) {
            if (v[0] != '/' || strlen(v) > 200 || strpbrk(v, " \r\n")) return -1;
            o->path = v;
            i++;
        } else if (a[0] != '-' && !o->target) {
            o->target = a;
        } else {
            return -1;
        }
    }
    return o->target ? 0 : -1;
}

int main(int argc, char **argv)
{
    load_state s = {.epfd = -1};
    if (parse_options(&s.opt, argc, argv) != 0) {
        usage();
        return 2;
    }
    int r = resolve_target(&s, s.opt.target);
    if (r == -2) {
        fprintf(stderr, "ttload: refusing %s: only loopback targets (127.0.0.0/8, ::1) are allowed\n", s.opt.target);
        return 2;
    }
    if (r != 0) {
        fprintf(stderr, "ttload: bad target '%s' (want HOST:PORT with a numeric loopback HOST)\n", s.opt.target);
        return 2;
    }
    if (raise_fd_limit(s.opt.connections) != 0) {
        fprintf(stderr, "ttload: cannot raise RLIMIT_NOFILE to %d\n", s.opt.connections + 64);
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);

    s.epfd = epoll_create1(EPOLL_CLOEXEC);
    s.conns = calloc((size_t)s.opt.connections, sizeof *s.conns);
    size_t buf_cap = 256 * 1024;
    uint8_t *buf = malloc(buf_cap);
    enum { MAX_EVENTS = 512 };
    struct epoll_event *events = calloc(MAX_EVENTS, sizeof *events);
    if (s.epfd < 0 || !s.conns || !buf || !events) {
        fprintf(stderr, "ttload: out of memory or epoll: %s\n", strerror(errno));
        return 1;
    }
    uint64_t t0 = mono_ns();
    uint64_t deadline = t0 + (uint64_t)(s.opt.seconds * 1e9);
    for (int i = 0; i < s.opt.connections; i++) {
        load_conn *c = &s.conns[i];
        *c = (load_conn){.load = &s, .fd = -1, .index = i};
        if (open_conn(c) != 0) {
            fprintf(stderr, "ttload: connection %d: %s\n", i, strerror(errno));
            s.t.errors++;
        }
    }
    while (!interrupted && s.t.open_now > 0) {
        uint64_t now = mono_ns();
        if (now >= deadline) break;
        if (s.opt.requests && s.t.requests_done >= s.opt.requests) break;
        int wait_ms = (int)((deadline - now) / 1000000u) + 1;
        int n = epoll_wait(s.epfd, events, MAX_EVENTS, s.opt.busy_poll ? 0 : wait_ms);
        if (n < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "ttload: epoll_wait: %s\n", strerror(errno));
            s.t.errors++;
            break;
        }
        for (int i = 0; i < n; i++) {
            load_conn *c = events[i].data.ptr;
            if (c->fd >= 0) handle_event(c, events[i].events, buf, buf_cap);
        }
    }
    double seconds = (double)(mono_ns() - t0) / 1e9;
    s.stopping = true;
    uint64_t unfinished = 0;
    for (int i = 0; i < s.opt.connections; i++) {
        if (s.conns[i].in_stream) unfinished++;
        close_conn(&s.conns[i]);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("{\"connections\":%d,\"requests\":%llu,\"events\":%llu,\"seconds\":%.3f,\"events_per_s\":%.0f,"
           "\"errors\":%llu,\"bad_status\":%llu,\"peak_connections\":%d,\"peak_in_flight\":%d,"
           "\"connections_served\":%llu,\"unfinished\":%llu,\"body_bytes\":%llu,\"cpu_s\":%.3f}\n",
           s.opt.connections, (unsigned long long)s.t.requests_done, (unsigned long long)s.t.events, seconds,
           seconds > 0 ? (double)s.t.events / seconds : 0.0, (unsigned long long)s.t.errors,
           (unsigned long long)s.t.bad_status, s.t.open_peak, s.t.in_flight_peak,
           (unsigned long long)s.t.conns_served, (unsigned long long)unfinished,
           (unsigned long long)s.t.body_bytes, cpu);
    fflush(stdout);
    free(events);
    free(buf);
    free(s.conns);
    close(s.epfd);
    return s.t.errors ? 1 : 0;
}
