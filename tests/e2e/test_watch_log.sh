#!/usr/bin/env bash
# watch --log FILE (issue 14: "SIGHUP reopens the log; a full disk ... says
# so and keeps exporting"):
#  1. the live lines go to FILE (created 0600), none to stderr; after the
#     file is moved away (logrotate's way) and SIGHUP, the lines of later
#     requests go to a new FILE and the moved one keeps the earlier ones;
#     SIGHUP without --log does not stop watch.
#  2. --log /dev/full: every write fails (ENOSPC); stderr says so once,
#     tokentap_log_lines_lost_total counts the lost lines, and every request
#     is still exported (tokentap_requests_total) and in the report.
#  3. --metrics with --text is refused (no text in the production mode).
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
command -v curl >/dev/null || skip "curl not installed"
work_dir
need_bpf "$work"
start_serve "$work" --profile vllm --ttft-ms 2 --itl-ms 1 --tokens 8
body='{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"x"}]}'
req() { curl -sN -o /dev/null -H 'content-type: application/json' -H "x-request-id: $1" -d "$body" \
    "http://127.0.0.1:$SERVE_PORT/v1/chat/completions" || fail "curl $1"; }
server_lines() { grep -c "^server .* status=200 tokens=8 " "$1" 2>/dev/null || true; }
wait_lines() { for _ in $(seq 50); do [ "$(server_lines "$1")" = "$2" ] && return 0; sleep 0.1; done
    fail "$1: $(server_lines "$1") server lines, not $2: $(cat "$1" 2>/dev/null)"; }

# 1.
TOKENTAP_NO_TLS=1 "$TT" watch --port "$SERVE_PORT" --log "$work/live.log" --interval 1 > /dev/null 2> "$work/w1.err" &
wpid=$!
wait_tracing "$work/w1.err"
req a1; req a2
wait_lines "$work/live.log" 2
[ "$(stat -c %a "$work/live.log")" = 600 ] || fail "the log's mode is $(stat -c %a "$work/live.log")"
mv "$work/live.log" "$work/live.log.1"
kill -HUP $wpid
sleep 0.3
req b1; req b2; req b3
wait_lines "$work/live.log" 3
sleep 1.2 # a summary line into the new file
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/w1.err")"
[ "$(server_lines "$work/live.log.1")" = 2 ] || fail "the rotated log: $(cat "$work/live.log.1")"
grep -q '^tokentap watch: \[' "$work/live.log" || fail "no summary line in the log: $(cat "$work/live.log")"
! grep -q ' status=' "$work/w1.err" || fail "per-request lines on stderr with --log: $(cat "$work/w1.err")"
TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name -q > /dev/null 2> "$work/hup.err" &
hpid=$!
wait_tracing "$work/hup.err"
kill -HUP $hpid; sleep 0.3
kill -0 $hpid 2>/dev/null || fail "SIGHUP without --log stopped watch"
kill -INT $hpid; wait $hpid || true

# 2.
TOKENTAP_NO_TLS=1 "$TT" watch --port "$SERVE_PORT" --log /dev/full --metrics 127.0.0.1:0 --json -o "$work/full.json" \
    > /dev/null 2> "$work/w2.err" &
wpid=$!
wait_tracing "$work/w2.err"
mport=$(sed -n 's/.*metrics on port \([0-9]*\),.*/\1/p' "$work/w2.err")
for i in 1 2 3 4; do req "f$i"; done
for _ in $(seq 50); do
    curl -sS "http://127.0.0.1:$mport/metrics" > "$work/page.txt"
    grep -q '^tokentap_requests_total{vantage="server",outcome="complete"} 4$' "$work/page.txt" && break
    sleep 0.1
done
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/w2.err")"
grep -q '^tokentap_requests_total{vantage="server",outcome="complete"} 4$' "$work/page.txt" \
    || fail "requests not exported with the log failing: $(grep requests_total "$work/page.txt")"
lost=$(sed -n 's/^tokentap_log_lines_lost_total \([0-9]*\)$/\1/p' "$work/page.txt")
[ "${lost:-0}" -ge 4 ] || fail "lines lost counted: '${lost}'"
[ "$(grep -c 'No space left on device' "$work/w2.err")" = 1 ] || fail "the full disk said $(grep -c 'No space' "$work/w2.err") times: $(cat "$work/w2.err")"
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 -c '
import sys
from json_docs import by_vantage
ids = sorted(r["request_id"] for r in by_vantage(sys.argv[1])["server"]["requests"])
assert ids == ["f1", "f2", "f3", "f4"], ids' "$work/full.json" || fail "the report with the log failing"

# 3.
rc=0; "$TT" watch --metrics 127.0.0.1:0 --text --duration 1 > /dev/null 2> "$work/text.err" || rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$work/text.err")" = 1 ] || fail "--metrics --text: exit $rc: $(cat "$work/text.err")"
echo "watch --log: lines to the file (0600), a rotated file kept, SIGHUP opened a new one; /dev/full: said once, $lost lines lost and counted, every request exported and reported; --metrics --text refused"
