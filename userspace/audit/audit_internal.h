/* audit_internal.h - the stages of one audit cell, between cmd/audit.c
 * (which runs serve and the tool) and the card's writers: the truth read
 * from serve's log, the grading of what the tool reported against it, and
 * the causes drawn from the evidence across cells. */
#ifndef TT_AUDIT_INTERNAL_H
#define TT_AUDIT_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit/audit.h"

struct cJSON;

/* The integer field key of JSON object o (NULL-safe); false when absent,
 * not a number, or beyond 2^53 (no instant or count of serve's log or
 * run's report is, and beyond it a double is not exact). Shared by the
 * readers of serve's log and of run's report. */
bool tt_audit_int_field(const struct cJSON *o, const char *key, int64_t *out);

/* One request as `tokentap serve` answered it, from its --log. */
typedef struct tt_truth_req {
    char peer[64];            /* the client's ip:port */
    uint32_t ordinal;         /* 1-based on its connection */
    char request_id[128];     /* x-request-id, "" when none */
    char path[64];
    int status;
    bool stream, generation;  /* generation: the line carried "tokens" */
    int64_t read_ns;          /* request_read_ns */
    int64_t tokens;           /* output tokens serve generated */
    int64_t events_total;     /* events the stream holds (streams) */
    int64_t events_written;   /* events completed by the logged writes */
    int64_t *token_ns;        /* mono_ns of the write completing each token event */
    size_t n_token, cap_token;
} tt_truth_req;

typedef struct tt_truth {
    tt_truth_req *reqs;       /* in log order (the order answers started) */
    size_t n, cap;
    size_t bad_lines;         /* lines that were not JSON objects of a known type */
} tt_truth;

/* Read serve's log at path into t (zeroed first). 0, or -1 with a
 * one-line reason in err (unreadable, out of memory). Lines that cannot be
 * used are counted, not fatal: the log of a server killed mid-write may end
 * in half a line. Free with tt_truth_free. */
int tt_truth_load(const char *path, tt_truth *t, char *err, size_t errlen);
void tt_truth_free(tt_truth *t);

/* The request on connection peer at 1-based ordinal, or NULL. */
const tt_truth_req *tt_truth_find(const tt_truth *t, const char *peer, uint32_t ordinal);

/* True when every event of r was written (the stream reached its end). */
bool tt_truth_ended(const tt_truth_req *r);

/* Streams serve wrote to their end, and the count of its log's `done`
 * events in the bytes of buf (for the progress line). */
size_t tt_truth_count_done(const char *buf, size_t len);

/* What the cell's grading reads besides the truth. */
typedef struct tt_cell_inputs {
    const char *run_report;   /* `tokentap run --json` document */
    const char *result_path;  /* the tool's result file */
    const char *serve_log;
    double tolerance_ms, tolerance_pct;
} tt_cell_inputs;

/* Per-request evidence kept for the causes across cells. */
typedef struct tt_cell_evidence {
    /* finding ids seen on requests the tool counted successful, and on
     * requests it failed although they were delivered: comma-joined sets */
    char ok_findings[1024];
    char failed_findings[1024];
    char failed_error[160];   /* the tool's error text of one such request */
    char paths[256];          /* the request paths in run's report (query cut), comma-joined: the tool's API */
} tt_cell_evidence;

/* Grade cell c (its profile, concurrency, cmd_status already set) from the
 * inputs; fills counts, errors, overhead, the samples and the causes that
 * one cell's evidence shows. ev gets what tt_audit_cross_causes needs.
 * Returns 0, or -1 when out of memory. A problem with the inputs (no
 * result file, an unknown format, no report) is put in c->cmd_problem and
 * leaves the cell ungraded, not an error. */
int tt_audit_grade_cell(tt_audit_cell *c, const tt_cell_inputs *in, tt_cell_evidence *ev);

/* The causes that need several cells: a failure delivered in full is
 * pinned on the findings its requests carried and no request the tool
 * counted successful did. Then every cell's within_tolerance. */
int tt_audit_cross_causes(tt_audit_card *card, const tt_cell_evidence *ev);

/* How every run of the tool is made (cmd/audit.c fills it once). */
typedef struct tt_audit_run_plan {
    const char *self_exe;       /* this binary: serve and run are its subcommands */
    char **cmd;                 /* CMD ARGS, placeholders unfilled, NULL-terminated */
    double ttft_ms, itl_ms;     /* serve's schedule */
    unsigned tokens;
    double tolerance_ms, tolerance_pct;
    double timeout_s;           /* a run's process group is killed after it */
    bool quiet;                 /* no progress line */
    bool server_vantage;        /* pass --server-port to run (root: eBPF and the wire) */
    volatile sig_atomic_t *interrupted; /* set by a signal: stop the run in progress */
} tt_audit_run_plan;

/* Where a run goes: its number, how the progress line counts it, its directory. */
typedef struct tt_audit_run_slot {
    size_t index;               /* 0-based: the run's number, and its x-request-id prefix ttN- */
    char of[48];                /* " of N", or what the run is for */
    char dir[4096];             /* made by the caller; the run's files go there */
} tt_audit_run_slot;

/* Run the tool once against a fresh serve under c->profile at
 * c->concurrency (c->requests_asked filled in), then grade it into c (and
 * ev, as tt_audit_grade_cell). Returns 0 (CMD's failures are in c),
 * TT_EXIT_INPUT when serve could not start, TT_EXIT_INTERNAL out of memory. */
int tt_audit_run_cell(const tt_audit_run_plan *p, tt_audit_cell *c, const tt_audit_run_slot *slot,
                      tt_cell_evidence *ev);

/* Append a cause to c; -1 when out of memory. */
int tt_audit_add_cause(tt_audit_cell *c, const char *finding, size_t requests, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
