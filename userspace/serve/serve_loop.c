/* serve_loop.c - the event loops of tokentap serve; see serve.h.
 *
 * Each worker is one thread with its own epoll set, timerfd, heap of due
 * streams, connections, log buffer and histograms. Worker 0 owns the
 * listening socket and deals accepted connections round-robin: its own turn
 * it keeps, the others go through a worker's inbox (a locked fd list and an
 * eventfd). A connection stays on its worker for life, so nothing on the
 * per-event path is shared except the request counter (an atomic), the log
 * file (whole-line appends from each worker's buffer) and each worker's
 * histogram lock, which only a /metrics request on another worker contends. */
#include "serve/serve_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "proto/http1.h"
#include "serve/serve_metrics.h"

static void wake_worker(serve_worker *w)
{
    uint64_t one = 1;
    ssize_t n = write(w->inbox_fd, &one, sizeof one);
    (void)n; /* an eventfd counter that is already non-zero wakes the worker anyway */
}

/* A descriptor was freed: let worker 0 accept again if it had stopped. */
void tt_serve_resume_accept(serve_worker *s)
{
    tt_server *srv = s->server;
    if (!atomic_load_explicit(&srv->accept_paused, memory_order_relaxed)) return;
    if (s->listen_fd < 0) {
        wake_worker(srv->workers[0]);
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->listen_tag};
    if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &ev) == 0) atomic_store(&srv->accept_paused, false);
}

/* Put an accepted socket in worker w's inbox. */
static void hand_over(serve_worker *w, int fd, const struct sockaddr_storage *ss)
{
    bool queued = false;
    pthread_mutex_lock(&w->inbox_lock);
    if (w->inbox_n == w->inbox_cap) {
        size_t cap = w->inbox_cap ? w->inbox_cap * 2 : 64;
        handoff *p = realloc(w->inbox, cap * sizeof *p);
        if (p) {
            w->inbox = p;
            w->inbox_cap = cap;
        }
    }
    if (w->inbox_n < w->inbox_cap) {
        w->inbox[w->inbox_n++] = (handoff){.fd = fd, .peer = *ss};
        queued = true;
    }
    pthread_mutex_unlock(&w->inbox_lock);
    if (!queued) {
        close(fd);
        return;
    }
    wake_worker(w);
}

/* The inbox's eventfd fired: adopt what was handed over (and see whether to stop). */
static void take_inbox(serve_worker *s)
{
    uint64_t count;
    while (read(s->inbox_fd, &count, sizeof count) > 0) {
    }
    for (;;) {
        handoff batch[64];
        size_t n = 0;
        pthread_mutex_lock(&s->inbox_lock);
        n = s->inbox_n < 64 ? s->inbox_n : 64;
        memcpy(batch, s->inbox + (s->inbox_n - n), n * sizeof *batch);
        s->inbox_n -= n;
        pthread_mutex_unlock(&s->inbox_lock);
        if (n == 0) break;
        for (size_t i = 0; i < n; i++) tt_serve_conn_adopt(s, batch[i].fd, &batch[i].peer);
    }
    tt_serve_resume_accept(s);
}

/* Worker 0: accept every waiting connection, dealing them round-robin. */
static void accept_all(serve_worker *s)
{
    tt_server *srv = s->server;
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                if (!s->warned_accept)
                    fprintf(stderr, "tokentap serve: cannot accept more connections: %s\n", strerror(errno));
                s->warned_accept = true;
                if (epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL) == 0)
                    atomic_store(&srv->accept_paused, true);
            }
            return;
        }
        unsigned to = srv->next_worker;
        srv->next_worker = to + 1 < srv->n_workers ? to + 1 : 0;
        if (to == 0) tt_serve_conn_adopt(s, fd, &ss);
        else hand_over(srv->workers[to], fd, &ss);
    }
}

/* ---- the server ---- */

static void worker_free(serve_worker *w)
{
    if (!w) return;
    while (w->conns) tt_serve_conn_kill(w->conns);
    while (w->dead) {
        serve_conn *c = w->dead;
        w->dead = c->next_dead;
        tt_serve_conn_free(c);
    }
    for (size_t i = 0; i < w->inbox_n; i++) close(w->inbox[i].fd);
    free(w->inbox);
    tt_heap_free(&w->heap);
    if (w->epoll_fd >= 0) close(w->epoll_fd);
    if (w->timer_fd >= 0) close(w->timer_fd);
    if (w->inbox_fd >= 0) close(w->inbox_fd);
    if (w->log == &w->own_log) (void)tt_serve_log_close(&w->own_log);
    pthread_mutex_destroy(&w->inbox_lock);
    pthread_mutex_destroy(&w->metrics_lock);
    free(w);
}

