#!/usr/bin/env bash
# tokentap serve's native profiles (responses, anthropic, tgi, llamacpp,
# ollama) with curl: each native endpoint's bytes parse as that server's
# framing (SSE event:/data: lines, TGI's "data:" without a space, NDJSON),
# one logged write per event with matching offsets and kinds; a live capture
# of the same traffic (root only) analysed by `tokentap analyze --json` finds
# the dialect served, every token the log says was written, the usage count
# and the stream's end; GET /metrics counts the streams served and its TTFT
# sum matches the TTFTs derived from the log.
set -eu
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl not installed"
[ -x "$TT" ] || fail "$TT not built"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
profiles="responses anthropic tgi llamacpp ollama"

for p in $profiles; do
    "$TT" serve --listen 127.0.0.1:0 --profile $p --log "$work/$p.log" --created 1700000000 --seed 5 \
        --ttft-ms 12 --itl-ms uniform:2:5 --model served > "$work/$p.out" 2> "$work/$p.err" &
    echo $! > "$work/$p.pid"
done
ports=()
for p in $profiles; do
    port=$(wait_listening "$work/$p.out")
    [ -n "$port" ] || fail "$p: serve did not start: $(cat "$work/$p.err")"
    echo "$port" > "$work/$p.port"
    ports+=("tcp port $port")
done
port_of() { cat "$work/$1.port"; }

capture=0
if [ "$(id -u)" = 0 ] && [ -x "$BUILD/tools/ttcapture" ]; then
    capture=1
    filter=$(printf '%s or ' "${ports[@]}"); filter=${filter% or }
    start_capture "$work/serve.pcap" "$filter"
else
    echo "note: not root or no ttcapture: the capture/analyze half is skipped"
fi

# name profile path body: a streamed request, raw (chunked) bytes kept
post() {
    curl -sS -N --raw --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: $1" \
        -d "$4" -D "$work/$1.head" -o "$work/$1.raw" "http://127.0.0.1:$(port_of "$2")$3"
}
clients=()
post r-1 responses /v1/responses '{"model":"m","stream":true,"max_output_tokens":5,"input":"hello there"}' & clients+=($!)
post r-2 responses /v1/responses '{"model":"m","stream":true,"max_output_tokens":8,"input":[{"role":"user","content":"hi"}]}' & clients+=($!)
post a-1 anthropic /v1/messages '{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hello there"}]}' & clients+=($!)
post a-2 anthropic /v1/messages '{"model":"m","stream":true,"max_tokens":8,"system":"be brief","messages":[]}' & clients+=($!)
post g-1 tgi /generate_stream '{"inputs":"hello there","parameters":{"max_new_tokens":5,"details":true}}' & clients+=($!)
post g-2 tgi /generate_stream '{"inputs":"hi","parameters":{"max_new_tokens":8}}' & clients+=($!)
post l-1 llamacpp /completion '{"prompt":"hello there","n_predict":5,"stream":true}' & clients+=($!)
post l-2 llamacpp /completion '{"prompt":"hi","n_predict":8,"stream":true}' & clients+=($!)
post o-1 ollama /api/generate '{"model":"m","prompt":"hello there","options":{"num_predict":5}}' & clients+=($!)
post o-2 ollama /api/chat '{"model":"m","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":8}}' & clients+=($!)
for c in "${clients[@]}"; do wait "$c" || fail "curl exit $?"; done

# non-streamed answers, and a path of another profile
one() { curl -sS --max-time 10 -o "$work/$1.json" -w '%{http_code} %{content_type}\n' -H "x-request-id: $1" -d "$4" "http://127.0.0.1:$(port_of "$2")$3"; }
[ "$(one g-gen tgi /generate '{"inputs":"x","parameters":{"max_new_tokens":3,"details":true}}')" = "200 application/json" ] || fail "tgi /generate"
[ "$(one o-gen ollama /api/generate '{"model":"m","prompt":"x","stream":false,"options":{"num_predict":3}}')" = "200 application/json" ] || fail "ollama stream:false"
[ "$(one a-gen anthropic /v1/messages '{"model":"m","max_tokens":3,"messages":[]}')" = "200 application/json" ] || fail "anthropic non-streamed"
[ "$(one a-bad anthropic /v1/messages '{"model":"m","messages":[]}' | cut -d' ' -f1)" = 400 ] || fail "anthropic without max_tokens"
[ "$(one x-404 tgi /v1/chat/completions '{}' | cut -d' ' -f1)" = 404 ] || fail "tgi answering the OpenAI path"
grep -q 'profile tgi does not serve /v1/chat/completions' "$work/x-404.json" || fail "404 body: $(cat "$work/x-404.json")"
for p in $profiles; do
    curl -sS --max-time 10 -D "$work/$p.metrics.head" -o "$work/$p.metrics" "http://127.0.0.1:$(port_of $p)/metrics" || fail "$p /metrics"
done

if [ $capture = 1 ]; then
    stop_capture "$work/serve.pcap"
    "$TT" analyze --json "$work/serve.pcap" > "$work/report.json" || fail "analyze exit $?"
