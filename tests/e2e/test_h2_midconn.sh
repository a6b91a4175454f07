#!/usr/bin/env bash
# HTTP/2 captured from the middle of a connection (issue 15): `tokentap
# serve --http2 --profile vllm --log` streams 4 slow answers at once to
# `h2load -n 4 -c 1 -m 4` on one connection while a loopback capture runs;
# the capture is then cut with editcap to begin at an instant between two
# writes well inside the streams (after every request, handshake and
# response head). `tokentap analyze` of the cut capture must read the
# connection as HTTP/2 joined mid-stream (a connection note), give each
# stream that still streamed as one request marked request-not-captured,
# and its token events must be serve's token writes after the cut: the same
# count, each seen on the wire no earlier than 1 ms before serve wrote it
# and the median within 2 ms after (test_truth_http2.sh's tolerance). The
# whole capture, analysed too, still gives the 4 streams whole. Then an
# HTTP/1.1 capture (curl, two streamed answers on one connection) cut
# before every packet is never read as HTTP/2.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "live capture needs root (libpcap on lo)"
command -v h2load >/dev/null || skip "h2load not installed (Debian nghttp2-client)"
command -v editcap >/dev/null && command -v tshark >/dev/null || skip "editcap or tshark not installed (Debian tshark)"
command -v curl >/dev/null || skip "curl not installed"
[ -x "$BUILD/tools/ttcapture" ] || fail "$BUILD/tools/ttcapture not built"
work_dir

printf '%s' '{"model":"m1","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"hi"}]}' > "$work/body.json"
start_serve "$work" --profile vllm --http2 --seed 9 --ttft-ms 150 --itl-ms uniform:30:90
pid=$SERVE_PID; port=$SERVE_PORT
start_capture "$work/full.pcap" "tcp port $port"
timeout 30 h2load -n 4 -c 1 -m 4 -d "$work/body.json" -H 'content-type: application/json' \
    "http://127.0.0.1:$port/v1/chat/completions" > "$work/h2load.out" 2>&1 || fail "h2load: $(cat "$work/h2load.out")"
grep -q '^requests: 4 total, 4 started, 4 done, 4 succeeded' "$work/h2load.out" \
    || fail "h2load: $(grep -E '^requests' "$work/h2load.out")"
stop_capture "$work/full.pcap"
kill -TERM "$pid"; wait "$pid" || fail "serve exit $?"

