#!/usr/bin/env bash
# tokentap serve --http2 --profile triton-grpc against a real gRPC peer
# (grpcio, Debian python3-grpcio, through tests/e2e/grpc_triton_client.py
# with triton_pb2 generated here by protoc from
# tests/golden/grpc_dialect/triton.proto):
#  1. usage errors (no --http2, a bad --triton-final, --keepalive-ms); --help
#     and docs/serve.md name the profile and the option.
#  2. five calls at once on one connection: one with 3 requests 25 ms apart
#     (max_tokens as an INT32 input, in sampling_parameters, and absent:
#     --tokens), three with 2 requests each, one to an unknown method.
#     grpcio gets, per request, one response per token with the words in
#     order, the id and model echoed, text_output BYTES, the final flag on
#     the last token only, and grpc-status OK per call (UNIMPLEMENTED for the
#     unknown method); every message reads back through tokentap's own gRPC
#     dialect (build/tools/ttgrpcclass: TOKEN, terminal = the final flag,
#     same text and id). serve's log: one request line per message with its
#     stream_id, one write per token with its event index, the writes of a
#     stream contiguous in stream_off and equal in order and length to the
#     messages grpcio got, each token at or after its due instant
#     (request_read_ns + 30 ms + k * 10 ms; median under 2 ms late) and
#     before grpcio's receipt; the 3 requests of the first call timed from
#     their own arrivals.
#  3. --triton-final empty: an opted-in request (triton_enable_empty_final_response)
#     ends with an empty final response (TERMINAL to the dialect, logged as
#     "done"); one that did not opt in gets no final flag, the call still OK.
#  4. malformed messages: not a ModelInferRequest, no text_input: grpc-status
#     INVALID_ARGUMENT with the reason; --error-after 1: an error_message
#     response with the final flag (to the dialect: TERMINAL with its error
#     bit set).
#  5. (needs python3-h2; skipped without it) raw HTTP/2 framing through
#     tests/e2e/grpc_h2_raw_client.py: two requests sent one byte per DATA
#     frame, three in one DATA frame (all answered, grpc-status 0); the
#     compressed flag and END_STREAM inside a message (3), a 2 MiB length
#     and a 257th request at once (8); a call reset by the client and a connection dropped mid-call stop
#     their requests early (the log), and serve answers the next calls.
set -eu
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || skip "python3-grpcio / python3-protobuf not installed"
command -v protoc >/dev/null || skip "protoc not installed (Debian protobuf-compiler)"
[ -x "$TT" ] || fail "$TT not built"
CLASS="$BUILD/tools/ttgrpcclass"
[ -x "$CLASS" ] || fail "$CLASS not built"
CLIENT="$(dirname "$0")/grpc_triton_client.py"
work_dir
protoc -I tests/golden/grpc_dialect --python_out="$work" tests/golden/grpc_dialect/triton.proto \
    || fail "protoc could not compile triton.proto"

# ---- 1. usage ----
usage_error() { # EXPECTED-TEXT ARGS...
    local want=$1 rc=0; shift
    "$TT" serve --listen 127.0.0.1:0 "$@" > /dev/null 2> "$work/uerr" || rc=$?
    [ $rc = 2 ] && [ "$(wc -l < "$work/uerr")" = 1 ] && grep -q "^tokentap serve: .*$want" "$work/uerr" \
        || fail "serve $*: rc $rc, stderr '$(cat "$work/uerr")' (wanted exit 2 and '$want')"
}
usage_error "needs --http2" --profile triton-grpc
usage_error "is not last or empty" --profile triton-grpc --http2 --triton-final middle
usage_error "keep-alive" --profile triton-grpc --http2 --keepalive-ms 5
usage_error "not for triton-grpc" --profile triton-grpc --http2 --status 503
"$TT" serve --help > "$work/help"
grep -q 'triton-grpc  gRPC /inference.GRPCInferenceService/ModelStreamInfer' "$work/help" || fail "--help lacks triton-grpc"
grep -q -- '--triton-final MODE' "$work/help" || fail "--help lacks --triton-final"
grep -q '^### triton-grpc' docs/serve.md || fail "docs/serve.md lacks the triton-grpc section"
grep -q -- '--triton-final' docs/serve.md || fail "docs/serve.md lacks --triton-final"

