#!/usr/bin/env bash
# make demo: start `tokentap serve` (vllm profile, a realistic TTFT/ITL
# schedule, --log) on a free loopback port, run 6 concurrent curl streams
# against it, and show what each vantage saw.
# - Root and eBPF loads: `tokentap record -o DIR --port PORT` traces both
#   ends of every connection on the port (server vantage: serve's writes;
#   client vantage: curl's reads) and captures the wire with libpcap;
#   `tokentap analyze --json DIR` is printed as one table with the server,
#   wire and client columns side by side, then per request, and the server
#   vantage's median TTFT is set against the TTFT serve logged.
# - Root without eBPF (or DEMO_NO_BPF=1): the wire only, captured with
#   build/tools/ttcapture and analyzed as a user would; says which vantages
#   it could not take and why.
# - Not root, no curl, or no capture possible (or DEMO_GENERATED=1): the
#   generated capture (the fixture writer's streams with known instants).
# Then, root or not, the benchmark story (tokentap run, docs/probe.md): a
# vllm-like python3 client (tests/e2e/vllm_like_client.py, which waits
# 1 ms after each read before stamping a token: its own overhead) streams
# from a fresh `tokentap serve` under `tokentap run --bench-result`, with
# --server-port as root (server and wire vantages too), and the breakdown
# of the TTFT it reported is printed (send lag, uplink, server, downlink,
# client lag).
# Then an HTTPS exchange: `tokentap serve --tls` and curl, the TLS
# plaintext of both ends read by eBPF uprobes on OpenSSL as root and the
# TTFT split with the TLS libraries' own time (else curl's plaintext read
# by the probe).
# Last, `tokentap audit` (docs/audit.md) grades the same client with a
# framing defect switched on under the vllm and tabby profiles at
# concurrency 1 and 4, and prints its report card (the HTML page too).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TT="$BUILD/tokentap"
out=${DEMO_DIR:-$BUILD/demo}
mkdir -p "$out"

generated_demo() { # why
    echo "demo: $1; using a generated capture instead (wire vantage only)"
    "$BUILD/tools/ttpcapgen" -o "$out/demo.pcap" --truth "$out/demo.truth" --dialect openai-chat \
        --streams 16 --tokens 64 --concurrency 4 --ttft-us 180000 --itl-us 22000 --seed 42 > /dev/null
    echo "demo: wrote $out/demo.pcap (16 streamed chat completions, TTFT ~180 ms, ITL ~22 ms)"
    echo "demo: tokentap analyze --percentiles 50,90,99 $out/demo.pcap"
    echo
    "$TT" analyze --percentiles 50,90,99 "$out/demo.pcap"
}

# The benchmark under `tokentap run`: its own serve, the client's result
# file, the breakdown (the text report up to the E2EL part).
bench_demo() {
    [ -x /usr/bin/python3 ] || { echo "demo: /usr/bin/python3 is missing: no benchmark under tokentap run"; return 0; }
    local args="--profile vllm --ttft-ms uniform:40:80 --itl-ms uniform:5:10 --seed 7"
    "$TT" serve --listen 127.0.0.1:0 $args --log "$out/bench-serve.log" > "$out/bench-serve.out" 2> "$out/bench-serve.err" &
    local spid=$! bport=""
    for _ in $(seq 100); do grep -q '^listening on ' "$out/bench-serve.out" 2>/dev/null && break; sleep 0.05; done
    bport=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out/bench-serve.out")
    [ -n "$bport" ] || { echo "demo: tokentap serve did not start: $(cat "$out/bench-serve.err")" >&2; return 1; }
    local server=() why=""
    if [ "$(id -u)" != 0 ]; then why=" (not root: the client vantage only)"
    elif [ -n "${DEMO_NO_BPF:-}" ]; then why=" (DEMO_NO_BPF is set: the client vantage only)"
    else server=(--server-port "$bport"); fi
    rm -f "$out/bench.json"
    echo
    echo "demo: the benchmark under the probe$why:"
    echo "demo: tokentap run ${server[*]:+${server[*]} }--bench-result $out/bench.json -- python3 vllm_like_client.py $bport 1000000 $out/bench.json 6 demo-"
    local rc=0
    "$TT" run "${server[@]}" --bench-result "$out/bench.json" --report "$out/run_report.txt" -- \
        /usr/bin/python3 tests/e2e/vllm_like_client.py "$bport" 1000000 "$out/bench.json" 6 demo- \
        2> "$out/run.err" || rc=$?
    kill -TERM "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
    [ $rc = 0 ] || { echo "demo: tokentap run exited $rc: $(cat "$out/run.err")" >&2; return 1; }
    grep -v '^tokentap run: not root' "$out/run.err" | sed 's/^tokentap run: .* exited /demo: the client exited /'
    echo
    awk '/E2EL breakdown/ {exit} {print}' "$out/run_report.txt"
    echo "demo: (client lag = the benchmark's own 1 ms per token read; full report: $out/run_report.txt)"
}

