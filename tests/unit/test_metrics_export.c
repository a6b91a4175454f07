/* test_metrics_export.c - the Prometheus export's registry without a
 * network: a successful request's histograms (bucket counts cumulative,
 * +Inf equal to the count, sum in seconds) at a server and a client
 * vantage; a failed one only in the duration, with its error_type; the
 * model label bounded (past the limit: _overflow, counted); label values
 * escaped; framing findings counted by id; the Prometheus text and
 * OpenMetrics forms (counter names, UNIT, # EOF) and the Accept
 * negotiation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/metrics_registry.h"

/* tt_mreg_observe with the request's own metrics, as watch calls it. */
static void observe(tt_mreg *m, tt_vantage v, const tt_request *r)
{
    tt_req_metrics rm;
    assert_int_equal(tt_req_metrics_compute(r, &rm), 0);
    tt_mreg_observe(m, v, r, &rm);
    tt_req_metrics_free(&rm);
}

static tt_request request(const char *model, int status, uint64_t ttft_ms, uint32_t tokens, uint64_t itl_ms)
{
    tt_request r;
    memset(&r, 0, sizeof r);
    r.server.family = 4;
    r.server.addr[0] = 10, r.server.addr[3] = 7;
    r.server.port = 8000;
    r.client.family = 4;
    r.client.addr[0] = 10, r.client.addr[3] = 9;
    r.client.port = 40000;
    snprintf(r.method, sizeof r.method, "POST");
    snprintf(r.path, sizeof r.path, "/v1/chat/completions");
    snprintf(r.fields.model, sizeof r.fields.model, "%s", model);
    r.status = status;
    r.usage_completion_tokens = r.usage_prompt_tokens = -1;
    r.req_ready_ns = r.first_token_ready_ns = r.last_token_ready_ns = TT_NS_NONE;
    r.req_first_ns = 1000000000;
    r.req_last_ns = r.req_first_ns;
    r.resp_first_ns = r.req_first_ns + 1000000;
    r.incomplete = 0; /* whole */
    r.events = calloc(tokens ? tokens : 1, sizeof *r.events);
    for (uint32_t i = 0; i < tokens; i++) {
        r.events[i].kind = TT_EV_TOKEN;
        r.events[i].dispatch_ns = r.req_first_ns + ttft_ms * 1000000 + i * itl_ms * 1000000;
        r.events[i].first_ns = r.events[i].dispatch_ns;
    }
    r.n_events = r.token_events = tokens;
    if (tokens) {
        r.first_token_ns = r.events[0].dispatch_ns;
        r.last_token_ns = r.events[tokens - 1].dispatch_ns;
    } else {
        r.first_token_ns = r.last_token_ns = TT_NS_NONE;
    }
    r.resp_last_ns = tokens ? r.last_token_ns + 1000000 : r.resp_first_ns;
    return r;
}

static char *render(tt_mreg *m, tt_mreg_format f)
{
    size_t len = 0;
    char *page = tt_mreg_render(m, f, &len);
    assert_non_null(page);
    assert_int_equal(strlen(page), len);
    return page;
}

/* The value (after the line's last space) of the first sample line that
 * starts with `prefix`, or -1. */
static double sample(const char *page, const char *prefix)
{
    for (const char *p = page; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, prefix, strlen(prefix))) continue;
        const char *end = strchr(p, '\n'), *value = p;
        for (const char *q = p; q < end; q++)
            if (*q == ' ') value = q + 1;
        return strtod(value, NULL);
    }
    return -1;
}

#define SERVER_LABELS                                                                                            \
    "{vantage=\"server\",gen_ai_operation_name=\"chat\",gen_ai_request_model=\"m1\",server_address=\"10.0.0.7\"," \
    "server_port=\"8000\",error_type=\"\""

