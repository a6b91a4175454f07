/* lint.h - framing and protocol findings over finished requests: what in a
 * response stream makes known benchmark clients mis-measure or fail.
 *
 * The catalogue (lint_catalogue.c, docs/framing.md) names every finding:
 * a stable id, a severity and the effect on known clients. tt_lint_run
 * walks each request once (its events in order, no allocation per event)
 * and files at most one finding per (request, id): the first occurrence's
 * event, body offset and instant, and how many times it occurred. */
#ifndef TT_LINT_H
#define TT_LINT_H

#include <stdio.h>

#include "report/json_writer.h"
#include "timeline/request.h"

typedef enum tt_lint_severity {
    TT_LINT_INFO = 0, /* legal and noteworthy: some client somewhere handles it badly */
    TT_LINT_WARN,     /* known clients mis-measure it */
    TT_LINT_ERROR,    /* the measurement or the response is wrong for every client */
    TT_LINT_NONE      /* only as a --fail-on threshold: never fail */
} tt_lint_severity;

/* Finding ids, in catalogue order. Append new ones; never renumber. */
typedef enum tt_lint_id {
    TT_LINT_CRLF_SEPARATOR = 0,
    TT_LINT_SPLIT_EVENT,
    TT_LINT_COALESCED_EVENTS,
    TT_LINT_KEEPALIVE_COMMENT,
    TT_LINT_USAGE_WITH_CHOICES,
    TT_LINT_MISSING_TERMINAL,
    TT_LINT_DATA_NO_SPACE,
    TT_LINT_EVENT_FIELD,
    TT_LINT_EMPTY_DATA_LINE,
    TT_LINT_NON_JSON_DATA,
    TT_LINT_RAW_LINE_SEPARATOR,
    TT_LINT_MISSING_USAGE,
    TT_LINT_DATA_AFTER_TERMINAL,
    TT_LINT_ROLE_ONLY_FIRST_CHUNK,
    TT_LINT_FINISH_WITHOUT_TEXT,
    TT_LINT_MULTI_TOKEN_CHUNKS,
    TT_LINT_USAGE_TOKEN_MISMATCH,
    TT_LINT_EOS_FLAG_DROPPED,
    TT_LINT_COMPRESSED_STREAM,
    TT_LINT_HTTP_ERROR_STATUS,
    TT_LINT_ERROR_EVENT,
    TT_LINT_CLOSED_MID_EVENT,
    TT_LINT_BOM,
    TT_LINT_ID_FIELD,
    TT_LINT_RETRY_FIELD,
    TT_LINT_KEEPALIVE_EVENT,
    TT_LINT_USAGE_EMPTY_CHOICES,
    TT_LINT_H2_SPLIT_EVENT,
    TT_LINT_H2_COALESCED_EVENTS,
    TT_LINT_H2_FLOW_CONTROL_STALL,
    TT_LINT_H2_STREAM_RESET,
    TT_LINT_GRPC_STATUS_ERROR,
    TT_LINT_COUNT
} tt_lint_id;

/* One catalogue entry (static, never freed). */
typedef struct tt_lint_entry {
    tt_lint_id id;
    const char *name;         /* "crlf-separator" */
    tt_lint_severity severity;
    const char *summary;      /* one line: what was seen */
    const char *clients;      /* one line: what it does to known clients */
} tt_lint_entry;

#define TT_LINT_NO_OFFSET UINT64_MAX

/* One finding: the first occurrence of an id in one request. */
typedef struct tt_lint_finding {
    tt_lint_id id;
    uint32_t request;         /* index into the requests linted */
    int32_t event;            /* index of the first event showing it; -1 when it is about the request */
    uint32_t count;           /* occurrences in the request (events, comment lines; 1 for request-level) */
    uint64_t offset;          /* body offset of the first occurrence, TT_LINT_NO_OFFSET when none */
    uint64_t mono_ns;         /* its instant, TT_NS_NONE when none */
    uint64_t excerpt_off;     /* body range of the raw bytes that show it (excerpt_len 0: none) */
    uint32_t excerpt_len;
    char detail[160];         /* specifics ("usage 7 > 3 token events"); "" when none */
} tt_lint_finding;

typedef struct tt_lint_result {
    tt_lint_finding *findings; /* ordered by request, then catalogue order */
    size_t n, cap;
    uint32_t by_severity[3];   /* findings per severity */
    uint32_t by_id[TT_LINT_COUNT]; /* requests showing each id */
} tt_lint_result;

/* The catalogue entry of id (NULL when out of range); the entry named name,
 * or NULL. */
const tt_lint_entry *tt_lint_entry_of(tt_lint_id id);
const tt_lint_entry *tt_lint_find(const char *name);

/* "info", "warn", "error", "none". */
const char *tt_lint_severity_name(tt_lint_severity s);
/* Parse a severity name (the four above); false when s names none. */
bool tt_lint_parse_severity(const char *s, tt_lint_severity *out);

/* Lint n requests into *res (zeroed first; release with tt_lint_result_free).
 * Returns 0, or -1 when out of memory (res then holds what was filed). */
int tt_lint_run(const tt_request *reqs, size_t n, tt_lint_result *res);
void tt_lint_result_free(tt_lint_result *res);
/* File copies of n findings (of one request, in catalogue order) into res
 * as request `request`'s, counted as tt_lint_run counts them: linting
 * requests one at a time and appending their findings in order gives what
 * tt_lint_run over them all gives. Returns 0, or -1 when out of memory. */
int tt_lint_result_append(tt_lint_result *res, uint32_t request, const tt_lint_finding *f, size_t n);

/* True when res holds a finding at or above threshold (never for TT_LINT_NONE). */
bool tt_lint_fails(const tt_lint_result *res, tt_lint_severity threshold);

/* ---- writers (lint_report.c) ---- */

/* Options shared by the writers. */
typedef struct tt_lint_view {
    const tt_request *reqs;   /* the requests linted (findings index them) */
    bool with_text;           /* show excerpts as escaped bytes; otherwise length and hash */
    bool detailed;            /* text: every finding; otherwise a summary per id */
    const char *vantage;      /* JSON: named in each finding when non-NULL */
    const size_t *joined;     /* JSON: when non-NULL, joined[request] is written as "joined_request"
                                 (null for SIZE_MAX): the request's index in a multi-vantage document */
} tt_lint_view;

/* The "Findings" section of a text report: a summary per id, or with
 * v->detailed every finding with its request, offset, instant and excerpt.
 * res NULL writes nothing. */
void tt_lint_write_text(FILE *out, const tt_lint_result *res, const tt_lint_view *v);
/* The findings as a JSON array under key (docs/formats.md). res NULL writes
 * an empty array. */
void tt_lint_write_json(tt_jw *w, const char *key, const tt_lint_result *res, const tt_lint_view *v);
/* The findings as items of a JSON array the caller opened (one array over
 * several vantages). res NULL writes nothing. */
void tt_lint_write_json_items(tt_jw *w, const tt_lint_result *res, const tt_lint_view *v);
/* A JSON object under key: findings per severity and requests per id. */
void tt_lint_write_json_summary(tt_jw *w, const char *key, const tt_lint_result *res);

/* The findings filed for request index request (consecutive in res, in
 * catalogue order): a pointer to the first and their number in *n; NULL
 * with *n 0 when none (or res NULL). */
const tt_lint_finding *tt_lint_findings_of(const tt_lint_result *res, size_t request, size_t *n);

/* FNV-1a 64 of n bytes (the excerpt hash). */
uint64_t tt_lint_fnv1a64(const uint8_t *p, size_t n);

#endif
