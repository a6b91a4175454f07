#!/usr/bin/env bash
# What watch holds is bounded by its options, not by the traffic (issue 14):
#  1. --max-connections 4: 8 keep-alive connections make one request each
#     and stay open, idle, while ttload streams over 3 others. The
#     connections followed never exceed 4 (tokentap_connections_followed,
#     sampled), the idle ones are evicted first (least recently active:
#     tokentap_evictions_total), and every request is measured whole with
#     exactly the tokens serve wrote (16): the 8 before their connections
#     went idle, and all of ttload's but those its stop cut short (at the
#     client each of those; at the server those serve had not finished
#     writing: one it had is whole there).
#  2. --max-memory 16 with every request kept (--keep-requests 100000):
#     the watcher's heap (tokentap_heap_bytes, sampled every 0.2 s) stays
#     within 16 MiB plus one poll's growth (4 MiB allowed), and the kept
#     requests are let go to hold it (tokentap_requests_released_total).
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
work_dir
need_bpf "$work"
start_serve "$work" --profile vllm --ttft-ms 1 --itl-ms 1 --tokens 16

# idle.py PORT N GO: N keep-alive connections, one streamed request each
# (x-request-id idle-K), read whole; then held open, idle, until GO exists.
cat > "$work/idle.py" <<'PY'
import os, socket, sys, time
port, n, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
body = b'{"model":"m","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"x"}]}'
socks = []
for k in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id: idle-%d\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (k, len(body), body))
    got = b""
    while not got.endswith(b"0\r\n\r\n"):
        got += s.recv(65536)
    socks.append(s)
print("idle", flush=True)
while not os.path.exists(go):
    time.sleep(0.05)
PY

# watch_run NAME SECONDS CONNS WATCH_ARGS... : watch the serve port under
# ttload -c CONNS for SECONDS (with 8 idle connections first when NAME is
# conns), sampling the metrics page every 0.2 s into NAME.samples.
watch_run() {
    local name=$1 secs=$2 conns=$3; shift 3
    TOKENTAP_NO_TLS=1 "$TT" watch --port "$SERVE_PORT" --metrics 127.0.0.1:0 -q --interval 0 --json \
        -o "$work/$name.json" "$@" > /dev/null 2> "$work/$name.err" &
    local wpid=$!
    wait_tracing "$work/$name.err"
    local mport; mport=$(sed -n 's/.*metrics on port \([0-9]*\),.*/\1/p' "$work/$name.err")
    if [ "$name" = conns ]; then
        /usr/bin/python3 "$work/idle.py" "$SERVE_PORT" 8 "$work/go" > "$work/idle.out" 2>&1 &
        for _ in $(seq 100); do grep -q idle "$work/idle.out" && break; sleep 0.05; done
        grep -q idle "$work/idle.out" || fail "the idle connections: $(cat "$work/idle.out")"
    fi
    "$BUILD/tools/ttload" -c "$conns" -d "$secs" -T 16 "127.0.0.1:$SERVE_PORT" > "$work/$name.load" 2>&1 &
    local lpid=$!
    while kill -0 $lpid 2>/dev/null; do
        curl -sS "http://127.0.0.1:$mport/metrics" >> "$work/$name.samples" || true
        echo "# sample" >> "$work/$name.samples"
        sleep 0.2
    done
    wait $lpid || fail "ttload: $(cat "$work/$name.load")"
    touch "$work/go"
    # until serve is done with what ttload cut (its log still for 0.3 s;
    # at most 5 s): slower under the sanitizers
    local size=-1 still=0
    for _ in $(seq 50); do
        local now; now=$(stat -c %s "$work/serve.log")
        if [ "$now" = "$size" ]; then still=$((still + 1)); else still=0; fi
        [ $still -ge 3 ] && break
        size=$now
        sleep 0.1
    done
    curl -sS "http://127.0.0.1:$mport/metrics" > "$work/$name.last"
    cp "$work/serve.log" "$work/$name.serve.log" # what serve answered up to here
    kill -INT $wpid
    local rc=0; wait $wpid || rc=$?
    [ $rc = 0 ] || fail "watch ($name) exit $rc: $(tail -3 "$work/$name.err")"
}
watch_run conns 4 3 --max-connections 4 --keep-requests 100000
watch_run heap 6 8 --max-memory 16 --keep-requests 100000
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work" <<'PY'
import re, sys
from json_docs import by_vantage
work = sys.argv[1]
def values(text, name, **labels):
    out = []
    for line in text.splitlines():
        m = re.match(r'^%s(\{[^}]*\})? (\S+)$' % re.escape(name), line)
        if m and all('%s="%s"' % kv in (m.group(1) or "") for kv in labels.items()):
            out.append(float(m.group(2)))
    return out
