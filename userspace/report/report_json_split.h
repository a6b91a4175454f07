/* report_json_split.h - what report_json.c and report_json_split.c share:
 * the JSON of one request's decomposition (its parts, the stretches of the
 * links and of the TLS libraries, the runs, the ITL split, the clocks'
 * uncertainty, the disagreements with the benchmark) and of the summary of
 * parts over requests (docs/formats.md, "analyze DIR"). */
#ifndef TT_REPORT_JSON_SPLIT_H
#define TT_REPORT_JSON_SPLIT_H

#include "join/decompose.h"
#include "report/json_writer.h"

/* One split's fields (TTFT, or E2EL with e2el) of group g. */
void tt_json_split_fields(tt_jw *w, const tt_split *s, const tt_joined *g, bool e2el);

/* The "itl" object of one request (br: its benchmark record, or NULL). */
void tt_json_itl_fields(tt_jw *w, const tt_itl_split *s, const tt_bench_request *br);

/* The "disagreements" array of one request (r: the request compared). */
void tt_json_disagreements(tt_jw *w, const tt_disagreement *d, const tt_bench_request *br, const tt_request *r);

/* The clocks' uncertainty of one request's splits (several recordings). */
void tt_json_clock_uncertainty(tt_jw *w, const tt_breakdown *b, const tt_joined *g, const tt_request_breakdown *pb);

/* The parts, link stretches and TLS stretches over requests (the summary's "overhead"). */
void tt_json_overhead(tt_jw *w, const tt_breakdown *b, bool e2el);

#endif