# the cut: the middle of the widest pause between two writes in the middle
# third of the token writes (wall clock, as the capture's timestamps)
cut=$(/usr/bin/python3 - "$work/serve.log" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
shift = lines[0]["realtime_ns"] - lines[0]["mono_ns"]
w = sorted(l["mono_ns"] + shift for l in lines if l["type"] == "write")
tok = sorted(l["mono_ns"] + shift for l in lines if l["type"] == "write" and any(k == "token" for _, k in l["events"]))
lo, hi = tok[len(tok) // 3], tok[2 * len(tok) // 3]
best = max((b - a, a, b) for a, b in zip(w, w[1:]) if lo <= a and b <= hi)
at = (best[1] + best[2]) // 2
print(f"{at // 10**9}.{at % 10**9:09d}")
PY
)
editcap -A "$cut" "$work/full.pcap" "$work/cut.pcap" > "$work/editcap.out" 2>&1 || fail "editcap: $(cat "$work/editcap.out")"
"$TT" analyze --json "$work/full.pcap" > "$work/full.json" || fail "analyze full exit $?"
"$TT" analyze --json "$work/cut.pcap" > "$work/cut.json" || fail "analyze cut exit $?"
"$TT" analyze --events --json "$work/cut.pcap" > "$work/cut_events.json" || fail "analyze --events cut exit $?"
"$TT" analyze "$work/cut.pcap" > "$work/cut.txt" || fail "analyze cut (text) exit $?"
grep -q "joined mid-stream" "$work/cut.txt" || fail "the text report does not say the connection was joined mid-stream"

/usr/bin/python3 - "$work/serve.log" "$work/full.json" "$work/cut.json" "$work/cut_events.json" "$cut" <<'PY' \
    || fail "the cut capture's tokens"
import itertools, json, statistics, sys
log_path, full_path, cut_path, events_path, cut = sys.argv[1:6]
cut_ns = int(cut.replace(".", ""))
def fail(msg):
    print("FAIL: " + msg, file=sys.stderr); sys.exit(1)
lines = [json.loads(l) for l in open(log_path)]
shift = lines[0]["realtime_ns"] - lines[0]["mono_ns"]
reqs = [l for l in lines if l["type"] == "request"]
if len(reqs) != 4:
    fail(f"{len(reqs)} requests in the serve log")
def tokens(after):
    out = {}
    for l in lines:
        if l["type"] == "write" and any(k == "token" for _, k in l["events"]) and l["mono_ns"] + shift >= after:
            out.setdefault(l["stream_id"], []).append(l["mono_ns"] + shift)
    return out
# the instants of a request's token events (--events: the report's own
# first_token/itl are not given for a request whose start was not seen)
events = {r["index"]: r["events"] for r in json.load(open(events_path))["requests"]}
def wire(r):
    return [e["dispatch_mono_ns"] for e in events[r["index"]] if e["kind"] == "TOKEN"]
full = json.load(open(full_path))
rep = json.load(open(cut_path))
for i, r in enumerate(rep["requests"]):
    r["index"] = i
if len(full["requests"]) != 4 or not all(r["complete"] for r in full["requests"]):
    fail(f"the whole capture: {[(r['complete'], r.get('incomplete_reasons')) for r in full['requests']]}")
notes = [n["note"] for n in rep.get("connection_notes", [])]
if not any("joined mid-stream" in n for n in notes):
    fail(f"no joined mid-stream note: {notes}, not analysed: {rep['connections_not_analysed']}")
after = tokens(cut_ns)
got = [r for r in rep["requests"] if wire(r)]
if len(got) != len(after):
    fail(f"{len(got)} requests with tokens after the cut, serve wrote tokens on {len(after)} streams")
for r in got:
    if "request-not-captured" not in (r.get("incomplete_reasons") or []):
        fail(f"a stream begun before the cut not marked request-not-captured: {r.get('incomplete_reasons')}")
    if r["connection"]["client"] != reqs[0]["peer"]:
        fail(f"client {r['connection']['client']}, serve's peer {reqs[0]['peer']}")
# pair each reported request with the serve stream whose token instants it
# matches best (no stream ids in the report)
streams = sorted(after)
best = None
for perm in itertools.permutations(streams, len(got)):
    if any(len(wire(r)) != len(after[s]) for r, s in zip(got, perm)):
        continue
    cost = max(abs(a - b) for r, s in zip(got, perm) for a, b in zip(wire(r), after[s]))
    if best is None or cost < best[0]:
        best = (cost, perm)
if best is None:
    fail(f"token counts differ: tokentap {sorted(len(wire(r)) for r in got)}, serve {sorted(len(v) for v in after.values())}")
diffs = [a - b for r, s in zip(got, best[1]) for a, b in zip(wire(r), after[s])]
med = statistics.median(diffs)
print(f"cut at {cut}: {len(got)} streams, {len(diffs)} token instants after the cut; minus serve's write "
      f"median {med/1e3:.1f} us, min {min(diffs)/1e3:.1f} us, max {max(diffs)/1e3:.1f} us")
if min(diffs) < -1_000_000:
    fail("a token seen more than 1 ms before serve wrote it")
if not -1_000_000 <= med < 2_000_000:
    fail(f"median {med} ns not within 2 ms")
PY

# HTTP/1.1 cut anywhere is never HTTP/2
mkdir "$work/h1"
start_serve "$work/h1" --profile vllm --seed 3 --ttft-ms 20 --itl-ms 5
pid=$SERVE_PID; port=$SERVE_PORT
start_capture "$work/h1/full.pcap" "tcp port $port"
url="http://127.0.0.1:$port/v1/chat/completions"
timeout 20 curl -sN -H 'content-type: application/json' --data-binary "@$work/body.json" "$url" \
    --next -sN -H 'content-type: application/json' --data-binary "@$work/body.json" "$url" > "$work/h1/curl.out" \
    || fail "curl exit $?"
stop_capture "$work/h1/full.pcap"
kill -TERM "$pid"; wait "$pid" || fail "serve exit $?"
packets=$(tshark -r "$work/h1/full.pcap" 2>/dev/null | wc -l)
[ "$packets" -gt 20 ] || fail "only $packets packets in the HTTP/1.1 capture"
for k in $(seq 1 $((packets - 1))); do
    editcap "$work/h1/full.pcap" "$work/h1/cut.pcap" "1-$k" > /dev/null 2>&1 || fail "editcap 1-$k"
    rc=0; "$TT" analyze --json "$work/h1/cut.pcap" > "$work/h1/cut.json" 2> "$work/h1/cut.err" || rc=$?
    [ $rc = 0 ] || [ $rc = 4 ] || fail "analyze of the HTTP/1.1 capture less its first $k packets: exit $rc $(cat "$work/h1/cut.err")"
    if grep -q 'HTTP/2' "$work/h1/cut.json"; then
        fail "the HTTP/1.1 capture less its first $k packets read as HTTP/2: $(grep 'HTTP/2' "$work/h1/cut.json" | head -3)"
    fi
done
echo "HTTP/1.1 capture cut before each of its $packets packets: never read as HTTP/2"
echo "PASS: test_h2_midconn"
