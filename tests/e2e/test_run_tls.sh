#!/usr/bin/env bash
# tokentap run, the tls vantage: curl (OpenSSL, its own BIO) streams from a
# small Python HTTPS SSE server; the probe's SSL_read/SSL_write hooks give
# the plaintext: the request is reported at the tls vantage with the 6
# token events the server wrote, curl's output is the same as without the
# probe, and the client vantage holds only ciphertext (no HTTP request).
# The server closes the connection after the stream (Connection: close, no
# Content-Length): the response is whole, so the request is complete at the
# tls vantage, live and in `run -o DIR` read back by `analyze DIR` (the end
# of the plaintext is a clean end, FIN, not a cut).
set -eu
. "$(dirname "$0")/lib.sh"
need_curl_openssl
[ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/libtokentap-probe.so not built"
work_dir
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/k.pem" -out "$work/c.pem" -days 1 -subj /CN=localhost \
    > /dev/null 2>&1 || fail "openssl could not make a certificate"
/usr/bin/python3 "$(dirname "$0")/close_sse_server.py" 6 5 "$work/c.pem" "$work/k.pem" > "$work/port" 2> "$work/srv.err" &
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port"); [ -n "$port" ] || fail "the HTTPS server did not start: $(cat "$work/srv.err")"
get() { curl -sS -N -k --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: $1" \
        -d '{"model":"m","stream":true}' "https://127.0.0.1:$port/v1/chat/completions"; }
get tls-0 > "$work/plain.out"
export -f get; export port
"$TT" run --json --events --report "$work/events.json" -- bash -c "get tls-1" > "$work/probe.out" 2> "$work/run.err" \
    || fail "run exit $?: $(cat "$work/run.err")"
cmp "$work/plain.out" "$work/probe.out" || fail "curl's output differs under the probe"
"$TT" run -o "$work/rec" --json --report "$work/rec_live.json" -- bash -c "get tls-2 > /dev/null" 2> "$work/rec.err" \
    || fail "run -o exit $?: $(cat "$work/rec.err")"
[ -s "$work/rec/client_tls.pcap" ] || fail "no client_tls.pcap in the recording"
"$TT" analyze --json "$work/rec" > "$work/rec.json" 2> "$work/analyze.err" \
    || fail "analyze DIR exit $?: $(cat "$work/analyze.err")"
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work" <<'PY'
import json, sys
from json_docs import by_vantage
work = sys.argv[1]
by_v = by_vantage(f"{work}/events.json")
assert "client_tls" in by_v, sorted(by_v)
reqs = by_v["client_tls"]["requests"]
assert [r["request_id"] for r in reqs] == ["tls-1"], reqs
toks = [e for e in reqs[0]["events"] if e["kind"] == "TOKEN"]
assert len(toks) == 6, len(toks)
for name in ("rec_live", "rec"):
    rec = json.load(open(f"{work}/{name}.json"))
    got = [(r["request_id"], r["complete"], r["incomplete_reasons"], sorted(r["vantages"])) for r in rec["requests"]]
    assert got == [("tls-2", True, None, ["client_tls"])], (name, got)
    assert rec["requests"][0]["vantages"]["client_tls"]["token_events"] == 6, \
        (name, rec["requests"][0]["vantages"]["client_tls"])
assert not by_v.get("client", {}).get("requests"), "HTTP parsed out of ciphertext at the client vantage"
print("tokentap run: curl over TLS, 6 token events at the client_tls vantage from SSL_read, output unchanged; "
      "the close-delimited response complete live and in analyze DIR")
PY
