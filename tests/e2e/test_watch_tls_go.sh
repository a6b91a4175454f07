#!/usr/bin/env bash
# watch, TLS plaintext of running Go programs (uprobes on crypto/tls,
# issue 13): go_tls_peer.go built with Debian's golang-go, never restarted.
#  1. a Go HTTPS server started first, `watch --pid` on it, two streams
#     from curl: its executable attached ("Go go1.N crypto/tls"), both
#     requests whole at the tls vantage with 8 token events each, none
#     stamped before the server's own log line written just before its
#     Write (the entry of (*tls.Conn).Write), the median under 1 ms after
#     it, each within 50 ms; the server vantage (ciphertext) holds no HTTP
#     request; no call unpaired.
#  2. a running Go client (net/http: (*tls.Conn).Read on the transport's
#     read goroutine, probed at its return instructions) against
#     `tokentap serve --tls`, `watch --pid` on the client: the request
#     whole, every token event's Read return at or before the client's own
#     stamp after its body Read (median under 2 ms, each within 50 ms) and
#     after serve's logged write instant.
#  3. a Go client started after `watch --comm go_tls_peer`: its exec seen,
#     its executable attached before its request, which is whole.
#  4. a stripped Go client (-ldflags=-s -w): `watch --pid` says why it is
#     not covered, names the pid, parses no ciphertext, exits 4 (no HTTP
#     exchange seen).
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF uprobes"
command -v go >/dev/null || skip "go not installed (golang-go)"
command -v curl >/dev/null || skip "curl not installed"
command -v openssl >/dev/null || skip "openssl not installed"
[ "$(uname -m)" = x86_64 ] || skip "Go's register ABI is read on amd64 only"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
need_bpf "$work"
tests/tools/build_go_peer.sh "$BUILD" > "$work/go.err" 2>&1 || fail "go build failed: $(cat "$work/go.err")"
gobuild="$BUILD/go"
peer="$gobuild/go_tls_peer"
self_signed_cert "$work"

# 1.
"$peer" server "$work/c.pem" "$work/k.pem" "$work/gosrv.log" 8 10 > "$work/gosrv.port" 2> "$work/gosrv.err" &
gspid=$!
for _ in $(seq 50); do [ -s "$work/gosrv.port" ] && break; sleep 0.1; done
gsport=$(cat "$work/gosrv.port"); [ -n "$gsport" ] || fail "the Go server did not start: $(cat "$work/gosrv.err")"
get_go() {
    curl -sS -N -k --http1.1 --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: $1" \
        -d '{"model":"m","stream":true}' "https://127.0.0.1:$gsport/v1/chat/completions"
}
get_go warm > /dev/null
"$TT" watch --pid "$gspid" --json --events -o "$work/gosrv.json" > /dev/null 2> "$work/gosrv.watch" &
wpid=$!
wait_tracing "$work/gosrv.watch"
get_go tg-1 > /dev/null
get_go tg-2 > /dev/null
sleep 0.3
kill -INT $wpid; wait $wpid || fail "watch --pid on the Go server exit $?: $(cat "$work/gosrv.watch")"
grep -q "TLS plaintext from [1-9].*/exe: Go go1\.[0-9.]* crypto/tls" "$work/gosrv.watch" \
    || fail "the Go server's crypto/tls not attached: $(cat "$work/gosrv.watch")"
[ "$(grep -c '^server_tls .* status=200 tokens=8 ttft=[0-9.]*ms e2el=' "$work/gosrv.watch")" = 2 ] \
    || fail "the Go server's TLS requests not whole: $(cat "$work/gosrv.watch")"
grep -q ', 0 calls (0 bytes) whose socket was not known' "$work/gosrv.watch" \
    || fail "the Go server's calls not all paired: $(tail -1 "$work/gosrv.watch")"
# (gone before 3: a running program of the same file would have it attached at start)
kill $gspid; wait $gspid 2> /dev/null || true

# 2.
"$TT" serve --listen 127.0.0.1:0 --profile vllm --tls "$work/c.pem" "$work/k.pem" --ttft-ms 5 --itl-ms 3 \
    --log "$work/serve.log" > "$work/serve.out" 2> "$work/serve.err" &
svpid=$!
svport=$(wait_listening "$work/serve.out")
[ -n "$svport" ] || fail "serve --tls did not start: $(cat "$work/serve.err")"
"$peer" client "$svport" tg-cli "$work/go" > "$work/cli.out" 2> "$work/cli.err" &
cpid=$!
sleep 0.3
"$TT" watch --pid "$cpid" --json --events -o "$work/cli.json" > /dev/null 2> "$work/cli.watch" &
wpid=$!
wait_tracing "$work/cli.watch"
touch "$work/go"
wait $cpid || fail "the Go client: $(cat "$work/cli.err")"
sleep 0.3
kill -INT $wpid; wait $wpid || fail "watch --pid on the Go client exit $?: $(cat "$work/cli.watch")"
expect_whole client_tls "$work/cli.watch" "the Go client"
grep -q ', 0 calls (0 bytes) whose socket was not known' "$work/cli.watch" \
    || fail "the Go client's calls not all paired: $(tail -1 "$work/cli.watch")"

