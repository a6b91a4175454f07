#!/usr/bin/env bash
# tokentap run with node and the openai npm package (installed into a
# temporary directory; skipped when node, npm or the registry is missing).
# Two streamed chat completions: node's output is identical with and without
# the probe (two serves, same seed), and every token write of serve's log is
# a TOKEN event at the client vantage, after serve wrote it.
set -eu
. "$(dirname "$0")/lib.sh"
command -v node >/dev/null || skip "node not installed"
npm=$(npm_cmd); [ -n "$npm" ] || skip "npm not installed"
[ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/libtokentap-probe.so not built"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
(cd "$work" && timeout 180 $npm install --no-audit --no-fund --silent --prefer-offline openai@4 > npm.log 2>&1) \
    || skip "npm cannot install openai here: $(tail -1 "$work/npm.log")"
cat > "$work/client.js" <<'JS'
const OpenAI = require('openai');
const port = process.argv[2];
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'none', maxRetries: 0 });
(async () => {
  for (const id of ['nd-1', 'nd-2']) {
    const stream = await client.chat.completions.create(
      { model: 'm', stream: true, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-request-id': id } });
    for await (const chunk of stream) console.log(JSON.stringify(chunk));
  }
})().catch((e) => { console.error(e); process.exit(1); });
JS
mkdir "$work/plain" "$work/probe"
start_serve "$work/plain" --profile vllm --ttft-ms 10 --itl-ms 3 --created 1700000000 --seed 3
NODE_PATH="$work/node_modules" node "$work/client.js" "$SERVE_PORT" > "$work/plain/out.txt" || fail "node exit $?"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || true
start_serve "$work/probe" --profile vllm --ttft-ms 10 --itl-ms 3 --created 1700000000 --seed 3
NODE_PATH="$work/node_modules" "$TT" run --json --events --report "$work/probe/events.json" -- \
    node "$work/client.js" "$SERVE_PORT" > "$work/probe/out.txt" 2> "$work/probe/run.err" \
    || fail "run exit $?: $(cat "$work/probe/run.err")"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || true
[ "$(wc -l < "$work/plain/out.txt")" -ge 40 ] || fail "node printed too little: $(head -3 "$work/plain/out.txt")"
cmp "$work/plain/out.txt" "$work/probe/out.txt" || fail "node's output differs under the probe"
/usr/bin/python3 - "$work/probe" <<'PY'
import json, sys
d = sys.argv[1]
log = [json.loads(l) for l in open(f"{d}/serve.log")]
rep = json.load(open(f"{d}/events.json"))
assert rep["vantage"] == "client", rep["vantage"]
reqs = {r["request_id"]: r for r in rep["requests"]}
assert set(reqs) == {"nd-1", "nd-2"}, sorted(reqs)
for rid, r in reqs.items():
    w = [e["mono_ns"] for e in log if e["type"] == "write" and e["request_id"] == rid
         and any(k == "token" for _, k in e["events"])]
    t = [e["dispatch_mono_ns"] for e in r["events"] if e["kind"] == "TOKEN"]
    assert len(w) == 20 and len(t) == 20, (rid, len(w), len(t))
    assert all(b > a for a, b in zip(w, t)), rid
print("tokentap run: node + openai npm, output identical with and without the probe, 40 token writes seen")
PY
