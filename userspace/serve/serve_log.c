/* serve_log.c - buffered JSON-lines log; see serve_log.h. */
#include "serve/serve_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LOG_FLUSH_AT (64u * 1024u)

int tt_serve_log_open(tt_serve_log *log, const char *path, char *err, size_t errlen)
{
    *log = (tt_serve_log){.fd = -1};
    if (!path) return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open log '%s': %s", path, strerror(errno));
        return -1;
    }
    log->fd = fd;
    return 0;
}

void tt_serve_log_share(tt_serve_log *log, const tt_serve_log *main)
{
    *log = (tt_serve_log){.fd = tt_serve_log_active(main) ? main->fd : -1, .shared_fd = true};
}

bool tt_serve_log_active(const tt_serve_log *log) { return log->fd >= 0 && !log->failed; }

tt_sbuf *tt_serve_log_begin(tt_serve_log *log) { return tt_serve_log_active(log) ? &log->buf : NULL; }

void tt_serve_log_commit(tt_serve_log *log)
{
    if (log->buf.len >= LOG_FLUSH_AT) (void)tt_serve_log_flush(log);
}

int tt_serve_log_flush(tt_serve_log *log)
{
    if (!tt_serve_log_active(log)) return log->failed ? -1 : 0;
    if (log->buf.oom) {
        fprintf(stderr, "tokentap serve: out of memory building the log; logging stopped\n");
        log->failed = true;
        return -1;
    }
    size_t off = 0;
    while (off < log->buf.len) {
        ssize_t n = write(log->fd, log->buf.p + off, log->buf.len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            fprintf(stderr, "tokentap serve: writing the log failed: %s; logging stopped\n",
                    n < 0 ? strerror(errno) : "no progress");
            log->failed = true;
            return -1;
        }
        off += (size_t)n;
    }
    tt_sbuf_reset(&log->buf);
    return 0;
}

int tt_serve_log_close(tt_serve_log *log)
{
    int rc = tt_serve_log_flush(log);
    if (log->fd >= 0 && !log->shared_fd && close(log->fd) != 0 && rc == 0) {
        fprintf(stderr, "tokentap serve: closing the log failed: %s\n", strerror(errno));
        rc = -1;
    }
    log->fd = -1;
    tt_sbuf_free(&log->buf);
    return rc;
}
