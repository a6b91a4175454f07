/* report_multi.h - one JSON document over several vantages of one recording
 * (`tokentap analyze DIR --json`, docs/formats.md). */
#ifndef TT_REPORT_MULTI_H
#define TT_REPORT_MULTI_H

#include "report/report.h"

/* Write the multi-vantage document for the n analyses as[] (one per vantage,
 * each filled by tt_analysis_fill). Requests are joined across vantages by
 * x-request-id (the k-th request with an id at one vantage meets the k-th
 * with that id at another); a request without one stays on its own, marked
 * "joined": false. input names the recording directory. */
void tt_report_json_multi(FILE *out, const char *input, const tt_analysis *const *as, size_t n);

#endif
