/* report.h - the outputs of an analysis: the text report a vllm bench serve
 * user reads at a glance, the JSON document (docs/formats.md), and the
 * per-event listing. Every function writes to `out` and returns nothing;
 * I/O errors are caught by the caller's fclose/ferror. */
#ifndef TT_REPORT_H
#define TT_REPORT_H

#include <stdio.h>

#include "metrics/metrics.h"
#include "source/pcap_source.h"
#include "timeline/conn_tracker.h"

/* Everything one analysis produced, for one vantage (wire, for now). */
typedef struct tt_analysis {
    const char *command;          /* "analyze", "watch": titles the text report (NULL: "analyze") */
    const char *input;            /* the path analysed, or what was watched */
    tt_vantage vantage;
    tt_clock_domain clock;
    bool has_mono_offset;
    int64_t mono_offset_ns;       /* wall - mono, when has_mono_offset */
    const tt_pcap_stats *pcap;    /* NULL when the source was not pcap */
    const tt_reasm_stats *reasm;
    /* A live source's own losses before reassembly (the probe's ring, the
     * eBPF ring buffer): records it could not keep. Reported when has_drops. */
    bool has_drops;
    uint64_t dropped_records, dropped_bytes;
    const tt_tracker *tracker;
    const tt_request *reqs;       /* sorted by request start */
    const tt_req_metrics *metrics;/* metrics[i] belongs to reqs[i] */
    size_t n_reqs;
    const tt_conn_note *notes;
    size_t n_notes;
    tt_summary summary;
    const char *source_error;     /* a damaged input's one-line reason, or NULL */
    bool with_text;               /* --text: generated text may be shown */
    const struct tt_lint_result *lint; /* findings over reqs (lint/lint.h), set by tt_analysis_fill; NULL when none */
    struct tt_release_digest *released; /* set by tt_analysis_fill_released: what was kept of the requests
                                           whose events were let go (their JSON objects; its read_failed
                                           tells a document left short) */
} tt_analysis;

/* Fill a's requests, notes, per-request metrics, summary and lint findings
 * from tracker t (sorted first). Returns 0, or -1 when out of memory. Release with
 * tt_analysis_release. */
int tt_analysis_fill(tt_analysis *a, tt_tracker *t, const double *pct, size_t n_pct);
void tt_analysis_release(tt_analysis *a);

/* Write the report the flags ask for: the event listing (events), JSON
 * (json) or text. */
void tt_report_write(FILE *out, const tt_analysis *a, bool json, bool events);

/* Open an output file created mode 0600 (stdout for NULL or "-"); NULL with
 * errno set on failure. */
FILE *tt_open_output(const char *path);

void tt_report_text(FILE *out, const tt_analysis *a);
void tt_report_json(FILE *out, const tt_analysis *a);
/* One request's object of tt_report_json's "requests" array, written into w
 * (r's metrics m, at vantage, with its "text" when with_text). */
struct tt_jw;
void tt_report_json_request(struct tt_jw *w, const tt_request *r, const tt_req_metrics *m, tt_vantage vantage,
                            bool with_text);
void tt_report_events_text(FILE *out, const tt_analysis *a);
void tt_report_events_json(FILE *out, const tt_analysis *a);

/* A 50-column rule with title centred in it, padded with fill, and a newline:
 * the section headings of the text reports. */
void tt_report_rule(FILE *out, const char *title, char fill);

/* Names used in every output. */
const char *tt_vantage_name(tt_vantage v);
const char *tt_clock_name(tt_clock_domain c);
/* Comma-separated reasons for r's incompleteness ("" when complete) into buf. */
const char *tt_incomplete_reasons(const tt_request *r, char *buf, size_t cap);

#endif
