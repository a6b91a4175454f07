/* report_multi.h - the reports over several vantages of one recording and
 * the benchmark's own result file (`tokentap analyze DIR`, `analyze
 * --bench-result`, `run --bench-result`; docs/formats.md): the JSON
 * document, the text breakdown and the Perfetto trace. */
#ifndef TT_REPORT_MULTI_H
#define TT_REPORT_MULTI_H

#include "join/decompose.h"
#include "report/report.h"

/* Write the multi-vantage document for the n analyses as[] (one per vantage,
 * each filled by tt_analysis_fill), joined across vantages (join/join.h)
 * and decomposed against the client socket (no benchmark file). input
 * names the recording directory. */
void tt_report_json_multi(FILE *out, const char *input, const tt_analysis *const *as, size_t n);

/* The same document for a built breakdown: every request with its
 * vantages, `join`, `reported`, `decomposition` and `disagreements`, and
 * the `benchmark` block and `summary.overhead` (docs/formats.md). */
void tt_report_json_breakdown(FILE *out, const char *input, const tt_breakdown *b);

/* The text report: the vllm-style TTFT/TPOT/ITL/E2EL block per vantage
 * side by side (reported, client, wire, server), the overhead breakdown,
 * then the disagreements. */
void tt_report_breakdown_text(FILE *out, const char *input, const tt_breakdown *b);

/* A Chrome trace (Trace Event Format JSON, opens in ui.perfetto.dev): one
 * process per vantage and one for the decomposition, one thread per
 * request, token events as instants, the TTFT parts as complete slices. */
void tt_report_perfetto(FILE *out, const tt_breakdown *b);

/* The report over the n analyses as[] that `analyze` and `run` write: with
 * b (a built breakdown) its JSON document (json), or its text followed by
 * each vantage's own text report; without b, each vantage's own report
 * (json: one JSON document per vantage; events: the event listings). */
void tt_report_vantages(FILE *out, const char *input, const tt_analysis *const *as, size_t n,
                        const tt_breakdown *b, bool json, bool events);

#endif