# 3.
rm -f "$work/go"
"$TT" watch --comm go_tls_peer --json -o "$work/late.json" > /dev/null 2> "$work/late.watch" &
wpid=$!
wait_tracing "$work/late.watch"
"$peer" client "$svport" tg-late "$work/go" > "$work/late.out" 2> "$work/late.err" &
lpid=$!
wait_tls_attached "$work/late.watch" $lpid
grep -q "TLS library attached (pid $lpid): .*/exe: Go go1" "$work/late.watch" \
    || fail "the Go client started after watch not attached: $(cat "$work/late.watch")"
touch "$work/go"
wait $lpid || fail "the late Go client: $(cat "$work/late.err")"
sleep 0.3
kill -INT $wpid; wait $wpid || fail "watch --comm go_tls_peer exit $?: $(cat "$work/late.watch")"
expect_whole client_tls "$work/late.watch" "the late Go client"

# 4.
rm -f "$work/go"
"$gobuild/go_tls_stripped" client "$svport" tg-strip "$work/go" > "$work/strip.out" 2> "$work/strip.err" &
stpid=$!
sleep 0.3
"$TT" watch --pid "$stpid" --json -o "$work/strip.json" > /dev/null 2> "$work/strip.watch" &
wpid=$!
wait_tracing "$work/strip.watch"
touch "$work/go"
wait $stpid || fail "the stripped Go client: $(cat "$work/strip.err")"
sleep 0.3
kill -INT $wpid
rc=0; wait $wpid || rc=$?
[ $rc = 4 ] || fail "watch --pid on a stripped Go client: exit $rc, not 4 (no HTTP exchange seen): $(cat "$work/strip.watch")"
kill -TERM $svpid; wait $svpid || fail "serve --tls exit $?: $(cat "$work/serve.err")"
grep -q "/exe: a go1\.[0-9.]* program without its symbol table (stripped): crypto/tls not found" "$work/strip.watch" \
    || fail "the stripped Go program's reason not said: $(cat "$work/strip.watch")"
grep -qE "no TLS library in pid ([0-9]+,)*$stpid([,;]|$)" "$work/strip.watch" \
    || fail "the stripped Go client not named: $(tail -1 "$work/strip.watch")"
if grep -q 'POST' "$work/strip.watch"; then fail "HTTP parsed from a stripped Go client's ciphertext"; fi

PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work" <<'PY' || fail "Go TLS against the peers' own stamps: see above"
import json, statistics, sys
from json_docs import by_vantage
work = sys.argv[1]

# 1. the Go server: (*tls.Conn).Write's entry after its own log line
truth = {}
for line in open(f"{work}/gosrv.log"):
    rid, i, ns = line.split()
    truth[(rid, int(i))] = int(ns)
docs = by_vantage(f"{work}/gosrv.json")
assert not [r for r in docs.get("server", {"requests": []})["requests"] if r.get("method")], \
    "the server vantage parsed the ciphertext as HTTP"
reqs = {r["request_id"]: r for r in docs["server_tls"]["requests"]}
lags = []
for rid in ("tg-1", "tg-2"):
    toks = [e for e in reqs[rid]["events"] if e["kind"] == "TOKEN"]
    assert len(toks) == 8, (rid, len(toks))
    for i, e in enumerate(toks):
        lag = e["dispatch_mono_ns"] - truth[(rid, i)]
        assert 0 <= lag <= 50_000_000, (rid, i, lag)
        lags.append(lag)
med = statistics.median(lags)
assert med < 1_000_000, med
print("Go server: 16/16 token events; (*tls.Conn).Write entry minus the server's log line median %.1f us, max %.1f us"
      % (med / 1e3, max(lags) / 1e3))

# 2. the Go client: (*tls.Conn).Read's return before the client's own stamp, after serve's write
docs = by_vantage(f"{work}/cli.json")
assert not [r for r in docs.get("client", {"requests": []})["requests"] if r.get("method")], \
    "the client vantage parsed the ciphertext as HTTP"
r = [r for r in docs["client_tls"]["requests"] if r["request_id"] == "tg-cli"][0]
toks = [e["dispatch_mono_ns"] for e in r["events"] if e["kind"] == "TOKEN"]
assert len(toks) == 8, len(toks)
stamps = [int(l.split()[1]) for l in open(f"{work}/cli.out") if l.split()[1] != "body"]
log = [json.loads(l) for l in open(f"{work}/serve.log")]
writes = [e["mono_ns"] for e in log if e["type"] == "write" and e["request_id"] == "tg-cli"
          and any(k == "token" for _, k in e["events"])]
assert len(writes) == 8, len(writes)
lags = []
for t, w in zip(toks, writes):
    assert t >= w, ("a Read return before serve's write", t, w)
    after = [s for s in stamps if s >= t]
    assert after and after[0] - t <= 50_000_000, (t, stamps)
    lags.append(after[0] - t)
assert statistics.median(lags) <= 2_000_000, lags
print("Go client: 8/8 token events; the client's stamp after its body Read minus (*tls.Conn).Read's return "
      "median %.1f us, max %.1f us" % (statistics.median(lags) / 1e3, max(lags) / 1e3))
PY
echo "watch TLS (Go): a running Go server and Go client read through crypto/tls, against their own stamps; a Go client started later; a stripped one named"
