#!/usr/bin/env bash
# watch, TLS plaintext of the openai npm SDK (v4, Node.js: OpenSSL linked
# into node, memory BIOs) against `tokentap serve --tls` (issue 13): a
# benchmark written with the SDK (openai_node_bench.js: 8 streamed chat
# completions, 4 at a time on keep-alive connections), already running
# (waiting for a file) when `watch --pid` starts on it; nothing restarted or
# changed. Skipped when node, npm or the registry is missing.
#  - every request whole at the tls vantage, its token events as many as
#    serve's token writes (its own log), none stamped before serve's
#    logged instant of the write, the median SSL_read return under 5 ms
#    after it (half the 10 ms between tokens: a token stamped with its
#    neighbour's write fails; each within 50 ms). About 0.1 ms on a quiet
#    machine; 2.35 ms was seen once on a loaded one (the bound was 2 ms
#    with 3 ms between tokens);
#  - the SDK's own first-chunk instant (start + its ttft) at or after the
#    tls vantage's first event of the same request (within 50 ms), and
#    every SSL call paired with its socket.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF uprobes"
command -v node >/dev/null || skip "node not installed"
command -v openssl >/dev/null || skip "openssl not installed"
npm=$(npm_cmd); [ -n "$npm" ] || skip "npm not installed"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
need_bpf "$work"
(cd "$work" && timeout 180 $npm install --no-audit --no-fund --silent --prefer-offline openai@4 > npm.log 2>&1) \
    || skip "npm cannot install openai here: $(tail -1 "$work/npm.log")"
self_signed_cert "$work"
start_serve "$work" --profile vllm --tls "$work/c.pem" "$work/k.pem" --ttft-ms 8 --itl-ms 10 --seed 5
# the benchmark's own script, run once GO exists (so that watch attaches to a running node first)
cat > "$work/after_go.js" <<'JS'
const fs = require("fs");
const [goFile, script, ...args] = process.argv.slice(2);
process.argv = [process.argv[0], script, ...args];
(function wait() { if (fs.existsSync(goFile)) require(script); else setTimeout(wait, 20); })();
JS
NODE_TLS_REJECT_UNAUTHORIZED=0 NODE_PATH="$work/node_modules" \
    node "$work/after_go.js" "$work/go" "$(cd "$(dirname "$0")" && pwd)/openai_node_bench.js" \
    "https://127.0.0.1:$SERVE_PORT" 4 8 "$work/result.json" sdk- > "$work/node.out" 2> "$work/node.err" &
npid=$!
sleep 0.5
"$TT" watch --pid "$npid" --json --events -o "$work/w.json" > /dev/null 2> "$work/w.err" &
wpid=$!
wait_tracing "$work/w.err"
touch "$work/go"
wait $npid || fail "the SDK benchmark exit $?: $(cat "$work/node.err")"
sleep 0.3
kill -INT $wpid; wait $wpid || fail "watch --pid node exit $?: $(cat "$work/w.err")"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || fail "serve --tls exit $?: $(cat "$work/serve.err")"
grep -q "TLS plaintext from [1-9].*/exe" "$work/w.err" || fail "node's executable not attached: $(cat "$work/w.err")"
grep -q ', 0 calls (0 bytes) whose socket was not known' "$work/w.err" \
    || fail "the SDK's SSL calls not all paired: $(tail -1 "$work/w.err")"

PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work" <<'PY' || fail "the SDK at the tls vantage: see above"
import json, statistics, sys
from json_docs import by_vantage
work = sys.argv[1]
res = json.load(open(f"{work}/result.json"))
assert res["completed"] == 8 and not any(res["errors"]), res["errors"]
log = [json.loads(l) for l in open(f"{work}/serve.log")]
tls = {r["request_id"]: r for r in by_vantage(f"{work}/w.json")["client_tls"]["requests"]}
lags, sdk_after = [], []
for i in range(8):
    rid = f"sdk-{i}"
    writes = [e["mono_ns"] for e in log if e["type"] == "write" and e["request_id"] == rid
              and any(k == "token" for _, k in e["events"])]
    assert rid in tls, (rid, sorted(tls))
    toks = [e["dispatch_mono_ns"] for e in tls[rid]["events"] if e["kind"] == "TOKEN"]
    assert len(toks) == len(writes) > 0, (rid, len(toks), len(writes))
    for t, w in zip(toks, writes):
        assert 0 <= t - w <= 50_000_000, (rid, t - w)
        lags.append(t - w)
    # the SDK's first chunk: start + ttft, both from process.hrtime (CLOCK_MONOTONIC)
    first_chunk = int(round((res["start_times"][i] + res["ttfts"][i]) * 1e9))
    first_event = min(e["dispatch_mono_ns"] for e in tls[rid]["events"])
    d = first_chunk - first_event
    assert -1_000 <= d <= 50_000_000, (rid, d)  # microsecond rounding of the float seconds
    sdk_after.append(d)
med = statistics.median(lags)
assert med <= 5_000_000, med
print("openai SDK over TLS: 8/8 requests whole, %d token events; SSL_read return minus serve's write median %.1f us "
      "(max %.1f us); the SDK's first chunk %.1f us (median) after the tls vantage's first event"
      % (len(lags), med / 1e3, max(lags) / 1e3, statistics.median(sdk_after) / 1e3))
PY
echo "watch TLS: the openai npm SDK over HTTPS, a running node traced, every token event against serve's log"
