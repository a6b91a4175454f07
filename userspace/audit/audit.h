/* audit.h - `tokentap audit -- CMD`: the report card of a benchmark tool
 * (docs/audit.md). For each server framing (a `tokentap serve` profile)
 * and each concurrency, the tool runs against serve under `tokentap run`;
 * what it reported (its result file) is graded against the truth: serve's
 * log (the instant of every token write) and the client socket vantage.
 *
 * The pipeline of one cell: truth (audit_truth.c, serve's log) + the run's
 * joined report (audit_cell.c reads `tokentap run --json`) + the tool's
 * result file (import/) -> one tt_audit_cell -> the card's writers (text
 * and JSON in audit_report.c, HTML in audit_html.c). */
#ifndef TT_AUDIT_H
#define TT_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* mean, median and p99 of a signed sample (reported minus true, ns). */
typedef struct tt_audit_stat {
    size_t n;                 /* 0: no sample, every field below meaningless (JSON null) */
    double mean, median, p99;
} tt_audit_stat;

/* median and p99 of an overhead (ns); n 0 when no vantage gives it. */
typedef struct tt_audit_overhead {
    size_t n;
    double median, p99;
} tt_audit_overhead;

/* One mis-measurement, named only when the evidence shows it. */
typedef struct tt_audit_cause {
    char finding[40];         /* lint finding id (docs/framing.md), "" when none explains it */
    char symptom[480];        /* one sentence: what the tool got wrong, by how much */
    size_t requests;          /* requests it touched */
} tt_audit_cause;

/* One (profile, concurrency) run of the tool. */
typedef struct tt_audit_cell {
    char profile[16];         /* serve profile: vllm, tabby, ... */
    unsigned concurrency;
    unsigned requests_asked;  /* what {requests} said */

    /* how the run went */
    int cmd_status;           /* CMD's exit status (tokentap run passes it through) */
    char cmd_problem[400];    /* "" or one line: CMD failed, wrote no result file, unreadable format */
    char result_format[16];   /* the detected format of the result file, "" when none */
    bool graded;              /* a result file was read and joined */

    /* counts */
    size_t requests_sent;     /* generation requests seen at the client socket */
    size_t server_completed;  /* streams serve wrote to their end (every token, then the end) */
    size_t records;           /* records in the result file */
    size_t records_matched;   /* records joined to a request */
    size_t reported_ok;       /* records the tool counted successful */
    size_t failed_but_delivered;  /* counted failed, yet every token reached the client socket */
    size_t ok_but_undelivered;    /* counted successful, yet the stream did not complete */
    int64_t tokens_reported, tokens_true;             /* over matched records; -1 unknown */
    int64_t itl_samples_reported, itl_samples_true;   /* over matched successful records */

    /* errors of what the tool reported, reported minus true, ns (docs/audit.md) */
    tt_audit_stat err_ttft, err_itl, err_tpot, err_e2el;
    /* the tool's overhead */
    tt_audit_overhead send_lag, client_queue, client_lag;
    /* serve's first token write to the tool's read of it: the network and
     * the socket-queue wait together (client_queue splits them out when a
     * vantage gives the kernel's ready instant) */
    tt_audit_overhead downlink;

    tt_audit_cause *causes;
    size_t n_causes;
    bool within_tolerance;

    /* samples for the plots (owned; in request order) */
    int64_t *ttft_err_ns;     /* reported minus true TTFT per graded request */
    size_t n_ttft_err;
    int64_t *itl_reported_ns; /* every ITL sample the tool reported (graded requests) */
    size_t n_itl_reported;
    int64_t *itl_true_ns;     /* every true ITL (serve's token writes) of the same requests */
    size_t n_itl_true;
} tt_audit_cell;

/* The whole audit. */
typedef struct tt_audit_card {
    char command[1024];       /* CMD as given, placeholders unfilled */
    double ttft_ms, itl_ms;   /* serve's schedule */
    unsigned tokens;
    double tolerance_ms, tolerance_pct;
    bool root_vantages;       /* the eBPF server vantage was asked for */
    char note[400];           /* "" or how the profiles were chosen */
    tt_audit_cell *cells;
    size_t n_cells;
    bool mis_measured;        /* some cell is out of tolerance or CMD failed */
} tt_audit_card;

/* Free everything a cell owns; the cell becomes empty. */
void tt_audit_cell_free(tt_audit_cell *c);

/* Free the cells of card (and the array). */
void tt_audit_card_free(tt_audit_card *card);

/* Write the card as text (the terminal report), as the JSON document
 * `tokentap.audit/1` (docs/formats.md), or as one self-contained HTML page
 * with inline SVG plots (no network at view time). Return 0, or -1 when
 * the stream reported a write error. */
int tt_audit_write_text(FILE *out, const tt_audit_card *card);
int tt_audit_write_json(FILE *out, const tt_audit_card *card);
int tt_audit_write_html(FILE *out, const tt_audit_card *card);

#endif
