#!/usr/bin/env bash
# curl_bench.sh URL CONCURRENCY REQUESTS RESULT [PREFIX]
#
# A streaming benchmark written the way a user writes one with curl, for
# `tokentap audit` to audit (docs/audit.md). It sends REQUESTS streamed chat
# completions (POST URL/v1/chat/completions, "max_tokens": 16, "stream":
# true, header x-request-id PREFIX<i>, PREFIX default curl-), at most
# CONCURRENCY curl processes at a time (background jobs), each
#     curl -sS -N -o BODY -w '%{time_starttransfer} %{time_total} %{response_code}\n'
# and writes RESULT in llmperf's *_individual_responses.json layout (a JSON
# array, one object per request, in request-index order; docs/formats.md).
#
# What it reports, and its flaw (the point of auditing it):
#   ttft_s                 curl's time_starttransfer: the first response BYTE,
#                          i.e. the HTTP head, not the first token (a server
#                          that sends its head at once and the first token
#                          later makes this TTFT far too small)
#   end_to_end_latency_s   curl's time_total (to the end of the body)
#   number_output_tokens   the `data:` lines whose JSON has a non-empty
#                          "content" (grep-level: role-only and usage
#                          chunks have none)
#   inter_token_latency_s  end_to_end_latency_s / number_output_tokens
#                          (llmperf's per-request mean), 0 without tokens
#   request_output_throughput_token_per_s  number_output_tokens / e2el
#   number_input_tokens    the prompt's bytes / 4 (no tokenizer here)
#   number_total_tokens    input + output
#   error_code, error_msg  null and "" on success (llmperf's values);
#                          failed: the HTTP status when not 200, else the
#                          stream's error code ({"error": {"code": ...}}),
#                          else -1 (curl failed, or no token), with curl's
#                          stderr or a one-line reason; a failed request has
#                          ttft_s, end_to_end_latency_s, inter_token_latency_s
#                          and the throughput 0 (llmperf's defaults).
# No start time and no request id are written: llmperf has neither
# (tokentap joins its records by order).
#
# Exit status: 0 whenever RESULT was written (failed requests included);
# 2 bad usage; 1 when the script itself cannot run (no curl, RESULT not
# writable).
set -u

