/* lint_catalogue.c - every finding's id, severity, description and what it
 * does to known clients. docs/framing.md is the long form (examples and
 * sources); the clients named here are the versions cited there. */
#include <string.h>

#include "lint/lint.h"

static const tt_lint_entry catalogue[TT_LINT_COUNT] = {
    {TT_LINT_CRLF_SEPARATOR, "crlf-separator", TT_LINT_WARN,
     "lines or events end with CR or CRLF instead of LF",
     "vllm bench serve 2025 splits events on \"\\n\\n\": CRLF events that share a read are never split, "
     "the request fails; a bare CR never ends a line for aiohttp line readers (vllm 2024, sglang)"},
    {TT_LINT_SPLIT_EVENT, "split-event", TT_LINT_INFO,
     "an event's bytes arrived in more than one segment or read",
     "clients timestamp the event when its last part arrives; chunk-per-event parsers strip() each read "
     "and can glue or cut lines (vllm bench serve 2025 StreamedResponseHandler)"},
    {TT_LINT_COALESCED_EVENTS, "coalesced-events", TT_LINT_WARN,
     "several events arrived in one segment or read",
     "every client stamps them with one instant: ITL samples of ~0 and one long gap; with CRLF separators "
     "vllm bench serve 2025 cannot split them and fails the request"},
    {TT_LINT_KEEPALIVE_COMMENT, "keepalive-comment", TT_LINT_INFO,
     "SSE comment lines (keep-alive pings)",
     "llmperf and vllm bench serve 2024 (openai backends) json.loads the comment and fail the request; "
     "openai-python, vllm 2025 and vllm 2024's TGI backend skip it"},
    {TT_LINT_USAGE_WITH_CHOICES, "usage-with-choices", TT_LINT_WARN,
     "a usage frame that still carries a non-empty choices array",
     "vllm bench serve 2025 takes it for a token (one more ITL sample, E2EL moved) and never reads its usage; "
     "llmperf counts it as an output token"},
    {TT_LINT_MISSING_TERMINAL, "missing-terminal", TT_LINT_ERROR,
     "the stream ended without its terminal event ([DONE], message_stop, done:true, ...)",
     "vllm bench serve 2024 fails the request (latency unset without [DONE]); openai-python ends the "
     "iteration quietly, so a cut stream looks complete"},
    {TT_LINT_DATA_NO_SPACE, "data-no-space", TT_LINT_WARN,
     "\"data:\" lines without the optional space after the colon",
     "clients that strip the literal \"data: \" (vllm bench serve openai backends, sglang) json.loads "
     "\"data:{...}\" and fail; llmperf slices 6 bytes and cuts the JSON"},
    {TT_LINT_EVENT_FIELD, "event-field", TT_LINT_INFO,
     "events carry \"event:\" lines",
     "line-per-event clients (vllm bench serve, sglang, llmperf) try to parse the event: line as data and "
     "fail; SSE-aware clients (openai-python, anthropic SDK) are fine"},
    {TT_LINT_EMPTY_DATA_LINE, "empty-data-line", TT_LINT_INFO,
     "a \"data:\" line with an empty value",
     "openai-python dispatches data \"\" and its json() raises; prefix-stripping clients fail on \"data:\""},
    {TT_LINT_NON_JSON_DATA, "non-json-data", TT_LINT_ERROR,
     "event data that is not JSON (nor a known literal such as [DONE])",
     "every benchmark client json.loads each event: the request fails or the stream is abandoned"},
    {TT_LINT_RAW_LINE_SEPARATOR, "raw-line-separator", TT_LINT_WARN,
     "raw U+2028, U+2029 or U+0085 inside event data",
     "clients that decode and then str.splitlines() break the JSON at that character; openai-python "
     "splits bytes first and is safe"},
    {TT_LINT_MISSING_USAGE, "missing-usage", TT_LINT_WARN,
     "stream_options.include_usage was asked but no usage came",
     "vllm bench serve 2025 keeps output_tokens 0 for the request; sglang bench_serving falls back to the "
     "requested length, overstating throughput"},
    {TT_LINT_DATA_AFTER_TERMINAL, "data-after-terminal", TT_LINT_WARN,
     "events after the terminal event",
     "openai-python stops at [DONE] and never reads them; sglang bench_serving moves E2E latency to the "
     "last line read"},
    {TT_LINT_ROLE_ONLY_FIRST_CHUNK, "role-only-first-chunk", TT_LINT_INFO,
     "the first chunk carries the role and no text",
     "vllm bench serve 2025 and llmperf (token count) treat any chunk with choices as a token: TTFT ends "
     "at the role chunk, one token too many"},
    {TT_LINT_FINISH_WITHOUT_TEXT, "finish-without-text", TT_LINT_INFO,
     "a frame carries the finish reason and no text",
     "vllm bench serve 2025 counts it as a token when it has choices (extra ITL sample, E2EL moved); "
     "llmperf counts it as an output token"},
    {TT_LINT_MULTI_TOKEN_CHUNKS, "multi-token-chunks", TT_LINT_WARN,
     "usage counts more tokens than there were token events",
     "clients that count events as tokens (llmperf) undercount; per-event ITL is several tokens' time, "
     "TPOT from events is too long"},
    {TT_LINT_USAGE_TOKEN_MISMATCH, "usage-token-mismatch", TT_LINT_WARN,
     "usage counts fewer tokens than there were token events",
     "clients that trust usage and clients that count events disagree; TPOT differs by the ratio"},
    {TT_LINT_EOS_FLAG_DROPPED, "eos-flag-dropped", TT_LINT_ERROR,
     "ignore_eos or min_tokens was asked, yet the output stopped short with a natural stop",
     "the server ignored the flag: fixed-length benchmarks (sglang bench_serving sends ignore_eos) report "
     "the requested length when usage is absent, overstating throughput"},
    {TT_LINT_COMPRESSED_STREAM, "compressed-stream", TT_LINT_WARN,
     "the event stream has a content coding (gzip, deflate, ...)",
     "the compressor buffers events: clients see them late and in bursts; TTFT and ITL measure the "
     "compressor"},
    {TT_LINT_HTTP_ERROR_STATUS, "http-error-status", TT_LINT_ERROR,
     "the response status is 4xx or 5xx",
     "benchmarks count the request as failed; tools that only time successes hide it from TTFT"},
    {TT_LINT_ERROR_EVENT, "error-event", TT_LINT_ERROR,
     "an error event inside a 2xx stream",
     "openai-python raises APIError; vllm bench serve 2025 json.loads it and, lacking choices, ignores it: "
     "the request counts as a success with fewer tokens"},
    {TT_LINT_CLOSED_MID_EVENT, "closed-mid-event", TT_LINT_ERROR,
     "the body ended inside an event (no dispatching blank line or newline)",
     "the partial event is lost; aiohttp clients raise ClientPayloadError under chunked coding, "
     "openai-python drops it silently"},
    {TT_LINT_BOM, "bom", TT_LINT_WARN,
     "a UTF-8 byte order mark opens the stream",
     "openai-python reads the first field name as \"\\ufeffdata\" and drops the first event; prefix "
     "strippers fail on the first line"},
    {TT_LINT_ID_FIELD, "id-field", TT_LINT_INFO,
     "events carry \"id:\" lines",
     "line-per-event clients parse \"id: ...\" as data and fail; an id-only event makes openai-python "
     "json() an empty string"},
    {TT_LINT_RETRY_FIELD, "retry-field", TT_LINT_INFO,
     "events carry \"retry:\" lines",
     "line-per-event clients parse it as data and fail; a retry-only event makes openai-python json() an "
     "empty string"},
    {TT_LINT_KEEPALIVE_EVENT, "keepalive-event", TT_LINT_INFO,
     "keep-alive events (an event named ping)",
     "clients that take every data event for a token count the ping; the anthropic SDK skips it"},
};

const tt_lint_entry *tt_lint_entry_of(tt_lint_id id)
{
    return (unsigned)id < TT_LINT_COUNT ? &catalogue[id] : NULL;
}

const tt_lint_entry *tt_lint_find(const char *name)
{
    for (size_t i = 0; i < TT_LINT_COUNT; i++)
        if (!strcmp(catalogue[i].name, name)) return &catalogue[i];
    return NULL;
}

const char *tt_lint_severity_name(tt_lint_severity s)
{
    switch (s) {
    case TT_LINT_INFO: return "info";
    case TT_LINT_WARN: return "warn";
    case TT_LINT_ERROR: return "error";
    case TT_LINT_NONE: return "none";
    }
    return "?";
}

bool tt_lint_parse_severity(const char *s, tt_lint_severity *out)
{
    for (int v = TT_LINT_INFO; v <= TT_LINT_NONE; v++) {
        if (!strcmp(s, tt_lint_severity_name((tt_lint_severity)v))) {
            *out = (tt_lint_severity)v;
            return true;
        }
    }
    return false;
}
