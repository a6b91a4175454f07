#!/usr/bin/env bash
# tokentap serve --http2 (h2c, prior knowledge) with nghttp2's clients
# (h2 over TLS: test_truth_http2_tls.sh): a streamed chat completion
# fetched with `nghttp` carries the same SSE bytes as the HTTP/1.1 path
# gives curl for the same request (a second serve, same seed and --created),
# one DATA frame per event, and the log's write lines for it carry the
# stream id and token instants on the --ttft-ms/--itl-ms schedule (none
# early, median under 1 ms late); then h2load sends 20 requests over one
# connection, 10 streams at a time: all succeed, and the log has 20 request
# lines with 20 distinct odd stream ids, each with one write per event.
set -eu
. "$(dirname "$0")/lib.sh"
command -v nghttp >/dev/null || skip "nghttp not installed (Debian nghttp2-client)"
command -v h2load >/dev/null || skip "h2load not installed (Debian nghttp2-client)"
command -v curl >/dev/null || skip "curl not installed"
[ -x "$TT" ] || fail "$TT not built"
work_dir

mkdir "$work/h1" "$work/h2"
args="--profile vllm --created 1700000000 --seed 7 --ttft-ms 20 --itl-ms 10"
# shellcheck disable=SC2086
start_serve "$work/h2" $args --http2; h2pid=$SERVE_PID; h2port=$SERVE_PORT
# shellcheck disable=SC2086
start_serve "$work/h1" $args; h1pid=$SERVE_PID; h1port=$SERVE_PORT

printf '%s' '{"model":"m1","stream":true,"max_tokens":12,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello world!"}]}' \
    > "$work/body.json"
timeout 20 nghttp -v -d "$work/body.json" -H ':method: POST' -H 'content-type: application/json' -H 'x-request-id: h2-one' \
    "http://127.0.0.1:$h2port/v1/chat/completions" > "$work/nghttp.v" 2> "$work/nghttp.err" \
    || fail "nghttp: $(cat "$work/nghttp.err")"
timeout 20 nghttp -d "$work/body.json" -H ':method: POST' -H 'content-type: application/json' \
    "http://127.0.0.1:$h2port/v1/chat/completions" > "$work/h2.body" 2>> "$work/nghttp.err" \
    || fail "nghttp: $(cat "$work/nghttp.err")"
curl -sS -N --max-time 20 -H 'Content-Type: application/json' -H 'x-request-id: h1-one' -d @"$work/body.json" \
    -o "$work/h1.body" "http://127.0.0.1:$h1port/v1/chat/completions" || fail "curl over HTTP/1.1"
curl -sS -N --max-time 20 -H 'Content-Type: application/json' -d @"$work/body.json" \
    -o "$work/h1b.body" "http://127.0.0.1:$h1port/v1/chat/completions" || fail "curl over HTTP/1.1"

timeout 30 h2load -n 20 -c 1 -m 10 -d "$work/body.json" -H 'content-type: application/json' \
    "http://127.0.0.1:$h2port/v1/chat/completions" > "$work/h2load.out" 2>&1 || fail "h2load: $(cat "$work/h2load.out")"
grep -q '^requests: 20 total, 20 started, 20 done, 20 succeeded, 0 failed, 0 errored, 0 timeout' "$work/h2load.out" \
    || fail "h2load: $(grep -E '^(requests|status codes)' "$work/h2load.out")"
grep -q '^status codes: 20 2xx' "$work/h2load.out" || fail "h2load: $(grep '^status codes' "$work/h2load.out")"

kill -TERM "$h2pid"; wait "$h2pid" || fail "h2 serve exited $? on SIGTERM: $(cat "$work/h2/serve.err")"
kill -TERM "$h1pid"; wait "$h1pid" || fail "h1 serve exited $? on SIGTERM: $(cat "$work/h1/serve.err")"

/usr/bin/python3 - "$work" <<'PY'
import json, re, statistics, sys
work = sys.argv[1]
def fail(msg):
    print("FAIL: " + msg, file=sys.stderr); sys.exit(1)

# 1. The same SSE bytes as HTTP/1.1, for both requests of each server (the
#    servers' generation numbers match: 1 then 2, so ids match too).
h1 = open(f"{work}/h1.body", "rb").read()
h1b = open(f"{work}/h1b.body", "rb").read()
h2b = open(f"{work}/h2.body", "rb").read()
verbose = open(f"{work}/nghttp.v", "rb").read()
if not h1.startswith(b"data: ") or not h1.endswith(b"data: [DONE]\n\n"):
    fail(f"HTTP/1.1 body is not SSE: {h1[:200]!r}")