# The audit (docs/audit.md): the same client, with two defects switched on
# (it splits events only on "\n\n", and waits 2 ms per token before its
# stamp), graded under two framings at two concurrencies.
audit_demo() {
    [ -x /usr/bin/python3 ] || { echo "demo: /usr/bin/python3 is missing: no audit"; return 0; }
    local cmd=(/usr/bin/python3 tests/e2e/vllm_like_client.py {port} 2000000 {result} {requests} {request_id_prefix} 12
               --concurrency {concurrency} --defect crlf)
    echo
    echo "demo: tokentap audit --profiles vllm,tabby --concurrency 1,4 --requests 8 --html $out/audit.html -- ${cmd[*]}"
    local rc=0
    "$TT" audit -q --profiles vllm,tabby --concurrency 1,4 --requests 8 --html "$out/audit.html" \
        -o "$out/audit.txt" -- "${cmd[@]}" 2> "$out/audit.err" || rc=$?
    [ $rc = 0 ] || [ $rc = 1 ] || { echo "demo: tokentap audit exited $rc: $(cat "$out/audit.err")" >&2; return 1; }
    cat "$out/audit.txt"
    echo "demo: (exit $rc: 1 = the tool mis-measured; the card as a page with plots: $out/audit.html)"
}
# HTTPS: `tokentap serve --tls`, three curl streams; as root the eBPF TLS
# vantage reads the plaintext of the running server (uprobes on OpenSSL,
# nothing restarted), otherwise `tokentap run` reads curl's through the probe.
https_demo() {
    command -v openssl > /dev/null && command -v curl > /dev/null \
        || { echo "demo: openssl or curl missing: no HTTPS exchange"; return 0; }
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$out/tls-key.pem" -out "$out/tls-cert.pem" -days 1 \
        -subj /CN=localhost > /dev/null 2>&1 || { echo "demo: openssl could not make a certificate"; return 0; }
    "$TT" serve --listen 127.0.0.1:0 --profile vllm --tls "$out/tls-cert.pem" "$out/tls-key.pem" \
        --ttft-ms uniform:40:80 --itl-ms uniform:5:10 --seed 9 --log "$out/tls-serve.log" \
        > "$out/tls-serve.out" 2> "$out/tls-serve.err" &
    local spid=$! tport=""
    for _ in $(seq 100); do grep -q '^listening on ' "$out/tls-serve.out" 2>/dev/null && break; sleep 0.05; done
    tport=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out/tls-serve.out")
    [ -n "$tport" ] || { echo "demo: tokentap serve --tls did not start: $(cat "$out/tls-serve.err")" >&2; return 1; }
    local body='{"model":"m","stream":true,"max_tokens":24,"messages":[{"role":"user","content":"hi"}]}'
    local get="for i in 1 2 3; do curl -sS -N -k -o /dev/null -H 'content-type: application/json' -H \"x-request-id: https-\$i\" -d '$body' https://127.0.0.1:$tport/v1/chat/completions & done; wait"
    echo
    if [ "$(id -u)" = 0 ] && [ -z "${DEMO_NO_BPF:-}" ]; then
        echo "demo: HTTPS: tokentap serve --tls, 3 curl streams; tokentap record --port $tport reads both ends' TLS plaintext (uprobes on OpenSSL), analyze splits the TTFT with the libraries' own time (tls):"
        "$TT" record -o "$out/tls-rec" --port "$tport" 2> "$out/tls-rec.err" &
        local rpid=$!
        for _ in $(seq 100); do grep -q 'recording into' "$out/tls-rec.err" 2>/dev/null && break; sleep 0.05; done
        bash -c "$get"
        sleep 0.3
        kill -INT $rpid; wait $rpid || true
        grep 'TLS plaintext' "$out/tls-rec.err" | sed 's/^tokentap record: /demo: /'
        "$TT" analyze -o "$out/tls-analyze.txt" "$out/tls-rec" 2> /dev/null || true
        awk '/TTFT breakdown/ {p=1} p && /^$/ {exit} p {print}' "$out/tls-analyze.txt"
    else
        echo "demo: HTTPS: tokentap serve --tls, 3 curl streams under tokentap run (the probe reads curl's TLS plaintext):"
        "$TT" run -o "$out/tls-run" --report "$out/tls-run.txt" -- bash -c "$get" 2> "$out/tls-run.err" || true
        awk '/^vantage: client_tls/ {p=1} p && /^=+ Findings/ {exit} p {print}' "$out/tls-run.txt"
    fi
    kill -TERM "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
}
finish_demo() { bench_demo && https_demo && audit_demo; }

