#!/usr/bin/env bash
# A live run and the offline analysis of what it recorded give the same
# report: `tokentap watch --port P` (live, both socket vantages) and
# `tokentap record -o DIR --port P` trace the same tokentap serve at the same
# time (two independent sets of BPF programs); `tokentap analyze --json DIR`
# must then hold, per request and vantage, the same requests, token events
# and instants as the live watch: each tracer stamps a syscall in its own
# program, one running after the other on the same tracepoint, so an
# instant may differ by the other's run time (microseconds), not more than
# 50 us but for one request vantage whose CPU the host took between the two
# (a VM's steal time; still under 1 ms). Root; skipped when BPF cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
command -v curl >/dev/null || skip "curl not installed"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 15 --itl-ms 4
spid=$SERVE_PID port=$SERVE_PORT

"$TT" watch --port "$port" --duration 4 --json -q -o "$work/live.json" 2> "$work/watch.err" &
wpid=$!
"$TT" record -o "$work/rec" --port "$port" --duration 4 2> "$work/record.err" &
rpid=$!
for _ in $(seq 50); do
    grep -q '^tokentap watch: tracing' "$work/watch.err" 2>/dev/null &&
        grep -q '^tokentap record: recording' "$work/record.err" 2>/dev/null && break
    sleep 0.1
done
grep -q '^tokentap watch: tracing' "$work/watch.err" || fail "watch did not start: $(cat "$work/watch.err")"
grep -q '^tokentap record: recording' "$work/record.err" || fail "record did not start: $(cat "$work/record.err")"
sleep 0.2
clients=()
for i in 1 2 3 4; do
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: lr-$i" \
        -d '{"model":"m","stream":true,"max_tokens":15,"messages":[{"role":"user","content":"hi"}]}' \
        "http://127.0.0.1:$port/v1/chat/completions" > "$work/curl-$i.out" &
    clients+=($!)
done
for c in "${clients[@]}"; do wait "$c" || fail "curl exit $?"; done
wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"
wait $rpid || fail "record exit $?: $(cat "$work/record.err")"
kill -TERM $spid; wait $spid || fail "serve exit $?"
grep -q ' 0 ring-buffer drops' "$work/watch.err" || fail "watch's ring buffer dropped records: $(cat "$work/watch.err")"
"$TT" analyze --json -o "$work/offline.json" "$work/rec" 2> "$work/analyze.err" || fail "analyze DIR exit $?: $(cat "$work/analyze.err")"

PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work" <<'PY'
import json, sys
from json_docs import documents
work = sys.argv[1]

def live_views(path):
    """watch --json: one document per vantage, or one holding several."""
    docs = documents(path)
    views = {}
    for d in docs:
        for r in d["requests"]:
            if r.get("request_id", "").startswith("lr-"):
                for v, blk in r["vantages"].items():
                    views[(r["request_id"], v)] = blk
    return views

live = live_views(f"{work}/live.json")
off = json.load(open(f"{work}/offline.json"))
offline = {}
for r in off["requests"]:
    if (r.get("request_id") or "").startswith("lr-"):
        for v, blk in r["vantages"].items():
            offline[(r["request_id"], v)] = blk
want = {(f"lr-{i}", v) for i in range(1, 5) for v in ("server", "client")}
assert want <= set(live), sorted(set(live))
assert want <= set(offline), sorted(set(offline))
instants = ["req_first_mono_ns", "first_token_mono_ns", "last_token_mono_ns", "ttft_ns", "e2el_ns"]
# A guest's CPU may be taken by its host between the two programs (steal
# time, tens of us): one request vantage may be further apart, not past 1 ms.
worst, where, far = 0, None, []
for k in sorted(want):
    a, b = live[k], offline[k]
    assert a["token_events"] == b["token_events"] == 15, (k, a["token_events"], b["token_events"])
    for f in instants:
        assert a.get(f) is not None and b.get(f) is not None, (k, f)
        apart = abs(a[f] - b[f])
        if apart > 50_000 and k not in far:
            far.append(k)
        if apart > worst:
            worst, where = apart, (k, f, a[f], b[f])
assert len(far) <= 1 and worst <= 1_000_000, (worst, far, "request, vantage, instant, live, recorded:", where)
print(f"live vs recorded: {len(want)} request vantages (4 requests x server, client), 15 token events each "
      f"in both; instants apart by at most {worst / 1e3:.1f} us ({len(far)} vantage past 50 us)")
PY
