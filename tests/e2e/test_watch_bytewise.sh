#!/usr/bin/env bash
# tokentap watch at the client vantage of a client that reads one byte per
# recv: python3 reads the response with socket.recv(1) and stamps every
# read with time.perf_counter_ns() (CLOCK_MONOTONIC) as it returns. Every
# token write in serve's log must be a TOKEN event at the client vantage,
# its text the client's own, and the client's stamp of the read that
# completed each token event minus watch's instant (recv exit) must be >= 0
# and within 50 us (median). Root; skipped when BPF cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 15 --itl-ms 4
spid=$SERVE_PID port=$SERVE_PORT

"$TT" watch --port "$port" --duration 30 --vantage client --events --json --text -q -o "$work/events.json" \
    2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"

/usr/bin/python3 - "$port" "$work/reads.json" <<'PY' || fail "client failed"
import json, socket, sys, time
port, out = int(sys.argv[1]), sys.argv[2]
result = {}
for rid in ("bw-1", "bw-2"):
    body = json.dumps({"model": "m", "stream": True, "max_tokens": 25,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: {rid}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head + body)
    stamps, raw = [], bytearray()
    while True:
        b = s.recv(1)
        stamps.append(time.perf_counter_ns())
        if not b:
            break
        raw += b
    s.close()
    text = ""
    for line in raw.decode().split("\n"):
        line = line.strip("\r")
        if line.startswith("data: ") and line[6:].strip() != "[DONE]":
            for ch in json.loads(line[6:]).get("choices", []):
                text += (ch.get("delta") or {}).get("content") or ""
    result[rid] = {"stamps": stamps, "bytes": len(raw), "text": text}
json.dump(result, open(out, "w"))
PY
sleep 0.2
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"
kill -TERM $spid; wait $spid || fail "serve exit $?"
grep -q ' 0 ring-buffer drops' "$work/watch.err" || fail "ring buffer dropped records: $(cat "$work/watch.err")"

/usr/bin/python3 - "$work" <<'PY'
import bisect, json, statistics, sys
work = sys.argv[1]
rep = json.load(open(f"{work}/events.json"))
mine = json.load(open(f"{work}/reads.json"))
log = [json.loads(l) for l in open(f"{work}/serve.log")]
reqs = {r["request_id"]: r for r in rep["requests"]}
assert set(reqs) == set(mine), sorted(reqs)
diffs = []
for rid, m in mine.items():
    writes = [e for e in log if e["type"] == "write" and e["request_id"] == rid
              and any(k == "token" for _, k in e["events"])]
    toks = [e for e in reqs[rid]["events"] if e["kind"] == "TOKEN"]
    assert len(writes) == 25 and len(toks) == 25, (rid, len(writes), len(toks))
    seen = "".join(e.get("text", "") for e in toks)
    assert seen == m["text"] and seen, (rid, seen[:60], m["text"][:60])
    stamps = m["stamps"]
    for e in toks:
        t = e["dispatch_mono_ns"]
        k = bisect.bisect_left(stamps, t)
        assert k < len(stamps), f"{rid}: no client read stamped after the watch instant {t}"
        diffs.append(stamps[k] - t)
med = statistics.median(diffs)
nbytes = sum(m["bytes"] for m in mine.values())
print(f"watch bytewise: 2 streams read with recv(1) ({nbytes} reads), 25/25 token events each, text the "
      f"client's own; client's read stamp minus watch's recv-exit instant: median {med/1e3:.1f} us, "
      f"min {min(diffs)/1e3:.1f} us, max {max(diffs)/1e3:.1f} us")
assert min(diffs) >= 0, min(diffs)
assert med <= 50_000, med
PY
