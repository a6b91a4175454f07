#!/usr/bin/env bash
# tokentap watch at the client vantage. watch --port of tokentap serve traces
# both ends; the client vantage is the one asked for here.
#  1. python3 aiohttp streams 4 requests and stamps every read with
#     time.perf_counter_ns() (CLOCK_MONOTONIC) the moment the bytes reach
#     its protocol (data_received, right after the recv returned). Every token
#     write in serve's log must be a TOKEN event at the client vantage, and the
#     client's stamp of the read that completed each token event minus watch's
#     instant (recv exit) must be >= 0 and within 50 us (median).
#  2. curl streams 2 requests (its recv and send): TOKEN events at the client
#     vantage equal serve's logged token writes, request by request.
# Root; skipped when the BPF programs cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
command -v curl >/dev/null || skip "curl not installed"
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null || skip "python3-aiohttp not installed"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 20 --itl-ms 5
spid=$SERVE_PID port=$SERVE_PORT

"$TT" watch --port "$port" --duration 30 --vantage client --events --json -q -o "$work/events.json" \
    2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"

timeout 60 /usr/bin/python3 "$(dirname "$0")/aiohttp_read_log_client.py" "$port" "$work/client.jsonl" \
    || fail "aiohttp client exit $?"
for i in 1 2; do
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: cu-$i" \
        -d '{"model":"m","stream":true,"max_tokens":25,"messages":[{"role":"user","content":"hi"}]}' \
        "http://127.0.0.1:$port/v1/chat/completions" > "$work/curl-$i.out" || fail "curl exit $?"
done
sleep 0.2
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"
kill -TERM $spid; wait $spid || fail "serve exit $?"
grep -q ' 0 ring-buffer drops' "$work/watch.err" || fail "ring buffer dropped records: $(cat "$work/watch.err")"

/usr/bin/python3 - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
rep = json.load(open(f"{work}/events.json"))
assert rep["vantage"] == "client", rep["vantage"]
reqs = {r["request_id"]: r for r in rep["requests"]}
log = [json.loads(l) for l in open(f"{work}/serve.log")]
reads = [json.loads(l) for l in open(f"{work}/client.jsonl")]
want = {f"cl-{i}" for i in range(4)} | {"cu-1", "cu-2"}
assert set(reqs) == want, sorted(reqs)
diffs = []
for rid in sorted(want):
    writes = [e for e in log if e["type"] == "write" and e["request_id"] == rid
              and any(k == "token" for _, k in e["events"])]
    toks = [e["dispatch_mono_ns"] for e in reqs[rid]["events"] if e["kind"] == "TOKEN"]
    assert len(writes) == (25 if rid.startswith("cu") else 30), (rid, len(writes))
    assert len(toks) == len(writes), (rid, len(toks), len(writes))
    # each token reached the client after serve wrote it
    assert all(t > w["mono_ns"] for t, w in zip(toks, writes)), rid
    if rid.startswith("cl"):
        mine = sorted(r["recv_ns"] for r in reads if r["request_id"] == rid)
        for t in toks:
            later = [r for r in mine if r >= t]
            assert later, f"{rid}: no client read stamped after the watch instant {t}"
            diffs.append(later[0] - t)
med = statistics.median(diffs)
print(f"watch client vantage: 6 streams (4 aiohttp, 2 curl), every token write seen; aiohttp's own read stamp "
      f"minus watch's recv-exit instant over {len(diffs)} tokens: median {med/1e3:.1f} us, "
      f"min {min(diffs)/1e3:.1f} us, max {max(diffs)/1e3:.1f} us")
assert med <= 50_000, med
PY
