#!/usr/bin/env bash
# tokentap serve --workers 3 under ttload (30 keep-alive connections, 600
# streamed requests, a 1 ms ITL so streams interleave): every request served
# and every event counted by the client; the log has whole JSON lines only, the
# clock line first, a request line and contiguous, ordered writes for each of
# the 600 requests, and per connection its requests in order; every worker
# thread ran; GET /metrics sums all workers' streams. Also the option's usage
# errors.
set -eu
. "$(dirname "$0")/lib.sh"
LOAD="$BUILD/tools/ttload"
[ -x "$TT" ] || fail "$TT not built"
[ -x "$LOAD" ] || fail "$LOAD not built"
command -v curl > /dev/null || skip "curl not installed"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

for bad in 0 65 x; do
    set +e; "$TT" serve --listen 127.0.0.1:0 --profile vllm --workers $bad > /dev/null 2> "$work/e"; rc=$?; set -e
    [ $rc = 2 ] && grep -q "^tokentap serve: --workers: '$bad' is not a count in \[1, 64\]" "$work/e" \
        || fail "--workers $bad: rc $rc: $(cat "$work/e")"
done

workers=3 conns=30 requests=600 tokens=20
start_serve "$work" --profile vllm --workers $workers --ttft-ms 0 --itl-ms 1 --tokens 5
"$LOAD" -c $conns -n $requests -T $tokens -d 60 "127.0.0.1:$SERVE_PORT" > "$work/load.json" \
    || fail "ttload exit $?: $(cat "$work/load.json")"
threads=$(ls "/proc/$SERVE_PID/task" | wc -l)
[ "$threads" = $workers ] || fail "expected $workers threads, found $threads"
# CPU time of every thread (ns, from schedstat): each worker must have served
for t in /proc/$SERVE_PID/task/*; do awk '{print $1}' "$t/schedstat"; done > "$work/thread_ns"
# a worker counts a stream's end just after its last send: allow /metrics a moment to catch up
for _ in $(seq 50); do
    curl -sS --max-time 10 -o "$work/metrics" "http://127.0.0.1:$SERVE_PORT/metrics" || fail "/metrics"
    grep -q "^vllm:request_success_total{model_name=\"tokentap-model\"} $requests\$" "$work/metrics" && break
    sleep 0.1
done
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || fail "serve exited $? on SIGTERM: $(cat "$work/serve.err")"

/usr/bin/python3 - "$work" $conns $requests $tokens <<'PY'
import json, sys
work, conns, requests, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = json.loads(open(f"{work}/load.json").read())
events = tokens + 2  # role, tokens, [DONE]
assert r["errors"] == 0 and r["bad_status"] == 0 and r["unfinished"] == 0, r
assert r["requests"] == requests and r["events"] == requests * events, r
assert r["connections_served"] == conns, r

raw = open(f"{work}/serve.log", "rb").read()
assert raw.endswith(b"\n"), "log does not end with a whole line"
lines = [json.loads(l) for l in raw.decode().splitlines()]  # a torn line would not parse
assert lines[0]["type"] == "clock", lines[0]
reqs, writes, order, metrics_keys = {}, {}, {}, set()
for e in lines[1:]:
    key = (e["peer"], e["ordinal"])
    if e.get("path") == "/metrics" or key in metrics_keys:
        metrics_keys.add(key)  # the GET /metrics below, on its own connection
        continue
    if e["type"] == "request":
        assert key not in reqs, ("request logged twice", key)
        reqs[key] = e
        last = order.setdefault(e["peer"], 0)
        assert e["ordinal"] == last + 1, ("requests out of order on", e["peer"], last, e["ordinal"])
        order[e["peer"]] = e["ordinal"]
    elif e["type"] == "write":
        assert key in reqs, ("write before its request line", e)
        assert order[e["peer"]] == e["ordinal"], ("write of an earlier request after a later one", e)
        writes.setdefault(key, []).append(e)
    else:
        raise AssertionError(e)
assert len(reqs) == requests, len(reqs)
assert len(order) == conns, len(order)
for key, req in reqs.items():
    assert req["status"] == 200 and req["events"] == events and req["tokens"] == tokens, req
    ws = writes[key]
    assert ws[0]["head_len"] > 0 and ws[0]["len"] == 0, ws[0]
    off, idx, t = 0, 0, req["request_read_ns"]
    for w in ws[1:]:
        assert w["body_off"] == off and w["mono_ns"] >= t, (key, w, off)
        off += w["len"]
        t = w["mono_ns"]
        for i, _kind in w["events"]:
            assert i == idx, (key, w, idx)
            idx += 1
    assert idx == events, (key, idx)
ns = [int(x) for x in open(f"{work}/thread_ns").read().split()]
assert len(ns) == 3 and min(ns) > 1_000_000, ("a worker did not run", ns)
prom = {}
for l in open(f"{work}/metrics"):
    if l and not l.startswith("#"):
        name, val = l.rsplit(" ", 1)
        prom[name] = float(val)
assert prom.get('vllm:request_success_total{model_name="tokentap-model"}') == requests, prom
assert prom.get('vllm:time_to_first_token_seconds_count{model_name="tokentap-model"}') == requests, prom
print(f"serve workers: {requests} requests on {conns} connections over 3 workers, log whole and in order, "
      f"thread CPU ms {[round(x / 1e6) for x in ns]}, /metrics summed")
PY
