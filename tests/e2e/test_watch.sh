#!/usr/bin/env bash
# tokentap watch (eBPF, server vantage) against tokentap serve's own write
# log: every token write serve logged must be a TOKEN event at the server
# vantage, its instant (syscall enter, CLOCK_MONOTONIC) within 50 us (median)
# of the log's mono_ns. Root; skipped when the BPF programs cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
command -v curl >/dev/null || skip "curl not installed"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 20 --itl-ms 5
spid=$SERVE_PID port=$SERVE_PORT

"$TT" watch --pid $spid --duration 3 --events --json -q -o "$work/events.json" 2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"
clients=()
for i in 1 2 3; do
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: w-$i" \
        -d '{"model":"m","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"hi"}]}' \
        "http://127.0.0.1:$port/v1/chat/completions" > "$work/curl-$i.out" &
    clients+=($!)
done
for c in "${clients[@]}"; do wait "$c" || fail "curl exit $?"; done
wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"
kill -TERM $spid; wait $spid || fail "serve exit $?"
grep -q ' 0 ring-buffer drops' "$work/watch.err" || fail "ring buffer dropped records: $(cat "$work/watch.err")"

/usr/bin/python3 - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
rep = json.load(open(f"{work}/events.json"))
assert rep["vantage"] == "server", rep["vantage"]
assert rep["clock"] == "monotonic", rep["clock"]
reqs = {r["request_id"]: r for r in rep["requests"]}
log = [json.loads(l) for l in open(f"{work}/serve.log")]
want = {f"w-{i}" for i in (1, 2, 3)}
assert set(reqs) == want, sorted(reqs)
diffs = []
for rid in sorted(want):
    writes = [e["mono_ns"] for e in log if e["type"] == "write" and e["request_id"] == rid
              and any(k == "token" for _, k in e["events"])]
    toks = [e["first_mono_ns"] for e in reqs[rid]["events"] if e["kind"] == "TOKEN"]
    assert len(writes) == 20, (rid, len(writes))
    assert len(toks) == len(writes), (rid, len(toks), len(writes))
    diffs += [t - w for t, w in zip(toks, writes)]
med = statistics.median(diffs)
print(f"watch: 3 streams, {len(diffs)} token writes all seen at the server vantage; syscall enter minus serve's "
      f"logged instant: median {med/1e3:.1f} us, min {min(diffs)/1e3:.1f} us, max {max(diffs)/1e3:.1f} us")
assert min(diffs) >= 0, "an event stamped before serve logged its write"
assert abs(med) <= 50_000, med
PY
