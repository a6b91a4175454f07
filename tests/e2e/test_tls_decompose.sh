#!/usr/bin/env bash
# The TLS libraries' own time as a part of the decomposition (tls_ns, issue
# 13): `tokentap serve --tls` (OpenSSL, its log of every write the ground
# truth) and curl (OpenSSL), both ends recorded by `tokentap record --port`
# (the server_tls and client_tls vantages, each TLS record carrying the
# instant its ciphertext crossed the socket), then `tokentap analyze DIR`:
#  - every request's TTFT and E2EL split against the client's plaintext
#    (reference client_tls: curl's SSL_write of the request to its
#    SSL_read of the mark), the runs summing exactly to it, tls_ns the sum
#    of the four stretches in tls_split_ns, each at least 0;
#  - against serve's log: the server's first-token SSL_write entered after
#    serve logged that write (within 1 ms); server_ttft at least serve's
#    own (logged first-token write minus its request read) and at most 1 ms
#    more; the ciphertext of that write handed to the socket at most 2 ms
#    after the SSL_write entry;
#  - the text report has the tls rows.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF uprobes"
need_curl_openssl
work_dir
need_bpf "$work"
self_signed_cert "$work"
start_serve "$work" --profile vllm --tls "$work/c.pem" "$work/k.pem" --ttft-ms 20 --itl-ms 3 --tokens 6 --seed 4
"$TT" record -o "$work/rec" --port "$SERVE_PORT" > /dev/null 2> "$work/rec.err" &
rpid=$!
for _ in $(seq 50); do grep -q 'recording into' "$work/rec.err" 2>/dev/null && break; sleep 0.1; done
grep -q 'recording into' "$work/rec.err" || fail "record did not start: $(cat "$work/rec.err")"
for i in 1 2 3 4; do
    curl -sS -N -k --max-time 10 -o /dev/null -H 'content-type: application/json' -H "x-request-id: td-$i" \
        -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}' \
        "https://127.0.0.1:$SERVE_PORT/v1/chat/completions" || fail "curl to serve --tls failed"
done
sleep 0.3
kill -INT $rpid; wait $rpid || fail "record exit $?: $(cat "$work/rec.err")"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || fail "serve --tls exit $?: $(cat "$work/serve.err")"
[ -s "$work/rec/server_tls.pcap" ] && [ -s "$work/rec/client_tls.pcap" ] \
    || fail "no TLS vantage at one end: $(ls "$work/rec") $(cat "$work/rec.err")"
"$TT" analyze --json -o "$work/an.json" "$work/rec" 2> "$work/an.err" || fail "analyze --json exit $?: $(cat "$work/an.err")"
"$TT" analyze -o "$work/an.txt" "$work/rec" 2> /dev/null || fail "analyze exit $?"
grep -q '^tls (both libraries) *4 ' "$work/an.txt" || fail "no tls row in the text report: $(cat "$work/an.txt")"
grep -q '^  server: write -> socket *4 ' "$work/an.txt" || fail "no server write row: $(cat "$work/an.txt")"

/usr/bin/python3 - "$work" <<'PY' || fail "the TLS decomposition: see above"
import json, statistics, sys
work = sys.argv[1]
an = json.load(open(f"{work}/an.json"))
log = [json.loads(l) for l in open(f"{work}/serve.log")]
reqs = {r["request_id"]: r for r in an["requests"]}
tls_ns, server_excess, send_lags = [], [], []
for i in range(1, 5):
    rid = f"td-{i}"
    r = reqs[rid]
    assert {"server_tls", "client_tls"} <= set(r["vantages"]), (rid, sorted(r["vantages"]))
    for name in ("ttft", "e2el"):
        d = r["decomposition"] if name == "ttft" else r["decomposition"]["e2el"]
        total = d[f"{name}_ns"]
        assert d["reference"] == "client_tls", (rid, name, d["reference"])
        assert total == r["vantages"]["client_tls"][f"{name}_ns"], (rid, name, total)
        assert sum(run["ns"] for run in d["runs"]) == total, (rid, name, d["runs"])
        split = d["tls_split_ns"]
        assert split and all(split[k] is not None and split[k] >= 0 for k in split), (rid, name, split)
        assert d["tls_ns"] == sum(split.values()), (rid, name, d["tls_ns"], split)
        if name == "ttft":
            tls_ns.append(d["tls_ns"])
    # serve's own: the request read, and the first token write (logged just before its SSL_write)
    req = [e for e in log if e["type"] == "request" and e["request_id"] == rid][0]
    first_write = [e["mono_ns"] for e in log if e["type"] == "write" and e["request_id"] == rid
                   and any(k == "token" for _, k in e["events"])][0]
    truth_ttft = first_write - req["request_read_ns"]
    server = r["decomposition"]["server_ttft_ns"]
    assert server is not None and 0 <= server - truth_ttft <= 1_000_000, (rid, server, truth_ttft)
    server_excess.append(server - truth_ttft)
    srv = r["vantages"]["server_tls"]
    mark = srv["first_token_mono_ns"]
    assert 0 <= mark - first_write <= 1_000_000, (rid, mark - first_write)
    send = r["decomposition"]["tls_split_ns"]["server_send"]
    assert send <= 2_000_000, (rid, send)
    send_lags.append(send)
print("TLS decomposition: 4/4 requests split against client_tls, runs exact; tls_ns median %.1f us; "
      "server_ttft minus serve's own median %.1f us; the server's SSL_write to its socket write median %.1f us"
      % (statistics.median(tls_ns) / 1e3, statistics.median(server_excess) / 1e3, statistics.median(send_lags) / 1e3))
PY
echo "tls_ns: the TLS libraries' time at both ends, an exact part of the decomposition, against serve's log"
