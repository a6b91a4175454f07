#!/usr/bin/env bash
# tokentap watch with scatter/gather syscalls at the client vantage: a python
# client sends its request with sendmsg (2 iovecs) or writev (3) and reads the
# stream with recvmsg_into (2 small buffers) or os.readv (3 small buffers),
# so most reads spread over several iovec entries; a third client peeks
# (recvmsg with MSG_PEEK, which consumes nothing) before each recvmsg_into,
# so its bytes must be counted once. Every token write in
# serve's log must be a TOKEN event at the client vantage, and the text of
# those events, in order, must be the text the client itself decoded, and
# each must have a ready instant between serve's write and the client's read.
# Then a client reading with 80 buffers of 2 bytes: past the 64-entry bound
# the bytes are missing, and watch must say so (gaps, an incomplete request),
# never report a clean stream. Root; skipped when BPF cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

start_serve "$work" --profile vllm --ttft-ms 20 --itl-ms 3
spid=$SERVE_PID port=$SERVE_PORT

# client.py PORT REQUEST_ID SEND_MODE RECV_MODE BUFFER_SIZES OUT
cat > "$work/client.py" <<'PY'
import json, os, socket, sys
import sse_response
port, rid, send_mode, recv_mode, sizes, out = sys.argv[1:7]
sizes = [int(x) for x in sizes.split(",")]
body = json.dumps({"model": "m", "stream": True, "max_tokens": 40,
                   "messages": [{"role": "user", "content": "hi"}]}).encode()
head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: {rid}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
s = socket.create_connection(("127.0.0.1", int(port)))
if send_mode == "sendmsg":
    s.sendmsg([head, body])
else:
    os.writev(s.fileno(), [head[:10], head[10:], body])
raw = bytearray()
bufs = [bytearray(n) for n in sizes]
while True:
    if recv_mode == "recvmsg_peek":
        s.recvmsg(1 << 16, 0, socket.MSG_PEEK)
        n = s.recvmsg_into(bufs)[0]
    elif recv_mode == "recvmsg":
        n = s.recvmsg_into(bufs)[0]
    else:
        n = os.readv(s.fileno(), bufs)
    if n == 0:
        break
    got = b"".join(bufs)[:n]
    raw += got
    if raw.endswith(b"0\r\n\r\n") and b"[DONE]" in raw:
        break
s.close()
text = sse_response.chat_text(raw)
json.dump({"request_id": rid, "text": text, "bytes": len(raw)}, open(out, "w"))
PY

watch_start() {
    "$TT" watch --port "$port" --duration 30 --vantage client --events --json --text -q -o "$work/$1.json" \
        2> "$work/$1.err" &
    wpid=$!
    wait_tracing "$work/$1.err"
}
watch_stop() {
    sleep 0.2
    kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/$1.err")"
    grep -q ' 0 ring-buffer drops' "$work/$1.err" || fail "ring buffer dropped records: $(cat "$work/$1.err")"
}

watch_start iov
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 "$work/client.py" "$port" rm-1 sendmsg recvmsg 7,9 "$work/rm-1.json"
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 "$work/client.py" "$port" rv-1 writev readv 5,11,3 "$work/rv-1.json"
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 "$work/client.py" "$port" rp-1 sendmsg recvmsg_peek 7,9 "$work/rp-1.json"
watch_stop iov

watch_start cut
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 "$work/client.py" "$port" cut-1 sendmsg recvmsg "$(printf '2,%.0s' $(seq 79))2" "$work/cut-1.json"
watch_stop cut
kill -TERM $spid; wait $spid || fail "serve exit $?"

/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
log = [json.loads(l) for l in open(f"{work}/serve.log")]
rep = json.load(open(f"{work}/iov.json"))
assert rep["vantage"] == "client", rep["vantage"]
reqs = {r["request_id"]: r for r in rep["requests"]}
assert set(reqs) == {"rm-1", "rv-1", "rp-1"}, sorted(reqs)
for rid in ("rm-1", "rv-1", "rp-1"):
    mine = json.load(open(f"{work}/{rid}.json"))
    writes = [e for e in log if e["type"] == "write" and e["request_id"] == rid
              and any(k == "token" for _, k in e["events"])]
    toks = [e for e in reqs[rid]["events"] if e["kind"] == "TOKEN"]
    assert len(writes) == 40 and len(toks) == 40, (rid, len(writes), len(toks))
    seen = "".join(e.get("text", "") for e in toks)
    assert seen == mine["text"] and seen, (rid, seen[:80], mine["text"][:80])
    # Reads spread over several iovec entries are copied in pieces: the
    # kernel sends the ready instants it holds in a READY record before
    # them. Each token's instant lies between serve's write of it and the
    # client's read of it.
    for w, e in zip(writes, toks):
        assert e["ready_ns"] is not None, (rid, "no ready instant", e)
        assert w["mono_ns"] <= e["ready_ns"] <= e["dispatch_mono_ns"], (rid, w["mono_ns"], e)
print(f"watch iovec: recvmsg (2 iovecs), readv (3 iovecs) and recvmsg after a MSG_PEEK recvmsg clients, sendmsg and writev requests: "
      f"40/40 token events each, text identical to the client's own decode ({len(seen)} chars), "
      f"each with a ready instant between serve's write and the read")
cut = open(f"{work}/cut.err").read()
gap_line = [l for l in cut.splitlines() if "truncated syscalls" in l][0]
ntrunc = int(gap_line.split(" truncated syscalls")[0].rsplit(" ", 1)[1])
assert ntrunc > 0, gap_line
rep = json.load(open(f"{work}/cut.json"))
cut_toks = sum(1 for r in rep["requests"] for e in r["events"] if e["kind"] == "TOKEN")
assert cut_toks < 40, "a stream with bytes missing was reported whole"
print(f"watch iovec: 80 x 2-byte buffers: {ntrunc} syscalls cut at the 64-entry bound, counted and "
      f"turned into gaps; {cut_toks} of 40 token events claimed")
PY
