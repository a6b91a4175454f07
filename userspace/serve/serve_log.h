/* serve_log.h - the ground-truth log of tokentap serve: JSON lines built in
 * a memory buffer and written out when it fills and at every response end.
 * The file is created (or truncated) with mode 0600 and opened O_APPEND, so
 * several logs sharing it (one per worker thread) each append whole lines
 * with one write() per flush. */
#ifndef TT_SERVE_LOG_H
#define TT_SERVE_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/sbuf.h"

typedef struct tt_serve_log {
    int fd;          /* -1: no log */
    tt_sbuf buf;
    bool failed;     /* a write failed; reported once, logging stops */
    bool shared_fd;  /* the fd belongs to another log (tt_serve_log_share) */
} tt_serve_log;

/* Open path for the log; path NULL means no log (all calls become no-ops).
 * Returns 0, or -1 with a reason in err. */
int tt_serve_log_open(tt_serve_log *log, const char *path, char *err, size_t errlen);
/* Make `log` a second writer of main's file with its own buffer (for a
 * worker thread): an inactive main gives an inactive log. Closing it flushes
 * its lines but leaves the file open; main must be closed after it. */
void tt_serve_log_share(tt_serve_log *log, const tt_serve_log *main);
/* Whether lines are being kept. */
bool tt_serve_log_active(const tt_serve_log *log);
/* Buffer to append one line to (the caller ends it with '\n'); then call
 * tt_serve_log_commit. NULL when inactive. */
tt_sbuf *tt_serve_log_begin(tt_serve_log *log);
/* Write out when the buffer holds more than its threshold. */
void tt_serve_log_commit(tt_serve_log *log);
/* Write everything buffered; -1 on a write error (reported on stderr once). */
int tt_serve_log_flush(tt_serve_log *log);
/* Flush and close. */
int tt_serve_log_close(tt_serve_log *log);

#endif