if [ -n "${DEMO_GENERATED:-}" ]; then generated_demo "DEMO_GENERATED is set"; exit 0; fi
if [ "$(id -u)" != 0 ]; then
    generated_demo "not root, so no live capture on lo and no eBPF (server and client vantages not taken)"
    finish_demo
    exit 0
fi
if ! command -v curl > /dev/null; then generated_demo "curl is not installed"; finish_demo; exit 0; fi

# every process started below goes into started and is stopped at exit
. tests/bench/started.sh

streams=6 tokens=48
serve_args="--profile vllm --ttft-ms uniform:120:280 --itl-ms uniform:15:30 --seed 42 --log $out/serve.log"
rm -rf "$out/serve.log" "$out/demo.pcap" "$out/rec" "$out"/report.*
"$TT" serve --listen 127.0.0.1:0 $serve_args > "$out/serve.out" 2> "$out/serve.err" &
serve_pid=$!; started+=("$serve_pid")
for _ in $(seq 100); do grep -q '^listening on ' "$out/serve.out" 2>/dev/null && break; sleep 0.05; done
port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out/serve.out")
[ -n "$port" ] || { echo "demo: tokentap serve did not start: $(cat "$out/serve.err")" >&2; exit 1; }
echo "demo: tokentap serve --listen 127.0.0.1:$port $serve_args"

# The eBPF vantages: `tokentap record` says "recording" once it traces, or exits.
mode=wire no_bpf=""
if [ -n "${DEMO_NO_BPF:-}" ]; then
    no_bpf="DEMO_NO_BPF is set"
else
    "$TT" record -o "$out/rec" --port "$port" > "$out/record.out" 2> "$out/record.err" &
    rec_pid=$!; started+=("$rec_pid")
    for _ in $(seq 200); do
        grep -q '^tokentap record: recording' "$out/record.err" 2>/dev/null && { mode=record; break; }
        kill -0 "$rec_pid" 2>/dev/null || break
        sleep 0.05
    done
    if [ $mode != record ]; then
        no_bpf="tokentap record could not trace ($(grep -v '^tokentap record: recording' "$out/record.err" | head -1))"
        kill -TERM "$rec_pid" 2>/dev/null || true; wait "$rec_pid" 2>/dev/null || true
        started=("$serve_pid"); rm -rf "$out/rec"
    fi