usage() { echo "usage: curl_bench.sh URL CONCURRENCY REQUESTS RESULT [PREFIX]" >&2; exit 2; }
if [ $# -lt 4 ] || [ $# -gt 5 ]; then usage; fi
url=${1%/}; conc=$2; n=$3; result=$4; prefix=${5-curl-}
[[ $conc =~ ^[1-9][0-9]*$ ]] || usage
[[ $n =~ ^[0-9]+$ ]] || usage
[ -n "$url" ] || usage
command -v curl > /dev/null || { echo "curl_bench.sh: curl not found" >&2; exit 1; }

work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT

prompt="Say hello to the benchmark."
body='{"model": "m", "stream": true, "max_tokens": 16, "messages": [{"role": "user", "content": "'"$prompt"'"}]}'

one() { # i: one request; leaves work/t.i (timings), work/b.i (body), work/e.i (stderr), work/rc.i
    local i=$1 rc=0
    curl -sS -N -o "$work/b.$i" -w '%{time_starttransfer} %{time_total} %{response_code}\n' \
        -H 'Content-Type: application/json' -H "x-request-id: $prefix$i" \
        --data-binary "$body" "$url/v1/chat/completions" > "$work/t.$i" 2> "$work/e.$i" || rc=$?
    echo "$rc" > "$work/rc.$i"
}

running=0
for ((i = 0; i < n; i++)); do
    if [ "$running" -ge "$conc" ]; then
        wait -n
        running=$((running - 1))
    fi
    one "$i" &
    running=$((running + 1))
done
wait

# us SECONDS: curl's "%.6f" seconds as integer microseconds.
us() {
    local s=${1:-0} int frac
    [[ $s =~ ^([0-9]+)(\.([0-9]*))?$ ]] || { echo 0; return; }
    int=${BASH_REMATCH[1]} frac=${BASH_REMATCH[3]}000000
    echo $((10#$int * 1000000 + 10#${frac:0:6}))
}
# sec MICROSECONDS: back to seconds with 6 decimals.
sec() { printf '%d.%06d' $(($1 / 1000000)) $(($1 % 1000000)); }
# jstr TEXT: a JSON string.
jstr() {
    local s=$1
    s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\r'/\\r}; s=${s//$'\t'/\\t}; s=${s//$'\n'/\\n}
    s=$(printf '%s' "$s" | tr -d '\000-\010\013\014\016-\037')
    printf '"%s"' "$s"
}

n_in=$(( ${#prompt} / 4 )); [ "$n_in" -ge 1 ] || n_in=1
{
    printf '['
    for ((i = 0; i < n; i++)); do
        rc=$(cat "$work/rc.$i" 2> /dev/null || echo 1)
        read -r tst ttot code < "$work/t.$i" 2> /dev/null || { tst=0 ttot=0 code=000; }
        toks=0
        [ -f "$work/b.$i" ] && toks=$(grep -c '^data:.*"content": *"[^"]' "$work/b.$i")
        err_code=null err_msg=""
        if [ "$code" != 200 ] && [ "$code" != 000 ]; then
            err_code=$((10#$code))
            err_msg=$(head -c 500 "$work/b.$i" 2> /dev/null)
        elif [ "$rc" != 0 ]; then
            err_code=-1
            err_msg=$(head -c 500 "$work/e.$i")
            [ -n "$err_msg" ] || err_msg="curl exit $rc"
        elif grep -q '^data: *{"error"' "$work/b.$i"; then
            line=$(grep -m1 '^data: *{"error"' "$work/b.$i")
            err_code=$(printf '%s' "$line" | grep -o '"code": *-\?[0-9]*' | head -1 | grep -o -- '-\?[0-9]*$')
            [ -n "$err_code" ] || err_code=-1
            err_msg=$(printf '%s' "$line" | grep -o '"message": *"[^"]*"' | head -1 | sed 's/^"message": *"//; s/"$//')
            [ -n "$err_msg" ] || err_msg="error event in the stream"
        elif [ "$toks" = 0 ]; then
            err_code=-1 err_msg="no token in the response"
        fi
        if [ "$err_code" = null ]; then
            ttft_us=$(us "$tst") e2e_us=$(us "$ttot")
            itl_us=$((e2e_us / toks))
            if [ "$e2e_us" -gt 0 ]; then
                thr_m=$((toks * 1000000000 / e2e_us))   # tokens/s x 1000
                thr=$(printf '%d.%03d' $((thr_m / 1000)) $((thr_m % 1000)))
            else
                thr=0
            fi
            ttft=$(sec "$ttft_us") e2e=$(sec "$e2e_us") itl=$(sec "$itl_us")
        else
            ttft=0 e2e=0 itl=0 thr=0
        fi
        [ "$i" = 0 ] || printf ', '
        printf '{"error_code": %s, "error_msg": %s, "inter_token_latency_s": %s, "ttft_s": %s, ' \
            "$err_code" "$(jstr "$err_msg")" "$itl" "$ttft"
        printf '"end_to_end_latency_s": %s, "request_output_throughput_token_per_s": %s, ' "$e2e" "$thr"
        printf '"number_total_tokens": %d, "number_output_tokens": %d, "number_input_tokens": %d}' \
            $((n_in + toks)) "$toks" "$n_in"
    done
    printf ']\n'
} > "$result.tmp" || { echo "curl_bench.sh: cannot write $result" >&2; exit 1; }
mv -f "$result.tmp" "$result" || { echo "curl_bench.sh: cannot write $result" >&2; exit 1; }
ok=$(grep -o '"error_code": null' "$result" | wc -l)
echo "curl_bench.sh: $n requests, $ok ok, $((n - ok)) failed, result in $result"
exit 0
