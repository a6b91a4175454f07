#!/usr/bin/env bash
# ttload (the load client of make bench) against tokentap serve: 20
# connections, 200 requests of T tokens; every event must be counted exactly
# (vllm chat: role + T tokens + [DONE]; with include_usage one more; tabby:
# T tokens + [DONE], CRLF separators; with include_usage the usage frame),
# no errors, every connection used. Also: it refuses a non-loopback target.
set -eu
. "$(dirname "$0")/lib.sh"
LOAD="$BUILD/tools/ttload"
[ -x "$TT" ] || fail "$TT not built"
[ -x "$LOAD" ] || fail "$LOAD not built"
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

set +e
"$LOAD" -c 1 -n 1 10.1.2.3:80 > /dev/null 2> "$work/refuse"; rc=$?
set -e
[ $rc = 2 ] && grep -q "refusing 10.1.2.3:80: only loopback" "$work/refuse" || fail "non-loopback target: rc $rc: $(cat "$work/refuse")"

tokens=30
for profile in vllm tabby; do
    "$TT" serve --listen 127.0.0.1:0 --profile $profile --ttft-ms 0 --itl-ms 0 --tokens 5 \
        > "$work/$profile.out" 2> "$work/$profile.err" &
    pids+=($!)
    for _ in $(seq 50); do grep -q '^listening on ' "$work/$profile.out" 2>/dev/null && break; sleep 0.1; done
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/$profile.out")
    [ -n "$port" ] || fail "$profile serve did not start: $(cat "$work/$profile.err")"
    for usage in "" --usage; do
        case "$profile$usage" in
            vllm) overhead=2 ;; vllm--usage) overhead=3 ;;
            tabby) overhead=1 ;; tabby--usage) overhead=2 ;;
        esac
        "$LOAD" -c 20 -n 200 -T $tokens -d 30 $usage "127.0.0.1:$port" > "$work/load.json" \
            || fail "$profile $usage: ttload exit $?: $(cat "$work/load.json")"
        /usr/bin/python3 - "$work/load.json" "$profile$usage" $((200 * (tokens + overhead))) <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read())
name, want = sys.argv[2], int(sys.argv[3])
assert r["errors"] == 0 and r["bad_status"] == 0, (name, r)
assert r["requests"] == 200 and r["unfinished"] == 0, (name, r)
assert r["events"] == want, (name, r["events"], want)
assert r["peak_connections"] == 20 and r["connections_served"] == 20, (name, r)
PY
    done
done
# the time limit ends a run without errors; requests then in flight are reported as unfinished
"$TT" serve --listen 127.0.0.1:0 --profile vllm --ttft-ms 0 --itl-ms 50 > "$work/slow.out" 2> "$work/slow.err" &
pids+=($!)
for _ in $(seq 50); do grep -q '^listening on ' "$work/slow.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/slow.out")
[ -n "$port" ] || fail "slow serve did not start: $(cat "$work/slow.err")"
"$LOAD" -c 5 -d 0.3 -T 100 "127.0.0.1:$port" > "$work/timed.json" || fail "timed run: $(cat "$work/timed.json")"
grep -q '"requests":0,.*"errors":0,.*"unfinished":5,' "$work/timed.json" || fail "timed run: $(cat "$work/timed.json")"
for p in "${pids[@]}"; do kill -TERM "$p"; wait "$p" || fail "serve exit $? on SIGTERM"; done
pids=()
echo "ttload: vllm and tabby, 20 connections x 200 requests of $tokens tokens, events counted exactly"