fi
if [ $mode = wire ]; then
    echo "demo: server and client vantages not taken: $no_bpf; capturing the wire only"
    [ -x "$BUILD/tools/ttcapture" ] || { stop_started; generated_demo "$BUILD/tools/ttcapture is not built"; finish_demo; exit 0; }
    "$BUILD/tools/ttcapture" -i lo -f "tcp port $port" -w "$out/demo.pcap" -d 20 > "$out/capture.out" 2> "$out/capture.err" &
    cap_pid=$!; started+=("$cap_pid")
    for _ in $(seq 100); do grep -q ready "$out/capture.out" 2>/dev/null && break; kill -0 "$cap_pid" 2>/dev/null || break; sleep 0.05; done
    if ! grep -q ready "$out/capture.out" 2>/dev/null; then
        why="ttcapture could not capture on lo ($(head -1 "$out/capture.err"))"
        stop_started
        generated_demo "$why"; finish_demo; exit 0
    fi
    echo "demo: ttcapture -i lo -f 'tcp port $port' -w $out/demo.pcap; $streams concurrent curl streams of $tokens tokens"
else
    echo "demo: tokentap record -o $out/rec --port $port; $streams concurrent curl streams of $tokens tokens"
fi
sleep 0.1

clients=()
for i in $(seq "$streams"); do
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: demo-$i" \
        -d "{\"model\":\"demo-model\",\"stream\":true,\"max_tokens\":$tokens,\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"Tell me about packet captures.\"}]}" \
        "http://127.0.0.1:$port/v1/chat/completions" > "$out/curl-$i.out" &
    clients+=($!)
done
for c in "${clients[@]}"; do wait "$c" || { echo "demo: curl exited $?" >&2; exit 1; }; done
sleep 0.2
if [ $mode = record ]; then
    kill -INT "$rec_pid"; wait "$rec_pid" || { echo "demo: tokentap record exited $?: $(cat "$out/record.err")" >&2; exit 1; }
else
    kill -INT "$cap_pid"; wait "$cap_pid" || true
fi
kill -TERM "$serve_pid"; wait "$serve_pid" || { echo "demo: serve exited $?: $(cat "$out/serve.err")" >&2; exit 1; }
started=()

# serve's own TTFTs: first token write minus the instant the request was read
serve_ttft() {
    /usr/bin/python3 - "$out/serve.log" <<'PY'
import json, statistics, sys
read, first = {}, {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    key = (e.get("peer"), e.get("ordinal"))
    if e["type"] == "request" and e.get("stream"):
        read[key] = e["request_read_ns"]
    elif e["type"] == "write" and key not in first and any(k == "token" for _, k in e["events"]):
        first[key] = e["mono_ns"]
ttft = [first[k] - read[k] for k in read if k in first]
print("%.2f %d" % (statistics.median(ttft) / 1e6, len(ttft)) if ttft else "")
PY
}

if [ $mode = wire ]; then
    echo "demo: capture: $(tail -1 "$out/capture.err")"
    echo "demo: tokentap analyze --percentiles 50,90,99 $out/demo.pcap"
    echo
    "$TT" analyze --percentiles 50,90,99 "$out/demo.pcap" | tee "$out/report.txt"
    echo
    analyze_ttft=$(awk -F: '/^Median TTFT \(ms\):/ {gsub(/ /,"",$2); print $2}' "$out/report.txt")
    s_ttft=$(serve_ttft)
    if [ -n "$s_ttft" ] && [ -n "$analyze_ttft" ]; then
        set -- $s_ttft
        awk -v a="$analyze_ttft" -v s="$1" -v n="$2" 'BEGIN {
            printf "demo: median TTFT: analyze (on the wire) %.2f ms, serve log (first token write - request read, %d streams) %.2f ms, difference %+.2f ms\n", a, n, s, a - s }'
    else
        echo "demo: could not compare TTFTs (analyze: '${analyze_ttft}', serve log: '${s_ttft}')"
    fi
    echo "demo: vantages taken: wire; not taken: server, client ($no_bpf)"
    finish_demo
    exit 0
fi

echo "demo: record: $(tail -1 "$out/record.err" | sed 's/^tokentap record: //')"
rc=0; "$TT" analyze "$out/rec" > "$out/report.txt" || rc=$?
[ $rc = 0 ] || { echo "demo: tokentap analyze $out/rec exited $rc" >&2; exit 1; }
"$TT" analyze --json --percentiles 50,99 "$out/rec" > "$out/report.json"
echo "demo: tokentap analyze --json --percentiles 50,99 $out/rec (full text report: $out/report.txt)"
echo
/usr/bin/python3 - "$out/report.json" "$(serve_ttft)" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
order = [v for v in ("server", "wire", "client") if v in doc["vantage_list"]]
missing = [v for v in ("server", "wire", "client") if v not in order]
per = {v: doc["per_vantage"][v]["summary"] for v in order}
ms = lambda ns: "-" if ns is None else "%.2f" % (ns / 1e6)
def dist(v, name, key):
    d = per[v].get(name) or {}
    return ms(d.get(key)) if d.get("n") else "-"
rows = [("requests complete / seen", lambda v: "%d/%d" % (per[v]["complete"], per[v]["requests"])),
        ("token events", lambda v: str(per[v]["token_events"]))]
for label, name in (("TTFT", "ttft_ns"), ("ITL", "itl_ns"), ("TPOT", "tpot_ns"), ("E2EL", "e2el_ns")):
    for key in ("median", "p99"):
        rows.append(("%s %s (ms)" % (label, key), lambda v, n=name, k=key: dist(v, n, k)))
w0 = max(len(r[0]) for r in rows)
print("%-*s" % (w0, "vantage") + "".join("%12s" % v for v in order))
print("-" * (w0 + 12 * len(order)))
for label, f in rows:
    print("%-*s" % (w0, label) + "".join("%12s" % f(v) for v in order))
print()
# per request: TTFT at each vantage, and where the time went between the
# vantages: the request on its way up (req_first), the first token on its way
# down (first_token), in us
reqs = sorted((r for r in doc["requests"] if r.get("request_id")), key=lambda r: r["request_id"])
path = [v for v in ("client", "wire", "server") if v in order]
up = list(zip(path, path[1:]))
down = [(b, a) for a, b in reversed(up)]
abbrev = {"client": "c", "wire": "w", "server": "s"}
head = "%-8s %6s" % ("request", "tokens") + "".join("%13s" % ("TTFT %s" % v) for v in order)
head += "".join("%11s" % ("up %s->%s" % (abbrev[a], abbrev[b])) for a, b in up)
head += "".join("%11s" % ("down %s->%s" % (abbrev[a], abbrev[b])) for a, b in down)
print(head)
print("-" * len(head))
def hop(vs, a, b, key):
    ta, tb = vs.get(a, {}).get(key), vs.get(b, {}).get(key)
    return "%.1f" % ((tb - ta) / 1e3) if ta is not None and tb is not None else "-"
for r in reqs:
    vs = r["vantages"]
    tok = vs.get(order[0], {}).get("token_events")
    line = "%-8s %6s" % (r["request_id"], tok if tok is not None else "-")
    line += "".join("%13s" % ms(vs.get(v, {}).get("ttft_ns")) for v in order)
    line += "".join("%11s" % hop(vs, a, b, "req_first_mono_ns") for a, b in up)
    line += "".join("%11s" % hop(vs, a, b, "first_token_mono_ns") for a, b in down)
    print(line)
print()
if up:
    print("(ms for TTFT, us for the hops: up = the request's first byte from curl's write (c) to its")
    print(" packet on lo (w) to serve's read (s); down = the first token back from serve's write to curl's read)")
serve = sys.argv[2].split()
if serve and "server" in per and per["server"]["ttft_ns"].get("n"):
    s_ms, n = float(serve[0]), int(serve[1])
    t_ms = per["server"]["ttft_ns"]["median"] / 1e6
    print("demo: median TTFT: server vantage %.2f ms, serve log (first token write - request read, %d streams) "
          "%.2f ms, difference %+.3f ms" % (t_ms, n, s_ms, t_ms - s_ms))
print("demo: vantages taken: %s%s" % (", ".join(order), "; not taken: " + ", ".join(missing) if missing else ""))
PY
finish_demo
