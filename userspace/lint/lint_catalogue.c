/* lint_catalogue.c - every finding's id, severity, description and what it
 * does to known clients. docs/framing.md is the long form (examples and
 * sources, with the commit each claim was read at); the clients named here
 * are the versions cited there. */
#include <string.h>

#include "lint/lint.h"

static const tt_lint_entry catalogue[TT_LINT_COUNT] = {
    {TT_LINT_CRLF_SEPARATOR, "crlf-separator", TT_LINT_WARN,
     "lines or events end with CR or CRLF instead of LF",
     "vllm bench serve 2025 and genai-perf split events on \"\\n\\n\": CRLF events sharing a read never split "
     "(tokens lost, or the parse raises); a bare CR ends no line for aiohttp readers (vllm 2024, sglang) nor aiperf"},
    {TT_LINT_SPLIT_EVENT, "split-event", TT_LINT_INFO,
     "an event's bytes arrived in more than one segment or read",
     "most clients stamp the event at its last part, genai-perf at its first; vllm bench serve 2025 strip()s "
     "each read and can cut a space or glue two events"},
    {TT_LINT_COALESCED_EVENTS, "coalesced-events", TT_LINT_WARN,
     "several events arrived in one segment or read",
     "every client stamps them with one instant: ITL samples of ~0 and one long gap (vllm, sglang); genai-perf "
     "merges them; with CRLF vllm bench serve 2025 and genai-perf cannot split them"},
    {TT_LINT_KEEPALIVE_COMMENT, "keepalive-comment", TT_LINT_INFO,
     "SSE comment lines (keep-alive pings)",
     "llmperf, sglang bench_serving and vllm 2024 (openai backends) json.loads the comment and fail the request; "
     "vllm 2025, aiperf, guidellm, genai-perf and the openai SDKs skip it"},
    {TT_LINT_USAGE_WITH_CHOICES, "usage-with-choices", TT_LINT_WARN,
     "a usage frame that still carries a non-empty choices array",
     "vllm bench serve 2025 takes it for a token (extra ITL sample, E2EL moved) and never reads its usage "
     "(it tokenizes the text instead); aiperf, guidellm and sglang read the usage"},
    {TT_LINT_MISSING_TERMINAL, "missing-terminal", TT_LINT_ERROR,
     "the stream ended without its terminal event ([DONE], message_stop, done:true, ...; not for Triton's "
     "generate stream, which has none)",
     "vllm bench serve 2024 fails the request (latency unset without [DONE]); vllm 2025, sglang, llmperf, "
     "aiperf, guidellm, genai-perf and the openai SDKs end quietly: a cut stream looks complete"},
    {TT_LINT_DATA_NO_SPACE, "data-no-space", TT_LINT_WARN,
     "\"data:\" lines without the optional space after the colon",
     "clients that strip the literal \"data: \" (vllm bench serve openai backends, sglang) fail; llmperf cuts "
     "the JSON; genai-perf takes it for a fragment; guidellm fails on \"data:[DONE]\""},
    {TT_LINT_EVENT_FIELD, "event-field", TT_LINT_INFO,
     "events carry \"event:\" lines",
     "clients that parse every line (vllm bench serve, sglang, llmperf) take the event: line for data and fail; "
     "guidellm ignores it; SSE decoders (aiperf, openai and anthropic SDKs) are fine"},
    {TT_LINT_EMPTY_DATA_LINE, "empty-data-line", TT_LINT_INFO,
     "a \"data:\" line with an empty value",
     "the openai SDKs dispatch data \"\" and the JSON parse raises; guidellm fails on json.loads(\"\"); prefix "
     "strippers fail on \"data:\"; aiperf drops it"},
    {TT_LINT_NON_JSON_DATA, "non-json-data", TT_LINT_ERROR,
     "event data that is not JSON (nor a known literal such as [DONE])",
     "vllm, sglang, llmperf and guidellm fail the request, the openai SDKs raise, genai-perf's parse raises; "
     "aiperf drops the event silently"},
    {TT_LINT_RAW_LINE_SEPARATOR, "raw-line-separator", TT_LINT_WARN,
     "raw U+2028, U+2029 or U+0085 inside event data",
     "guidellm (httpx lines) cuts the JSON there and fails; aiperf splits there and rejoins with \\n, changing "
     "the text; openai-python, openai-node and aiohttp readers are safe"},
    {TT_LINT_MISSING_USAGE, "missing-usage", TT_LINT_WARN,
     "stream_options.include_usage was asked but no usage came",
     "vllm bench serve 2025 tokenizes the text instead; sglang bench_serving falls back to the requested "
     "length, overstating throughput; guidellm counts one token per text line"},
    {TT_LINT_DATA_AFTER_TERMINAL, "data-after-terminal", TT_LINT_WARN,
     "events after the terminal event",
     "the openai SDKs stop at [DONE]; sglang bench_serving moves E2E latency to the last line; guidellm keeps "
     "their text untimed; aiperf and genai-perf count them"},
    {TT_LINT_ROLE_ONLY_FIRST_CHUNK, "role-only-first-chunk", TT_LINT_INFO,
     "the first chunk carries the role and no text",
     "vllm bench serve 2025 treats any chunk with choices as a token: TTFT ends at the role chunk, one ITL "
     "too many; sglang, llmperf, guidellm, aiperf and genai-perf skip it"},
    {TT_LINT_FINISH_WITHOUT_TEXT, "finish-without-text", TT_LINT_INFO,
     "a frame carries the finish reason and no text",
     "vllm bench serve 2025 counts it as a token when it has choices (extra ITL sample, E2EL moved); sglang, "
     "llmperf, guidellm, aiperf and genai-perf skip it"},
    {TT_LINT_MULTI_TOKEN_CHUNKS, "multi-token-chunks", TT_LINT_WARN,
     "usage counts more tokens than there were token events",
     "per-event ITL samples (vllm, sglang) span several tokens; guidellm without usage undercounts; aiperf and "
     "genai-perf take the first chunk for one token"},
    {TT_LINT_USAGE_TOKEN_MISMATCH, "usage-token-mismatch", TT_LINT_WARN,
     "usage counts fewer tokens than there were token events",
     "clients that trust usage (vllm, sglang, guidellm) and clients that count events or tokenize the text "
     "(aiperf, llmperf, genai-perf) disagree; TPOT differs by the ratio"},
    {TT_LINT_EOS_FLAG_DROPPED, "eos-flag-dropped", TT_LINT_ERROR,
     "ignore_eos or min_tokens was asked, yet the output stopped short with a natural stop",
     "the server ignored the flag: fixed-length runs (sglang bench_serving and guidellm send ignore_eos) "
     "compare unequal work; sglang without usage reports the requested length"},
    {TT_LINT_COMPRESSED_STREAM, "compressed-stream", TT_LINT_WARN,
     "the event stream has a content coding (gzip, deflate, ...)",
     "the compressor buffers events: clients see them late and in bursts; TTFT and ITL measure the "
     "compressor"},
    {TT_LINT_HTTP_ERROR_STATUS, "http-error-status", TT_LINT_ERROR,
     "the response status is 4xx or 5xx",
     "benchmarks count the request as failed; tools that only time successes hide it from TTFT"},
    {TT_LINT_ERROR_EVENT, "error-event", TT_LINT_ERROR,
     "an error event inside a 2xx stream",
     "openai SDKs, llmperf and aiperf raise, genai-perf aborts; vllm bench serve 2025, sglang and guidellm "
     "ignore it: the request counts as a success with fewer tokens"},
    {TT_LINT_CLOSED_MID_EVENT, "closed-mid-event", TT_LINT_ERROR,
     "the body ended inside an event (no dispatching blank line or newline)",
     "the partial event is lost; aiohttp clients raise ClientPayloadError under chunked coding, "
     "the openai SDKs drop it silently"},
    {TT_LINT_BOM, "bom", TT_LINT_WARN,
     "a UTF-8 byte order mark opens the stream",
     "openai-python and aiperf read the first field name as \"\\ufeffdata\" and drop the first event; prefix "
     "strippers (vllm, sglang) fail on the first line"},
    {TT_LINT_ID_FIELD, "id-field", TT_LINT_INFO,
     "events carry \"id:\" lines",
     "clients that parse every line (vllm, sglang, llmperf) take \"id: ...\" for data and fail; an id-only "
     "event makes openai-python json() an empty string"},
    {TT_LINT_RETRY_FIELD, "retry-field", TT_LINT_INFO,
     "events carry \"retry:\" lines",
     "clients that parse every line (vllm, sglang, llmperf) take it for data and fail; a retry-only event "
     "makes openai-python json() an empty string"},
    {TT_LINT_KEEPALIVE_EVENT, "keepalive-event", TT_LINT_INFO,
     "keep-alive events (an event named ping)",
     "clients that take every data event for a token count the ping; the anthropic SDK skips it"},
    {TT_LINT_USAGE_EMPTY_CHOICES, "usage-empty-choices", TT_LINT_WARN,
     "a usage frame with an empty choices array (vLLM's include_usage frame)",
     "clients that index choices[0] of every frame raise IndexError: sglang bench_serving and llmperf fail "
     "the request, genai-perf's profile parse aborts; vllm bench serve, aiperf and guidellm read the usage"},
    {TT_LINT_H2_SPLIT_EVENT, "h2-split-event", TT_LINT_INFO,
     "HTTP/2: an event's (or gRPC message's) bytes in more than one DATA frame",
     "HTTP/2 clients get DATA frame by frame: SSE readers over httpx/h2 stamp the event at its last frame, "
     "as with split segments; gRPC delivers a message only when whole"},
    {TT_LINT_H2_COALESCED_EVENTS, "h2-coalesced-events", TT_LINT_WARN,
     "HTTP/2: several events (or gRPC messages) in one DATA frame",
     "every client receives them together however it reads the socket: ITL samples of ~0 then one long gap; "
     "genai-perf and perf_analyzer stamp each gRPC response as their callback runs, one after another"},
    {TT_LINT_H2_FLOW_CONTROL_STALL, "h2-flow-control-stall", TT_LINT_WARN,
     "HTTP/2: the server's send window ran out and it waited for the client's WINDOW_UPDATE",
     "the wait is the client's own doing (a small window, or reading slowly) but every client counts it as "
     "server time: a long ITL sample, or TTFT when it comes early"},
    {TT_LINT_H2_STREAM_RESET, "h2-stream-reset", TT_LINT_ERROR,
     "HTTP/2: RST_STREAM ended the stream before the response was whole",
     "a client reset is usually its own timeout or cancel; clients count a server reset as a failed request, "
     "httpx raises RemoteProtocolError, grpc reports the status of the error code"},
    {TT_LINT_GRPC_STATUS_ERROR, "grpc-status-error", TT_LINT_ERROR,
     "gRPC: grpc-status other than 0 (OK) in the trailers or a trailers-only response",
     "the call failed whatever its messages said; genai-perf/perf_analyzer count it as an error, but tokens "
     "already streamed may have been timed"},
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