fi
for p in $profiles; do
    pid=$(cat "$work/$p.pid"); kill -TERM "$pid"; wait "$pid" || fail "$p: serve exited $? on SIGTERM: $(cat "$work/$p.err")"
done

/usr/bin/python3 - "$work" "$capture" <<'PY'
import json, os, re, sys
work, capture = sys.argv[1], sys.argv[2] == "1"

def unchunk(raw):
    body, i = b"", 0
    while True:
        j = raw.index(b"\r\n", i)
        n = int(raw[i:j], 16)
        body += raw[j + 2:j + 2 + n]
        assert raw[j + 2 + n:j + 4 + n] == b"\r\n", "chunk not ended by CRLF"
        i = j + 4 + n
        if n == 0:
            assert raw[i:] == b"", "bytes after the last chunk"
            return body

def sse_events(body, named, space):
    """Split an SSE body into events; each is (event name or None, parsed data)."""
    assert body.endswith(b"\n\n"), body[-40:]
    out = []
    for block in body[:-2].split(b"\n\n"):
        lines = block.split(b"\n")
        name = None
        if named:
            assert lines[0].startswith(b"event: "), block
            name = lines[0][7:].decode()
            lines = lines[1:]
        assert len(lines) == 1, block
        prefix = b"data: " if space else b"data:"
        assert lines[0].startswith(prefix), block
        if not space:
            assert not lines[0].startswith(b"data: "), "TGI writes data: with no space"
        data = json.loads(lines[0][len(prefix):])
        if named:
            assert data["type"] == name, (name, data)
        out.append((name, data))
    return [b + b"\n\n" for b in body[:-2].split(b"\n\n")], out

def ndjson_events(body):
    assert body.endswith(b"\n")
    lines = body[:-1].split(b"\n")
    return [l + b"\n" for l in lines], [(None, json.loads(l)) for l in lines]

logs = {p: [json.loads(l) for l in open(f"{work}/{p}.log")] for p in ("responses", "anthropic", "tgi", "llamacpp", "ollama")}
# name -> (profile, tokens, dialect, usage expected, framing)
cases = {
    "r-1": ("responses", 5, "openai-responses", True), "r-2": ("responses", 8, "openai-responses", True),
    "a-1": ("anthropic", 5, "anthropic", True), "a-2": ("anthropic", 8, "anthropic", True),
    "g-1": ("tgi", 5, "tgi", True), "g-2": ("tgi", 8, "tgi", False),
    "l-1": ("llamacpp", 5, "llamacpp", True), "l-2": ("llamacpp", 8, "llamacpp", True),
    "o-1": ("ollama", 5, "ollama", True), "o-2": ("ollama", 8, "ollama", True),
}
ctype = {"responses": b"text/event-stream", "anthropic": b"text/event-stream", "tgi": b"text/event-stream",
         "llamacpp": b"text/event-stream", "ollama": b"application/x-ndjson"}
ttfts = {p: [] for p in logs}
for name, (prof, n, _, _) in cases.items():
    head = open(f"{work}/{name}.head", "rb").read().lower()
    assert head.startswith(b"http/1.1 200") and b"transfer-encoding: chunked" in head, head
    assert b"content-type: " + ctype[prof] in head, (name, head)
    body = unchunk(open(f"{work}/{name}.raw", "rb").read())
    if prof == "ollama":
        frames, evs = ndjson_events(body)
    else:
        frames, evs = sse_events(body, prof in ("responses", "anthropic"), prof != "tgi")
    # the framing each real server uses, event by event
    if prof == "responses":
        types = [t for t, _ in evs]
        assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                             "response.content_part.added"], types
        assert types[4:4 + n] == ["response.output_text.delta"] * n, types
        assert types[4 + n:] == ["response.output_text.done", "response.content_part.done",
                                 "response.output_item.done", "response.completed"], types
        assert [d["sequence_number"] for _, d in evs] == list(range(len(evs)))
        fin = evs[-1][1]["response"]
        assert fin["status"] == "incomplete" and fin["incomplete_details"] == {"reason": "max_output_tokens"}, fin
        assert fin["usage"]["output_tokens"] == n
    elif prof == "anthropic":
        types = [t for t, _ in evs]
        assert types == ["message_start", "content_block_start", "ping"] + ["content_block_delta"] * n + \
            ["content_block_stop", "message_delta", "message_stop"], types
        assert all(d["delta"]["type"] == "text_delta" for t, d in evs if t == "content_block_delta")
        md = evs[-2][1]
        assert md["delta"]["stop_reason"] == "max_tokens" and md["usage"]["output_tokens"] == n, md
    elif prof == "tgi":
        assert len(evs) == n and [d["index"] for _, d in evs] == list(range(n))
        assert all(set(d["token"]) == {"id", "text", "logprob", "special"} for _, d in evs)
        assert all(d["generated_text"] is None and d["details"] is None for _, d in evs[:-1])
        last = evs[-1][1]
        assert last["generated_text"] == "".join(d["token"]["text"] for _, d in evs)
        if name == "g-1":
            assert last["details"]["finish_reason"] == "length" and last["details"]["generated_tokens"] == n
        else:
            assert last["details"] is None
    elif prof == "llamacpp":
        assert len(evs) == n + 1 and all(d["stop"] is False for _, d in evs[:-1])
        last = evs[-1][1]
        assert last["stop"] is True and last["content"] == "" and last["stop_type"] == "limit"
        assert last["tokens_predicted"] == n and last["timings"]["predicted_n"] == n
    else:
        assert len(evs) == n + 1 and all(d["done"] is False for _, d in evs[:-1])
        last = evs[-1][1]
        assert last["done"] is True and last["done_reason"] == "length" and last["eval_count"] == n, last
        assert ("message" in last) == (name == "o-2")
    # the log: one write per event, offsets contiguous, event indices in order
    log = logs[prof]
    req = [r for r in log if r["type"] == "request" and r["request_id"] == name]
    assert len(req) == 1 and req[0]["events"] == len(frames) and req[0]["tokens"] == n, (name, req)
    writes = [w for w in log if w["type"] == "write" and w["request_id"] == name]
    ev_writes = [w for w in writes if w["len"] > 0]
    assert len(ev_writes) == len(frames), (name, len(ev_writes), len(frames))
    off = 0
    for k, (w, f) in enumerate(zip(ev_writes, frames)):
        assert w["body_off"] == off and w["len"] == len(f), (name, k, w, len(f))
        assert len(w["events"]) == 1 and w["events"][0][0] == k, (name, k, w)
        off += len(f)
    assert off == len(body)
    tok = [w["mono_ns"] for w in ev_writes if w["events"][0][1] == "token"]
    assert len(tok) == n, (name, len(tok))
    assert tok[0] >= req[0]["request_read_ns"] + 12_000_000, "first token before its due instant"
    ttfts[prof].append(tok[0] - req[0]["request_read_ns"])

