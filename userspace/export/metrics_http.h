/* metrics_http.h - `tokentap watch --metrics HOST:PORT`: /metrics served by
 * libmicrohttpd on its own thread, from a metrics registry
 * (metrics_registry.h), in the Prometheus text format 0.0.4 or, when the
 * scraper's Accept header asks for it, OpenMetrics 1.0. Any other path is
 * 404, any other method 405. */
#ifndef TT_METRICS_HTTP_H
#define TT_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "export/metrics_registry.h"

typedef struct tt_metrics_http tt_metrics_http;

/* Serve m on listen ("HOST:PORT", "PORT" meaning 127.0.0.1:PORT; port 0
 * picks a free one). NULL with a reason in err when the address does not
 * parse or cannot be bound. */
tt_metrics_http *tt_metrics_http_start(tt_mreg *m, const char *listen, char *err, size_t errlen);

/* The port it listens on. */
uint16_t tt_metrics_http_port(const tt_metrics_http *h);

/* Scrapes answered so far. */
uint64_t tt_metrics_http_scrapes(const tt_metrics_http *h);

/* Stop serving (waits for the thread). h may be NULL. */
void tt_metrics_http_stop(tt_metrics_http *h);

#endif
