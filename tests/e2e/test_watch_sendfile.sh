#!/usr/bin/env bash
# tokentap watch and sendfile: a small python3 server streams 10 SSE token
# events and [DONE], writing events 4-6 with os.sendfile from a file and the
# rest with send. sendfile's bytes never pass through a user buffer, so the
# server vantage cannot copy them: they must show as a gap of exactly their
# length (the request incomplete, never a clean stream with 7 tokens), the
# counts on stderr; the client vantage (curl's reads) has all 10 tokens.
# Root; skipped when BPF cannot load.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
command -v curl >/dev/null || skip "curl not installed"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

need_bpf "$work"

cat > "$work/server.py" <<'PY'
import json, os, socket, sys, tempfile
work = sys.argv[1]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(4)
print(ls.getsockname()[1], flush=True)
c, _ = ls.accept()
req = b""
while b"\r\n\r\n" not in req:
    req += c.recv(65536)
head, _, body = req.partition(b"\r\n\r\n")
length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
while len(body) < length:
    body += c.recv(65536)
events = []
for i in range(10):
    chunk = {"id": "chatcmpl-sf", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": f" tok{i}"}, "finish_reason": None}]}
    events.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
events.append(b"data: [DONE]\n\n")
c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
          b"Content-Length: %d\r\nConnection: close\r\n\r\n" % sum(len(e) for e in events))
file_fd, path = tempfile.mkstemp(dir=work)
sent_by_file = 0
for i, ev in enumerate(events):
    if 4 <= i <= 6:
        os.pwrite(file_fd, ev, 0)
        done = 0
        while done < len(ev):
            done += os.sendfile(c.fileno(), file_fd, done, len(ev) - done)
        sent_by_file += len(ev)
    else:
        c.sendall(ev)
c.close()
json.dump({"sendfile_bytes": sent_by_file}, open(os.path.join(work, "server.json"), "w"))
PY
/usr/bin/python3 "$work/server.py" "$work" > "$work/server.out" &
srv=$!
for _ in $(seq 50); do [ -s "$work/server.out" ] && break; sleep 0.1; done
port=$(head -1 "$work/server.out")
[ -n "$port" ] || fail "the python server did not start"

"$TT" watch --port "$port" --duration 30 --json -q -o "$work/report.json" 2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"
curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H 'x-request-id: sf-1' \
    -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}' \
    "http://127.0.0.1:$port/v1/chat/completions" > "$work/curl.out" || fail "curl exit $?"
wait $srv || fail "python server exit $?"
sleep 0.2
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"

/usr/bin/python3 - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
sent = json.load(open(f"{work}/server.json"))["sendfile_bytes"]
err = open(f"{work}/watch.err").read()
m = re.search(r"(\d+) sendfile or mmsg calls not copied \((\d+) bytes\)", err)
assert m and int(m.group(1)) >= 3 and int(m.group(2)) == sent, (sent, err)
text = open(f"{work}/report.json").read()
docs, at, dec = {}, 0, json.JSONDecoder()
while at < len(text):
    if text[at].isspace():
        at += 1
        continue
    doc, at = dec.raw_decode(text, at)
    docs[doc["vantage"]] = doc
(srv,) = docs["server"]["requests"]
(cli,) = docs["client"]["requests"]
assert srv["request_id"] == cli["request_id"] == "sf-1"
assert not srv["complete"] and "gap" in srv["incomplete_reasons"], (srv["complete"], srv["incomplete_reasons"])
assert docs["server"]["source"]["gap_bytes"] == sent, (docs["server"]["source"], sent)
assert docs["client"]["source"]["gap_bytes"] == 0, docs["client"]["source"]
assert srv["vantages"]["server"]["token_events"] < 10
assert cli["complete"] and cli["vantages"]["client"]["token_events"] == 10, cli
print(f"watch sendfile: {m.group(1)} sendfile syscalls, {sent} bytes: a gap of exactly that length at the server "
      f"vantage (request incomplete: {srv['incomplete_reasons']}, "
      f"{srv['vantages']['server']['token_events']} of 10 tokens), all 10 tokens at the client vantage")
PY