static serve_worker *worker_new(tt_server *srv, unsigned index, const tt_serve_config *cfg, tt_serve_log *log,
                                char *err, size_t errlen)
{
    serve_worker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->server = srv;
    w->index = index;
    w->cfg = *cfg;
    w->listen_fd = -1;
    w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    w->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    w->inbox_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&w->inbox_lock, NULL);
    pthread_mutex_init(&w->metrics_lock, NULL);
    tt_serve_metrics_init(&w->metrics);
    if (index == 0) {
        w->log = log;
    } else {
        tt_serve_log_share(&w->own_log, log);
        w->log = &w->own_log;
    }
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &w->timer_tag};
    struct epoll_event iev = {.events = EPOLLIN, .data.ptr = &w->inbox_tag};
    if (w->epoll_fd < 0 || w->timer_fd < 0 || w->inbox_fd < 0 ||
        epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->timer_fd, &tev) != 0 ||
        epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, w->inbox_fd, &iev) != 0) {
        snprintf(err, errlen, "epoll/timerfd/eventfd setup: %s", strerror(errno));
        worker_free(w);
        return NULL;
    }
    return w;
}

tt_server *tt_server_new(const tt_serve_config *cfg, const char *host, uint16_t port,
                         tt_serve_log *log, char *err, size_t errlen)
{
    unsigned n_workers = cfg->workers ? cfg->workers : 1;
    if (n_workers > TT_SERVE_MAX_WORKERS) {
        snprintf(err, errlen, "at most %d workers", TT_SERVE_MAX_WORKERS);
        return NULL;
    }
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(gai));
        return NULL;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        freeaddrinfo(res);
        return NULL;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
        snprintf(err, errlen, "cannot listen on %s:%u: %s", host, port, strerror(errno));
        close(fd);
        freeaddrinfo(res);
        return NULL;
    }
    freeaddrinfo(res);
    tt_server *s = calloc(1, sizeof *s);
    if (s) s->workers = calloc(n_workers, sizeof *s->workers);
    if (!s || !s->workers) {
        free(s);
        close(fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->halt_fd = -1;
    if (cfg->tls_cert && !(s->tls = tt_serve_tls_new(cfg->tls_cert, cfg->tls_key, cfg->http2, err, errlen))) {
        close(fd);
        free(s->workers);
        free(s);
        return NULL;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    tt_serve_format_addr((struct sockaddr *)&ss, s->address, sizeof s->address);
    for (unsigned i = 0; i < n_workers; i++) {
        s->workers[i] = worker_new(s, i, cfg, log, err, errlen);
        if (!s->workers[i]) {
            close(fd);
            tt_server_free(s);
            return NULL;
        }
        s->n_workers = i + 1;
    }
    serve_worker *w0 = s->workers[0];
    w0->listen_fd = fd;
    s->halt_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &w0->listen_tag};
    struct epoll_event hev = {.events = EPOLLIN, .data.ptr = &w0->halt_tag};
    if (s->halt_fd < 0 || epoll_ctl(w0->epoll_fd, EPOLL_CTL_ADD, fd, &lev) != 0 ||
        epoll_ctl(w0->epoll_fd, EPOLL_CTL_ADD, s->halt_fd, &hev) != 0) {
        snprintf(err, errlen, "epoll/eventfd setup: %s", strerror(errno));
        tt_server_free(s);
        return NULL;
    }
    return s;
}

const char *tt_server_address(const tt_server *s) { return s->address; }

static void arm_timer(serve_worker *s)
{
    tt_heap_item *top = tt_heap_top(&s->heap);
    uint64_t due = top ? top->due_ns : 0;
    if (due == s->armed_ns) return;
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)(due / 1000000000ull);
    its.it_value.tv_nsec = (long)(due % 1000000000ull);
    if (timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0) s->armed_ns = due;
}

