#!/usr/bin/env bash
# tokentap lint: every `tokentap serve` profile, captured live with
# ttcapture and linted with --json, must show exactly the findings its real
# server is known for (docs/serve.md, docs/framing.md), and the framing
# faults serve can inject must show theirs. --fail-on exit statuses are
# checked on ttpcapgen captures (no root needed for that half).
#
# coalesced-events is tolerated where not expected: on loopback the kernel
# may still merge two back-to-back sends (TCP autocorking), which is a real
# coalescing the capture saw, not a lint error; the script notes it.
set -eu
. "$(dirname "$0")/lib.sh"
[ -x "$TT" ] || fail "$TT not built"
[ -x "$GEN" ] || fail "$GEN not built"
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

# ---- --fail-on and exit statuses, on generated captures ----
"$GEN" -o "$work/clean.pcap" --streams 2 --tokens 4 --dialect anthropic > /dev/null  # info findings only
"$GEN" -o "$work/crlf.pcap" --streams 2 --tokens 4 --crlf > /dev/null    # warns: crlf, vLLM's empty-choices usage frame
"$GEN" -o "$work/uwc.pcap" --streams 2 --tokens 4 --usage-with-choices > /dev/null  # usage on the finish chunk
expect_rc() { # want args...
    local want=$1 rc=0; shift
    "$TT" lint "$@" > "$work/out" 2> "$work/err" || rc=$?
    [ "$rc" = "$want" ] || fail "tokentap lint $*: exit $rc, want $want ($(head -1 "$work/err"))"
}
expect_rc 0 "$work/clean.pcap"
expect_rc 0 --fail-on warn "$work/clean.pcap"
expect_rc 1 --fail-on info "$work/clean.pcap"
grep -q "^tokentap lint: findings at or above 'info'" "$work/err" || fail "no stderr line for exit 1"
expect_rc 0 --fail-on none "$work/clean.pcap"
expect_rc 1 --fail-on warn "$work/crlf.pcap"
expect_rc 0 --fail-on error --json "$work/crlf.pcap"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["tokentap"]["schema"]=="tokentap.lint/1" and d["failed"] is False and d["fail_on"]=="error"' "$work/out" \
    || fail "lint --json document"
expect_rc 2 --fail-on fatal "$work/clean.pcap"
expect_rc 2 "$work/clean.pcap" "$work/crlf.pcap"
expect_rc 3 "$work/no-such.pcap"
"$TT" lint --help | grep -q -- '--fail-on LEVEL' || fail "lint --help"
expect_rc 0 "$work/crlf.pcap"
grep -q '^warn   usage-empty-choices  *2 ' "$work/out" || fail "no usage-empty-choices on the choices:[] usage frames: $(cat "$work/out")"
expect_rc 0 "$work/uwc.pcap"
grep -q 'usage-with-choices' "$work/out" && ! grep -q 'usage-empty-choices' "$work/out" \
    || fail "a one-choice usage frame is usage-with-choices only: $(cat "$work/out")"
expect_rc 0 --text "$work/crlf.pcap"
grep -q 'bytes .*\\r\\n\\r\\n' "$work/out" || fail "--text shows no escaped CRLF: $(grep -m1 bytes "$work/out")"
"$TT" analyze "$work/crlf.pcap" | grep -q '^warn   crlf-separator' || fail "analyze's text report has no findings section"
"$TT" analyze --json "$work/crlf.pcap" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); assert any(f["id"]=="crlf-separator" for f in d["findings"])' \
    || fail "analyze --json has no findings"

# ---- live profiles ----
need_root "live capture needs root"
[ -x "$BUILD/tools/ttcapture" ] || skip "ttcapture not built"
command -v curl > /dev/null || skip "curl not installed"

servers=()
start() { # name profile options...
    local name=$1 prof=$2; shift 2
    "$TT" serve --listen 127.0.0.1:0 --profile "$prof" --created 1700000000 --seed 5 \
        --ttft-ms 5 --itl-ms 4 "$@" > "$work/$name.out" 2> "$work/$name.err" &
    servers+=("$name")
}
start vllm vllm
start tabby tabby
start responses responses
start anthropic anthropic
start tgi tgi
start llamacpp llamacpp
start ollama ollama
start ping tabby --keepalive-ms 7 --itl-ms 25
start split vllm --split-at 5,20
start coalesce tabby --coalesce 3
start close vllm --close-after 2
start teos tabby --eos-after 2
start veos vllm --eos-after 2
start error vllm --error-after 2
start status responses --status 503
ports=()
for s in "${servers[@]}"; do
    port=$(wait_listening "$work/$s.out")
    [ -n "$port" ] || fail "$s: serve did not start: $(cat "$work/$s.err")"
    echo "$port" > "$work/$s.port"
    ports+=("tcp port $port")
done
filter=$(printf '%s or ' "${ports[@]}"); filter=${filter% or }
start_capture "$work/c.pcap" "$filter"