run_client() { # DIR SPEC
    timeout 60 /usr/bin/python3 "$CLIENT" "$work" "127.0.0.1:$SERVE_PORT" "$2" "$1" > "$1/client.out" 2>&1 \
        || fail "grpc client: $(cat "$1/client.out")"
    local i=0
    while [ -f "$1/call-$i.bin" ]; do
        "$CLASS" triton-grpc < "$1/call-$i.bin" > "$1/class-$i.jsonl" || fail "ttgrpcclass on call $i"
        i=$((i + 1))
    done
}
stop_serve() { # DIR
    kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || fail "serve exited $? on SIGTERM: $(cat "$1/serve.err")"
}

# ---- 2. the final flag with the last token ----
mkdir "$work/p2"
start_serve "$work/p2" --http2 --profile triton-grpc --ttft-ms 30 --itl-ms 10 --tokens 4 --seed 3
cat > "$work/p2/spec.json" <<'EOF'
{"calls": [
 {"gap_ms": 25, "requests": [{"id": "a0", "max_tokens": 5, "how": "input"},
                             {"id": "a1", "max_tokens": 3, "how": "sampling"},
                             {"id": "a2", "how": "none"}]},
 {"requests": [{"id": "b0", "max_tokens": 2, "how": "input"}, {"id": "b1", "max_tokens": 6, "how": "sampling"}]},
 {"requests": [{"id": "c0", "max_tokens": 1, "how": "input"}, {"id": "c1", "max_tokens": 7, "how": "input"}]},
 {"requests": [{"id": "d0", "max_tokens": 3, "how": "sampling"}, {"id": "d1", "max_tokens": 3, "how": "sampling"}]},
 {"method": "/inference.GRPCInferenceService/ModelInfer", "requests": [{"id": "e0", "max_tokens": 2, "how": "input"}]}
]}
EOF
run_client "$work/p2" "$work/p2/spec.json"
stop_serve "$work/p2"

# ---- 3. the empty final response ----
mkdir "$work/p3"
start_serve "$work/p3" --http2 --profile triton-grpc --ttft-ms 5 --itl-ms 5 --triton-final empty
cat > "$work/p3/spec.json" <<'EOF'
{"calls": [{"requests": [{"id": "f0", "max_tokens": 3, "how": "input", "empty_final": true},
                         {"id": "f1", "max_tokens": 2, "how": "input"}]}]}
EOF
run_client "$work/p3" "$work/p3/spec.json"
stop_serve "$work/p3"

# ---- 4. malformed messages, --error-after ----
mkdir "$work/p4"
start_serve "$work/p4" --http2 --profile triton-grpc --ttft-ms 5 --itl-ms 5 --error-after 1
cat > "$work/p4/spec.json" <<'EOF'
{"calls": [{"requests": [{"raw_hex": "ffff"}]},
           {"requests": [{"id": "g0", "max_tokens": 2, "how": "input", "no_text": true}]},
           {"requests": [{"id": "h0", "max_tokens": 4, "how": "input"}]}]}
EOF
run_client "$work/p4" "$work/p4/spec.json"
stop_serve "$work/p4"

# ---- 5. raw HTTP/2 framing ----
raw=0
if /usr/bin/python3 -c 'import h2' 2>/dev/null; then
    raw=1
    mkdir "$work/p5"
    start_serve "$work/p5" --http2 --profile triton-grpc --ttft-ms 5 --itl-ms 2
    timeout 60 /usr/bin/python3 "$(dirname "$0")/grpc_h2_raw_client.py" "$work" "$SERVE_PORT" "$work/p5/raw.json" \
        > "$work/p5/raw.out" 2>&1 || fail "raw h2 client: $(cat "$work/p5/raw.out")"
    sleep 0.3
    stop_serve "$work/p5"
else
    echo "part 5 skipped: python3-h2 not installed"
fi

/usr/bin/python3 - "$work" "$raw" <<'PY'
import json, statistics, sys
work = sys.argv[1]
WORDS = [" the", " quick", " brown", " fox", " jumps", " over", " a", " lazy",
         " dog", " and", " runs", " far", " into", " green", " hills", " again"]
def fail(msg):
    print("FAIL: " + msg, file=sys.stderr); sys.exit(1)
def load(part):
    calls = json.load(open(f"{work}/{part}/calls.json"))["calls"]
    cls = []
    for i in range(len(calls)):
        try:
            cls.append([json.loads(l) for l in open(f"{work}/{part}/class-{i}.jsonl")])
        except FileNotFoundError:
            cls.append([])
    log = [json.loads(l) for l in open(f"{work}/{part}/serve.log")]
    return calls, cls, log