static void run_timers(serve_worker *s)
{
    uint64_t expirations;
    while (read(s->timer_fd, &expirations, sizeof expirations) > 0) {
    }
    s->armed_ns = 0;
    uint64_t now = tt_serve_mono_ns();
    tt_heap_item *top;
    while ((top = tt_heap_top(&s->heap)) && top->due_ns <= now) {
        serve_conn *c = (serve_conn *)top;
        tt_heap_remove(&s->heap, top);
        tt_serve_emit_due(c, now);
        tt_serve_conn_pump(c);
    }
}

static void reap(serve_worker *s)
{
    while (s->dead) {
        serve_conn *c = s->dead;
        s->dead = c->next_dead;
        tt_serve_conn_free(c);
    }
}

/* One worker's event loop. Worker 0 also accepts, and returns when the stop
 * fd becomes readable or another worker failed (-1); the others return when
 * their stop flag is set. */
static int worker_loop(serve_worker *s)
{
    struct epoll_event evs[256];
    for (;;) {
        arm_timer(s);
        int n = epoll_wait(s->epoll_fd, evs, 256, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "tokentap serve: epoll_wait: %s\n", strerror(errno));
            return -1;
        }
        bool stop = false, halt = false;
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &s->stop_tag) { stop = true; continue; }
            if (tag == &s->halt_tag) { halt = true; continue; }
            if (tag == &s->listen_tag) { accept_all(s); continue; }
            if (tag == &s->timer_tag) { run_timers(s); continue; }
            if (tag == &s->inbox_tag) {
                take_inbox(s);
                if (atomic_load(&s->stop)) stop = true;
                continue;
            }
            serve_conn *c = tag;
            if (c->dead) continue;
            uint32_t e = evs[i].events;
            if ((e & EPOLLERR) || ((e & EPOLLHUP) && !(e & EPOLLIN))) {
                tt_serve_conn_kill(c);
                continue;
            }
            if (e & EPOLLOUT) tt_serve_conn_writable(c);
            if (!c->dead && (e & EPOLLIN) && c->reading) tt_serve_conn_readable(c);
            else if (!c->dead) tt_serve_conn_pump(c);
        }
        reap(s);
        if (halt) return -1;
        if (stop) return 0;
    }
}

static void *worker_thread(void *arg)
{
    serve_worker *w = arg;
    w->rc = worker_loop(w);
    if (w->rc != 0) {
        uint64_t one = 1;
        ssize_t n = write(w->server->halt_fd, &one, sizeof one);
        (void)n;
    }
    return NULL;
}

int tt_server_run(tt_server *s, int stop_fd)
{
    serve_worker *w0 = s->workers[0];
    if (stop_fd >= 0) {
        struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &w0->stop_tag};
        if (epoll_ctl(w0->epoll_fd, EPOLL_CTL_ADD, stop_fd, &sev) != 0) {
            fprintf(stderr, "tokentap serve: epoll: %s\n", strerror(errno));
            return -1;
        }
    }
    /* Lines already buffered (the clock line) go first, before any worker's. */
    if (s->n_workers > 1) (void)tt_serve_log_flush(w0->log);
    int rc = 0;
    for (unsigned i = 1; i < s->n_workers; i++) {
        serve_worker *w = s->workers[i];
        int e = pthread_create(&w->thread, NULL, worker_thread, w);
        if (e != 0) {
            fprintf(stderr, "tokentap serve: cannot start worker %u: %s\n", i, strerror(e));
            rc = -1;
            break;
        }
        w->thread_started = true;
    }
    if (rc == 0) rc = worker_loop(w0);
    for (unsigned i = 1; i < s->n_workers; i++) {
        serve_worker *w = s->workers[i];
        if (!w->thread_started) continue;
        atomic_store(&w->stop, true);
        wake_worker(w);
        pthread_join(w->thread, NULL);
        w->thread_started = false;
        if (w->rc != 0) rc = -1;
        if (tt_serve_log_flush(w->log) != 0) rc = -1;
    }
    return rc;
}

void tt_server_free(tt_server *s)
{
    if (!s) return;
    for (unsigned i = 0; i < s->n_workers; i++) {
        serve_worker *w = s->workers[i];
        if (w->listen_fd >= 0) close(w->listen_fd);
        w->listen_fd = -1;
        atomic_store(&s->accept_paused, false);
        worker_free(w);
    }
    if (s->halt_fd >= 0) close(s->halt_fd);
    tt_serve_tls_free(s->tls);
    free(s->workers);
    free(s);
}