post() { # request-id server path body
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: $1" -d "$4" \
        -o /dev/null "http://127.0.0.1:$(cat "$work/$2.port")$3" 2> "$work/$1.curlerr" || true
}
usage='"stream_options":{"include_usage":true}'
clients=()
chat() { echo "{\"model\":\"m\",\"stream\":true,\"max_tokens\":$1,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]${2:+,$2}}"; }
post vllm-chat vllm /v1/chat/completions "$(chat 4 "$usage")" & clients+=($!)
post vllm-cmpl vllm /v1/completions "{\"model\":\"m\",\"stream\":true,\"max_tokens\":4,\"prompt\":\"hi\",$usage}" & clients+=($!)
post tabby-usage tabby /v1/chat/completions "$(chat 4 "$usage")" & clients+=($!)
post tabby-plain tabby /v1/chat/completions "$(chat 4)" & clients+=($!)
post responses responses /v1/responses '{"model":"m","stream":true,"max_output_tokens":4,"input":"hi"}' & clients+=($!)
post anthropic anthropic /v1/messages "$(chat 4)" & clients+=($!)
post tgi tgi /generate_stream '{"inputs":"hi","parameters":{"max_new_tokens":4}}' & clients+=($!)
post llamacpp llamacpp /completion '{"prompt":"hi","stream":true,"n_predict":4}' & clients+=($!)
post ollama ollama /api/chat '{"model":"m","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":4}}' & clients+=($!)
post ping ping /v1/chat/completions "$(chat 4)" & clients+=($!)
post split split /v1/chat/completions "$(chat 3)" & clients+=($!)
post coalesce coalesce /v1/chat/completions "$(chat 7)" & clients+=($!)
post close close /v1/chat/completions "$(chat 5)" & clients+=($!)
post teos teos /v1/chat/completions "$(chat 6 '"ignore_eos":true')" & clients+=($!)
post veos veos /v1/chat/completions "$(chat 6 '"ignore_eos":true')" & clients+=($!)
post error error /v1/chat/completions "$(chat 5)" & clients+=($!)
post status status /v1/responses '{"model":"m","stream":true,"max_output_tokens":4,"input":"hi"}' & clients+=($!)
for c in "${clients[@]}"; do wait "$c"; done
stop_capture "$work/c.pcap"
rc=0
"$TT" lint --json "$work/c.pcap" > "$work/lint.json" 2> "$work/lint.err" || rc=$?
[ $rc = 1 ] || fail "lint of the live capture: exit $rc, want 1 (error findings present): $(cat "$work/lint.err")"

/usr/bin/python3 - "$work/lint.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
found = {}
for f in doc["findings"]:
    found.setdefault(f["request_id"], set()).add(f["id"])
expect = {
    "vllm-chat": {"role-only-first-chunk", "usage-empty-choices"},
    "vllm-cmpl": {"usage-empty-choices"},
    "tabby-usage": {"crlf-separator", "usage-with-choices", "finish-without-text"},
    "tabby-plain": {"crlf-separator"},
    "responses": {"event-field"},
    "anthropic": {"event-field", "keepalive-event", "finish-without-text"},
    "tgi": {"data-no-space"},
    "llamacpp": set(),
    "ollama": set(),
    "ping": {"crlf-separator", "keepalive-comment"},
    "split": {"role-only-first-chunk", "split-event"},
    "coalesce": {"crlf-separator", "coalesced-events"},
    "close": {"role-only-first-chunk", "missing-terminal"},
    "teos": {"crlf-separator", "eos-flag-dropped"},
    "veos": {"role-only-first-chunk"},
    "error": {"role-only-first-chunk", "error-event"},
    "status": {"http-error-status"},
}
tolerated = {"coalesced-events"}
bad = []
for rid, want in expect.items():
    got = found.get(rid, set())
    missing, extra = want - got, got - want - tolerated
    if missing or extra:
        bad.append(f"{rid}: missing {sorted(missing)} unexpected {sorted(extra)}")
    elif got - want:
        print(f"note: {rid}: {sorted(got - want)} (the kernel merged sends)")
unknown = set(found) - set(expect)
if unknown:
    bad.append(f"findings on unexpected requests {sorted(unknown)}")
for f in doc["findings"]:
    for k in ("id", "severity", "vantage", "request_index", "connection", "count", "offset", "mono_ns",
              "excerpt", "description", "clients"):
        if k not in f:
            bad.append(f"finding {f.get('id')} lacks {k}")
    if f["excerpt"] is not None and "text" in f["excerpt"]:
        bad.append("excerpt text without --text")
if bad:
    print("FAIL: " + "\n  ".join(bad), file=sys.stderr)
    sys.exit(1)
print(f"ok: {len(expect)} streams, {len(doc['findings'])} findings as expected")
PY
echo "PASS: test_lint"