def check_dialect(calls, cls):
    for i, (c, cl) in enumerate(zip(calls, cls)):
        if len(cl) != len(c["responses"]):
            fail(f"call {i}: the dialect read {len(cl)} messages, grpcio {len(c['responses'])}")
        for r, k in zip(c["responses"], cl):
            # an error response that also carries the final flag reads as TERMINAL with the error bit
            want = "TOKEN" if r["text"] else "TERMINAL" if r["final"] else "ERROR" if r["error"] else "META"
            if (k["kind"], k["terminal"], k["error"], k["text"], k["id"], k["len"], k["malformed"]) != \
               (want, bool(r["final"]), bool(r["error"]), r["text"], r["id"], r["len"], False):
                fail(f"call {i}: dialect {k} for grpcio's {r}")

# ---- part 2 ----
calls, cls, log = load("p2")
expect = {"a0": 5, "a1": 3, "a2": 4, "b0": 2, "b1": 6, "c0": 1, "c1": 7, "d0": 3, "d1": 3}
for i in range(4):
    if calls[i]["code"] != "OK":
        fail(f"call {i}: status {calls[i]['code']} {calls[i]['details']}")
if calls[4]["code"] != "UNIMPLEMENTED" or "ModelInfer" not in calls[4]["details"] or calls[4]["responses"]:
    fail(f"unknown method: {calls[4]}")
got = {}
for i, c in enumerate(calls[:4]):
    for r in c["responses"]:
        got.setdefault(r["id"], []).append(r)
if sorted(got) != sorted(expect):
    fail(f"requests answered: {sorted(got)}")
for rid, n in expect.items():
    rs = got[rid]
    if [r["text"] for r in rs] != WORDS[:n]:
        fail(f"{rid}: texts {[r['text'] for r in rs]}")
    if [r["final"] for r in rs] != [False] * (n - 1) + [True]:
        fail(f"{rid}: final flags {[r['final'] for r in rs]}")
    for r in rs:
        if (r["model"], r["version"], r["outputs"], r["datatypes"], r["error"]) != \
           ("ensemble", "1", ["text_output"], ["BYTES"], ""):
            fail(f"{rid}: response {r}")
check_dialect(calls, cls)

reqs = [l for l in log if l["type"] == "request"]
writes = [l for l in log if l["type"] == "write"]
if len(reqs) != len(expect):
    fail(f"{len(reqs)} request lines for {len(expect)} requests")
by_id = {}
for q in reqs:
    if q["path"] != "/inference.GRPCInferenceService/ModelStreamInfer" or q["method"] != "POST" \
       or q["tokens"] != expect[q["request_id"]] or q["events"] != q["tokens"] or not q["stream"]:
        fail(f"request line {q}")
    by_id[q["request_id"]] = q
stream_of = {}
for i, c in enumerate(calls[:4]):
    sids = {by_id[r["id"]]["stream_id"] for r in c["responses"]}
    if len(sids) != 1:
        fail(f"call {i}: requests on streams {sids}")
    stream_of[i] = sids.pop()
if len(set(stream_of.values())) != 4 or any(s % 2 == 0 for s in stream_of.values()):
    fail(f"stream ids {stream_of}")
if [by_id[r]["ordinal"] for r in ("a0", "a1", "a2")] != [1, 2, 3]:
    fail("ordinals of call 0: " + str([by_id[r]["ordinal"] for r in ("a0", "a1", "a2")]))
gaps = [by_id["a1"]["request_read_ns"] - by_id["a0"]["request_read_ns"],
        by_id["a2"]["request_read_ns"] - by_id["a1"]["request_read_ns"]]
if min(gaps) < 20e6:
    fail(f"the requests of call 0 were read {gaps} ns apart, sent 25 ms apart")
late = []
for rid, n in expect.items():
    ws = [w for w in writes if w["request_id"] == rid]
    if [w["events"] for w in ws] != [[[k, "token"]] for k in range(n)] or any("partial" in w for w in ws):
        fail(f"{rid}: writes {[w['events'] for w in ws]}")
    q = by_id[rid]
    for k, w in enumerate(ws):
        due = q["request_read_ns"] + 30_000_000 + k * 10_000_000
        if w["mono_ns"] < due:
            fail(f"{rid}: token {k} written {(due - w['mono_ns']) / 1e6:.3f} ms early")
        late.append(w["mono_ns"] - due)
for i, c in enumerate(calls[:4]):
    ws = sorted((w for w in writes if w["stream_id"] == stream_of[i]), key=lambda w: w["stream_off"])
    off = 0
    for w in ws:
        if w["stream_off"] != off or w["wire_len"] != w["len"]:
            fail(f"call {i}: write at {w['stream_off']}, expected {off}: {w}")
        off += w["len"]
    if [(w["request_id"], w["len"]) for w in ws] != [(r["id"], r["len"]) for r in c["responses"]]:
        fail(f"call {i}: the log's writes differ from grpcio's messages")
    for w, r in zip(ws, c["responses"]):
        if not (w["mono_ns"] <= r["t"] < w["mono_ns"] + 2_000_000_000):
            fail(f"call {i}: {r['id']} received at {r['t']}, written at {w['mono_ns']}")
