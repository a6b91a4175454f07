#!/usr/bin/env bash
# serve's write log against a real client's own receive log: python3 aiohttp
# streams from tokentap serve and stamps every read with time.perf_counter_ns()
# (CLOCK_MONOTONIC, the clock serve's log uses). Each token write must be
# received after it was written (causality) and soon after: median under 2 ms,
# p99 under 50 ms on loopback (the machine is shared). Every token write must be matched.
set -eu
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null || skip "python3-aiohttp not installed"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
"$TT" serve --listen 127.0.0.1:0 --profile vllm --ttft-ms 20 --itl-ms uniform:5:15 --seed 3 \
    --log "$work/serve.jsonl" > "$work/serve.out" &
port=$(wait_listening "$work/serve.out")
[ -n "$port" ] || fail "serve did not start: $(cat "$work/serve.out")"
/usr/bin/python3 - "$port" "$work/client.jsonl" <<'PY'
import asyncio, json, sys, time
import aiohttp
port, out = sys.argv[1], sys.argv[2]
async def one(session, i, log):
    body = {"model": "m", "stream": True, "max_tokens": 30,
            "stream_options": {"include_usage": True}, "messages": [{"role": "user", "content": "hi"}]}
    got = 0
    async with session.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body,
                            headers={"x-request-id": f"cl-{i}"}) as resp:
        assert resp.status == 200, resp.status
        async for data in resp.content.iter_any():
            now = time.perf_counter_ns()
            got += len(data)
            log.append({"request_id": f"cl-{i}", "recv_ns": now, "body_end": got})
async def main():
    log = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as s:
        await asyncio.gather(*(one(s, i, log) for i in range(4)))
    with open(out, "w") as f:
        for e in log:
            f.write(json.dumps(e) + "\n")
asyncio.run(main())
PY
kill -TERM %1; wait %1 2>/dev/null || true
/usr/bin/python3 - "$work/serve.jsonl" "$work/client.jsonl" <<'PY'
import json, statistics, sys
serve = [json.loads(l) for l in open(sys.argv[1])]
client = [json.loads(l) for l in open(sys.argv[2])]
diffs = []
for w in serve:
    if w.get("type") != "write" or not any(k == "token" for _, k in w.get("events", [])):
        continue
    end = w["body_off"] + w["len"]
    reads = [c for c in client if c["request_id"] == w["request_id"] and c["body_end"] >= end]
    assert reads, f"token write of {w['request_id']} ending at {end} never reached the client"
    diffs.append(min(r["recv_ns"] for r in reads) - w["mono_ns"])
assert len(diffs) == 4 * 30, len(diffs)
assert min(diffs) > 0, f"a read stamped {-min(diffs)} ns before the write that carried it"
diffs.sort()
med, p99 = statistics.median(diffs), diffs[int(0.99 * (len(diffs) - 1))]
print(f"client log: {len(diffs)} token writes matched; client read minus serve write median {med/1e3:.0f} us, p99 {p99/1e3:.0f} us")
assert med < 2_000_000 and p99 < 50_000_000, (med, p99)
PY