# non-streamed bodies
g = json.load(open(f"{work}/g-gen.json"))
assert g["generated_text"] == " the quick brown" and g["details"]["generated_tokens"] == 3, g
o = json.load(open(f"{work}/o-gen.json"))
assert o["done"] is True and o["response"] == " the quick brown" and o["eval_count"] == 3, o
a = json.load(open(f"{work}/a-gen.json"))
assert a["content"][0]["text"] == " the quick brown" and a["usage"]["output_tokens"] == 3, a

# /metrics: counts equal the streams served; the TTFT sum equals the log's
def parse_prom(text):
    vals = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)', line)
        assert m, line
        vals[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return vals
for prof in logs:
    head = open(f"{work}/{prof}.metrics.head", "rb").read().lower()
    assert b"content-type: text/plain; version=0.0.4" in head, head
    vals = parse_prom(open(f"{work}/{prof}.metrics").read())
    label = '{model_name="served"}'
    streams = [k for k, v in cases.items() if v[0] == prof]
    ntok = sum(cases[k][1] for k in streams)
    ttft = "vllm:time_to_first_token_seconds"
    assert vals[(ttft + "_count", label)] == len(streams), (prof, vals[(ttft + "_count", label)])
    assert vals[(ttft + '_bucket', '{le="+Inf",model_name="served"}')] == len(streams)
    assert vals[("vllm:e2e_request_latency_seconds_count", label)] == len(streams)
    assert vals[("vllm:inter_token_latency_seconds_count", label)] == ntok - len(streams)
    buckets = [v for (k, l), v in vals.items() if k == ttft + "_bucket"]
    assert buckets == sorted(buckets), "buckets must be cumulative"
    want = sum(ttfts[prof]) / 1e9
    got = vals[(ttft + "_sum", label)]
    assert abs(got - want) < 1e-6 * len(streams), (prof, got, want)

if capture:
    rep = json.load(open(f"{work}/report.json"))
    reqs = {r["request_id"]: r for r in rep["requests"]}
    for name, (prof, n, dialect, usage) in cases.items():
        r = reqs.get(name)
        assert r, (name, sorted(reqs))
        w = r["vantages"]["wire"]
        assert r["dialect"] == dialect, (name, r["dialect"])
        assert r["complete"] and r["terminal_seen"], (name, r.get("incomplete_reasons"))
        assert w["token_events"] == n, (name, w["token_events"], n)
        if usage:
            assert w["usage_completion_tokens"] == n, (name, w.get("usage_completion_tokens"))
        # the wire saw the first token no earlier than serve wrote it
        log = logs[prof]
        first = min(x["mono_ns"] for x in log if x["type"] == "write" and x["request_id"] == name
                    and any(k == "token" for _, k in x["events"]))
        off = log[0]["realtime_ns"] - log[0]["mono_ns"]
        assert w["first_token_mono_ns"] - (first + off) > -1_000_000, (name, "token on the wire before its write")
print(f"serve profiles: {len(cases)} streams over 5 profiles framed right and matching the log; /metrics "
      f"counts and TTFT sums match; analyze {'agrees on dialect, tokens, usage and end' if capture else 'skipped (not root)'}")
PY