med = statistics.median(late)
if med > 2_000_000:
    fail(f"median lateness {med / 1e6:.3f} ms")
print(f"part 2: {len(writes)} token writes on 4 calls, median {med / 1e6:.3f} ms late, max {max(late) / 1e6:.3f} ms")

# ---- part 3 ----
calls, cls, log = load("p3")
c = calls[0]
if c["code"] != "OK":
    fail(f"empty final: status {c['code']} {c['details']}")
f0 = [r for r in c["responses"] if r["id"] == "f0"]
f1 = [r for r in c["responses"] if r["id"] == "f1"]
if [(r["text"], r["final"], r["outputs"]) for r in f0] != \
   [(" the", False, ["text_output"]), (" quick", False, ["text_output"]), (" brown", False, ["text_output"]), ("", True, [])]:
    fail(f"f0 (opted in): {f0}")
if [(r["text"], r["final"]) for r in f1] != [(" the", False), (" quick", False)]:
    fail(f"f1 (not opted in): {f1}")
check_dialect(calls, cls)
if not any(k["kind"] == "TERMINAL" and k["terminal"] for k in cls[0]):
    fail("no TERMINAL message in part 3")
ev = [w["events"] for w in log if w["type"] == "write" and w["request_id"] == "f0"]
if ev != [[[0, "token"]], [[1, "token"]], [[2, "token"]], [[3, "done"]]]:
    fail(f"f0 writes {ev}")

# ---- part 4 ----
calls, cls, log = load("p4")
if calls[0]["code"] != "INVALID_ARGUMENT" or "not a ModelInferRequest" not in calls[0]["details"]:
    fail(f"malformed message: {calls[0]}")
if calls[1]["code"] != "INVALID_ARGUMENT" or "text_input" not in calls[1]["details"]:
    fail(f"no text_input: {calls[1]}")
h0 = calls[2]["responses"]
if calls[2]["code"] != "OK" or [(r["text"], r["final"], bool(r["error"])) for r in h0] != [(" the", False, False), ("", True, True)]:
    fail(f"--error-after 1: {calls[2]}")
check_dialect(calls, cls)
if [(k["kind"], k["error"]) for k in cls[2]] != [("TOKEN", False), ("TERMINAL", True)]:
    fail(f"--error-after 1: dialect {cls[2]}")
if any(l["type"] == "request" and l["request_id"] == "g0" for l in log):
    fail("a request without text_input was logged as answered")

# ---- part 5 ----
if sys.argv[2] == "1":
    r = json.load(open(f"{work}/p5/raw.json"))
    def words(res, rid):
        return [(t, f) for i, t, f in res["responses"] if i == rid]
    for case, want in (("split", {"s0": 3, "s1": 2}), ("oneframe", {"o0": 1, "o1": 2, "o2": 3}),
                       ("after_cancel", {"k1": 2}), ("after_drop", {"d1": 1})):
        res = r[case]
        if res["status"] != "0" or res["left"] or res["reset"] is not None:
            fail(f"{case}: {res}")
        for rid, n in want.items():
            if words(res, rid) != [(w, k == n - 1) for k, w in enumerate(WORDS[:n])]:
                fail(f"{case}: {rid}: {words(res, rid)}")
        if len(res["responses"]) != sum(want.values()):
            fail(f"{case}: {len(res['responses'])} responses")
    for case, status, text in (("compressed", "3", "compressed"), ("truncated", "3", "inside a message"),
                               ("oversize", "8", "over the limit"), ("toomany", "8", "more than 256")):
        if r[case]["status"] != status or text not in r[case]["message"] or r[case]["left"]:
            fail(f"{case}: {str(r[case])[:400]}")
        if case != "toomany" and r[case]["responses"]:
            fail(f"{case}: responses {r[case]['responses']}")
    log = [json.loads(l) for l in open(f"{work}/p5/serve.log")]
    for rid in ("k0", "d0"):
        n = sum(1 for l in log if l["type"] == "write" and l["request_id"] == rid)
        if not 1 <= n < 50:
            fail(f"{rid}: {n} writes logged for a call stopped after its first response")
print("ok")
PY
echo "PASS test_serve_grpc"