if h2b != h1b:
    fail(f"second request: HTTP/2 body differs from HTTP/1.1\nh2: {h2b[:300]!r}\nh1: {h1b[:300]!r}")

# 2. Response head and frames of the first request.
if not re.search(rb"recv \(stream_id=\d+\) :status: 200", verbose):
    fail("no :status 200 in nghttp -v")
if not re.search(rb"content-type: text/event-stream", verbose):
    fail("no content-type in nghttp -v")
data_frames = re.findall(rb"recv DATA frame <length=(\d+), flags=0x(\d\d)", verbose)
lengths = [int(n) for n, _ in data_frames if int(n) > 0]
events = h1.count(b"\n\n")
if len(lengths) != events:
    fail(f"{len(lengths)} non-empty DATA frames for {events} events")
if data_frames[-1][1] != b"01":
    fail("the last DATA frame does not end the stream")

# 3. The log: request lines with stream ids, writes spaced by the ITL.
lines = [json.loads(l) for l in open(f"{work}/h2/serve.log")]
reqs = [l for l in lines if l["type"] == "request"]
writes = [l for l in lines if l["type"] == "write"]
if len(reqs) != 22:
    fail(f"{len(reqs)} request lines, want 22 (2 nghttp + 20 h2load)")
if any("stream_id" not in r or r["status"] != 200 or r["stream"] is not True for r in reqs):
    fail(f"request lines: {reqs[:3]}")
if any("stream_id" not in w for w in writes):
    fail("a write line without a stream_id")
first = [r for r in reqs if r["request_id"] == "h2-one"]
if len(first) != 1:
    fail("no request line with request_id h2-one")
first = first[0]
fw = [w for w in writes if w["peer"] == first["peer"] and w["stream_id"] == first["stream_id"]]
body = [w for w in fw if w["len"] > 0]
if sum(w["len"] for w in body) != len(h1):
    fail(f"logged body bytes {sum(w['len'] for w in body)} != {len(h1)}")
if [len(w["events"]) for w in body] != [1] * events:
    fail(f"not one event per write: {[w['events'] for w in body]}")
tok = [w["mono_ns"] for w in body if w["events"][0][1] == "token"]
if len(tok) != 12:
    fail(f"{len(tok)} token writes, want 12")
# token k is due 20 ms + k * 10 ms after the request's read: none early,
# the median under 1 ms late, at most 2 of 12 more than 5 ms late (a stall
# of a loaded machine, as in test_serve.sh)
late = [(t - first["request_read_ns"]) / 1e6 - (20 + 10 * k) for k, t in enumerate(tok)]
if min(late) < -0.05 or statistics.median(late) > 1.0 or sum(l > 5 for l in late) > 2:
    fail(f"token lateness (ms) against TTFT 20 + k * ITL 10: {[round(l, 3) for l in late]}")
ttft = (tok[0] - first["request_read_ns"]) / 1e6
gaps = [(b - a) / 1e6 for a, b in zip(tok, tok[1:])]

# 4. h2load: 20 requests on one connection, distinct odd stream ids, each
#    each with one write per event, the last [DONE].
by_peer = {}
for r in reqs:
    by_peer.setdefault(r["peer"], []).append(r)
load_peers = [p for p, rs in by_peer.items() if len(rs) > 1]
if len(load_peers) != 1 or len(by_peer[load_peers[0]]) != 20:
    fail(f"h2load: requests per connection {[len(rs) for rs in by_peer.values()]}, want one with 20")
peer = load_peers[0]
load = by_peer[peer]
ids = sorted(r["stream_id"] for r in load)
if len(set(ids)) != 20 or any(i % 2 != 1 for i in ids):
    fail(f"h2load stream ids: {ids}")
for r in load:
    ws = [w for w in writes if w["peer"] == peer and w["stream_id"] == r["stream_id"] and w["len"] > 0]
    evs = [e for w in ws for e in w["events"]]
    if len(evs) != r["events"] or len(ws) != r["events"] or evs[-1][1] != "done":
        fail(f"stream {r['stream_id']}: writes {[w['events'] for w in ws]} for {r['events']} events")
print(f"ok: {events} events in {len(lengths)} DATA frames, same bytes as HTTP/1.1; "
      f"TTFT {ttft:.2f} ms, ITL median {statistics.median(gaps):.3f} ms; h2load 20/20 on stream ids {ids[0]}..{ids[-1]}")
PY
echo "PASS: test_serve_http2"