static void test_histograms(void **state)
{
    tt_mreg *m = tt_mreg_new(NULL);
    assert_non_null(m);
    tt_request ok = request("m1", 200, 30, 5, 10); /* TTFT 30 ms, ITL 10 ms */
    observe(m, TT_VANTAGE_SERVER, &ok);
    observe(m, TT_VANTAGE_CLIENT, &ok);
    tt_request bad = request("m1", 503, 0, 0, 0);
    observe(m, TT_VANTAGE_SERVER, &bad);
    char *page = render(m, TT_MREG_PROMETHEUS);
    /* cumulative buckets: 30 ms is above 0.02 and within 0.04 */
    assert_true(sample(page, "gen_ai_server_time_to_first_token_seconds_bucket" SERVER_LABELS ",le=\"0.02\"}") == 0);
    assert_true(sample(page, "gen_ai_server_time_to_first_token_seconds_bucket" SERVER_LABELS ",le=\"0.04\"}") == 1);
    assert_true(sample(page, "gen_ai_server_time_to_first_token_seconds_bucket" SERVER_LABELS ",le=\"+Inf\"}") == 1);
    double sum = sample(page, "gen_ai_server_time_to_first_token_seconds_sum" SERVER_LABELS "}");
    assert_true(sum > 0.0299 && sum < 0.0301);
    assert_true(sample(page, "gen_ai_server_time_to_first_token_seconds_count" SERVER_LABELS "}") == 1);
    /* the client side: time to first chunk, and one per-chunk time for each of the 4 gaps */
    assert_true(sample(page, "gen_ai_client_operation_time_per_output_chunk_seconds_count{vantage=\"client\"") == 4);
    assert_true(sample(page, "gen_ai_client_operation_time_to_first_chunk_seconds_count{vantage=\"client\"") == 1);
    assert_true(sample(page, "gen_ai_client_token_usage_count{vantage=\"client\"") == 1);
    /* a second request with usage (input tokens too): the client's other families keep one series each */
    tt_request again = request("m1", 200, 30, 5, 10);
    again.usage_prompt_tokens = 12;
    again.first_token_ready_ns = again.first_token_ns - 1000;
    observe(m, TT_VANTAGE_CLIENT, &again);
    ok.first_token_ready_ns = ok.first_token_ns - 2000;
    observe(m, TT_VANTAGE_CLIENT, &ok);
    free(again.events);
    free(page);
    page = render(m, TT_MREG_PROMETHEUS);
    assert_true(sample(page, "tokentap_client_queue_seconds_count{vantage=\"client\"") == 2);
    assert_true(sample(page, "gen_ai_client_operation_time_to_first_chunk_seconds_count{vantage=\"client\"") == 3);
    const char *q = strstr(page, "tokentap_client_queue_seconds_count{");
    assert_non_null(q);
    assert_null(strstr(q + 1, "tokentap_client_queue_seconds_count{")); /* one series, not two alike */
    /* the 503: no TTFT, its duration with error_type="503" */
    assert_non_null(strstr(page, "gen_ai_server_request_duration_seconds_count{vantage=\"server\",gen_ai_operation_name="
                                 "\"chat\",gen_ai_request_model=\"m1\",server_address=\"10.0.0.7\",server_port=\"8000\","
                                 "error_type=\"503\"} 1"));
    assert_null(strstr(page, "gen_ai_server_time_to_first_token_seconds_count{vantage=\"server\",gen_ai_operation_name="
                             "\"chat\",gen_ai_request_model=\"m1\",server_address=\"10.0.0.7\",server_port=\"8000\","
                             "error_type=\"503\"}"));
    assert_true(sample(page, "tokentap_requests_total{vantage=\"server\",outcome=\"complete\"}") == 2);
    /* the 503 is a framing finding (lint's catalogue) */
    assert_true(sample(page, "tokentap_framing_findings_total{vantage=\"server\",id=\"http-error-status\"}") == 1);
    assert_non_null(strstr(page, "# TYPE tokentap_requests_total counter\n"));
    assert_null(strstr(page, "# EOF"));
    assert_null(strstr(page, "# UNIT"));
    free(page);
    free(ok.events);
    free(bad.events);
    tt_mreg_free(m);
}

static void test_bounded_labels_and_escaping(void **state)
{
    tt_mreg_limits lim = {.max_models = 2, .max_servers = 8};
    tt_mreg *m = tt_mreg_new(&lim);
    assert_non_null(m);
    const char *models[] = {"a", "b\"q\\\n", "c", "d"};
    for (int i = 0; i < 4; i++) {
        tt_request r = request(models[i], 200, 10, 2, 5);
        observe(m, TT_VANTAGE_SERVER, &r);
        free(r.events);
    }
    char *page = render(m, TT_MREG_PROMETHEUS);
    assert_non_null(strstr(page, "gen_ai_request_model=\"a\""));
    assert_non_null(strstr(page, "gen_ai_request_model=\"b\\\"q\\\\\\n\"")); /* b\"q\\\n */
    assert_null(strstr(page, "gen_ai_request_model=\"c\""));
    assert_non_null(strstr(page, "gen_ai_request_model=\"_overflow\""));
    assert_true(sample(page, "tokentap_label_overflow_total{label=\"gen_ai_request_model\"}") == 2);
    free(page);
    tt_mreg_free(m);
}

static void test_openmetrics(void **state)
{
    tt_mreg *m = tt_mreg_new(NULL);
    tt_request r = request("m1", 200, 30, 3, 10);
    observe(m, TT_VANTAGE_SERVER, &r);
    free(r.events);
    tt_mreg_tracer t = {.ring_drops = 7, .bytes_traced = 1234, .connections_open = 2};
    tt_mreg_set_tracer(m, &t);
    char *page = render(m, TT_MREG_OPENMETRICS);
    size_t len = strlen(page);
    assert_true(len > 6 && !strcmp(page + len - 6, "# EOF\n"));
    assert_non_null(strstr(page, "# TYPE tokentap_ring_drops counter\n"));
    assert_true(sample(page, "tokentap_ring_drops_total ") == 7);
    assert_true(sample(page, "tokentap_connections_open ") == 2);
    assert_non_null(strstr(page, "# UNIT gen_ai_server_time_to_first_token_seconds seconds\n"));
    assert_null(strstr(page, "# UNIT gen_ai_client_token_usage"));
    free(page);
    assert_int_equal(tt_mreg_negotiate(NULL), TT_MREG_PROMETHEUS);
    assert_int_equal(tt_mreg_negotiate("text/plain;version=0.0.4"), TT_MREG_PROMETHEUS);
    assert_int_equal(tt_mreg_negotiate("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
                     TT_MREG_OPENMETRICS);
    assert_non_null(strstr(tt_mreg_content_type(TT_MREG_OPENMETRICS), "application/openmetrics-text"));
    assert_non_null(strstr(tt_mreg_content_type(TT_MREG_PROMETHEUS), "version=0.0.4"));
    tt_mreg_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_histograms),
        cmocka_unit_test(test_bounded_labels_and_escaping),
        cmocka_unit_test(test_openmetrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