samples = open(f"{work}/conns.samples").read().split("# sample")
followed = [max(values(s, "tokentap_connections_followed") or [0]) for s in samples if s.strip()]
last = open(f"{work}/conns.last").read()
evicted = sum(values(last, "tokentap_evictions_total", what="connection"))
assert followed and max(followed) <= 4, ("connections followed past --max-connections 4", max(followed))
assert evicted >= 7, ("11 connections, at most 4 followed, yet evictions:", evicted)
import json
load = json.loads(open(f"{work}/conns.load").read().strip().splitlines()[-1])
made, unfinished = load["requests"], load["unfinished"]
docs = by_vantage(f"{work}/conns.json")
reqs = [r for d in docs.values() for r in d["requests"]]
server = docs["server"]["requests"]
whole = [r for r in server if r["complete"]]
broken = [(r["request_id"], r["incomplete_reasons"]) for r in server if not r["complete"]]
client_broken = [(r["request_id"], r["incomplete_reasons"]) for r in docs["client"]["requests"] if not r["complete"]
                 and not r["request_id"].startswith("idle-")]
wrong = [(r["request_id"], v["token_events"]) for r in reqs if r["complete"] for v in r["vantages"].values()
         if v["token_events"] != 16]
idle = sorted(r["request_id"] for r in whole if r["request_id"].startswith("idle-"))
# ttload stops with requests in flight: those, and only those, are cut at
# the client; at the server, those of them serve had not written whole.
# On a miss, the requests serve answered (its log) that watch has not at all.
seen = {r["request_id"] for r in server}
served = {json.loads(l).get("request_id") for l in open(f"{work}/conns.serve.log") if '"request_id"' in l}
unseen = sorted(i for i in served - seen if i)
# on a miss, also what watch said of its records (ring-buffer drops, gaps)
said = [l.strip() for l in open(f"{work}/conns.err") if "records" in l or "gap" in l]
# and the server vantage's evictions as they grew (a sample each 0.2 s)
grew = [max(values(s, "tokentap_evictions_total", vantage="server", what="connection") or [0]) for s in samples
        if s.strip()]
cut_at_client = {i for i, _ in client_broken}
ok = len(client_broken) == unfinished and {i for i, _ in broken} <= cut_at_client and not wrong
assert ok, (broken[:5], client_broken[:5], unfinished, wrong[:5], "served, not seen:", unseen[:5], "watch:", said[-2:],
            "server evictions by sample:", grew)
assert len(idle) == 8 and len(whole) == made + 8 + unfinished - len(broken), (idle, len(whole), made, len(broken))
heap = [max(values(s, "tokentap_heap_bytes") or [0]) for s in open(f"{work}/heap.samples").read().split("# sample") if s.strip()]
released = sum(values(open(f"{work}/heap.last").read(), "tokentap_requests_released_total"))
assert max(heap) <= 20 * 2**20, ("heap past --max-memory 16 (+4 MiB)", max(heap) / 2**20)
assert released > 0, "the kept requests were never let go under --max-memory 16"
print("bounds: --max-connections 4, 8 idle connections and 3 busy ones: at most %d followed, %d evicted, "
      "%d requests whole at the server with 16 tokens each (%d ttload finished, 8 idle, %d cut at the client "
      "only); --max-memory 16: heap at most %.1f MiB, %d requests let go"
      % (max(followed), evicted, len(whole), made, unfinished - len(broken), max(heap) / 2**20, released))
PY
