#!/usr/bin/env bash
# make demo: start `tokentap serve` (vllm profile, a realistic TTFT/ITL
# schedule, --log) on a free loopback port, capture loopback with
# build/tools/ttcapture while 6 concurrent curl streams run, then analyze the
# capture as a user would and compare analyze's median TTFT with the TTFT that
# serve logged (first token write minus the instant the request was read).
# Without root (libpcap on lo needs it), curl, or when the capture cannot
# start, falls back to the generated capture: the fixture writer's streams
# with known instants. DEMO_GENERATED=1 forces the fallback.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=${DEMO_DIR:-$BUILD/demo}
mkdir -p "$out"

generated_demo() { # why
    echo "demo: $1; using a generated capture instead"
    "$BUILD/tools/ttpcapgen" -o "$out/demo.pcap" --truth "$out/demo.truth" --dialect openai-chat \
        --streams 16 --tokens 64 --concurrency 4 --ttft-us 180000 --itl-us 22000 --seed 42 > /dev/null
    echo "demo: wrote $out/demo.pcap (16 streamed chat completions, TTFT ~180 ms, ITL ~22 ms)"
    echo "demo: tokentap analyze --percentiles 50,90,99 $out/demo.pcap"
    echo
    "$BUILD/tokentap" analyze --percentiles 50,90,99 "$out/demo.pcap"
}

if [ -n "${DEMO_GENERATED:-}" ]; then generated_demo "DEMO_GENERATED is set"; exit 0; fi
if [ "$(id -u)" != 0 ]; then generated_demo "not root, so no live capture on lo"; exit 0; fi
if ! command -v curl > /dev/null; then generated_demo "curl is not installed"; exit 0; fi
[ -x "$BUILD/tools/ttcapture" ] || { generated_demo "$BUILD/tools/ttcapture is not built"; exit 0; }

started=()
cleanup() {
    for p in "${started[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${started[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

streams=6 tokens=48
serve_args="--profile vllm --ttft-ms uniform:120:280 --itl-ms uniform:15:30 --seed 42 --log $out/serve.log"
rm -f "$out/serve.log" "$out/demo.pcap"
"$BUILD/tokentap" serve --listen 127.0.0.1:0 $serve_args > "$out/serve.out" 2> "$out/serve.err" &
serve_pid=$!; started+=("$serve_pid")
for _ in $(seq 100); do grep -q '^listening on ' "$out/serve.out" 2>/dev/null && break; sleep 0.05; done
port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out/serve.out")
[ -n "$port" ] || { echo "demo: tokentap serve did not start: $(cat "$out/serve.err")" >&2; exit 1; }
echo "demo: tokentap serve --listen 127.0.0.1:$port $serve_args"

"$BUILD/tools/ttcapture" -i lo -f "tcp port $port" -w "$out/demo.pcap" -d 20 > "$out/capture.out" 2> "$out/capture.err" &
cap_pid=$!; started+=("$cap_pid")
for _ in $(seq 100); do grep -q ready "$out/capture.out" 2>/dev/null && break; kill -0 "$cap_pid" 2>/dev/null || break; sleep 0.05; done
if ! grep -q ready "$out/capture.out" 2>/dev/null; then
    why="ttcapture could not capture on lo ($(head -1 "$out/capture.err"))"
    cleanup; started=()
    generated_demo "$why"; exit 0
fi
sleep 0.1
echo "demo: ttcapture -i lo -f 'tcp port $port' -w $out/demo.pcap; $streams concurrent curl streams of $tokens tokens"
clients=()
for i in $(seq "$streams"); do
    curl -sS -N --max-time 10 -H 'Content-Type: application/json' -H "x-request-id: demo-$i" \
        -d "{\"model\":\"demo-model\",\"stream\":true,\"max_tokens\":$tokens,\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"Tell me about packet captures.\"}]}" \
        "http://127.0.0.1:$port/v1/chat/completions" > "$out/curl-$i.out" &
    clients+=($!)
done
for c in "${clients[@]}"; do wait "$c" || { echo "demo: curl exited $?" >&2; exit 1; }; done
sleep 0.2
kill -INT "$cap_pid"; wait "$cap_pid" || true
kill -TERM "$serve_pid"; wait "$serve_pid" || { echo "demo: serve exited $?: $(cat "$out/serve.err")" >&2; exit 1; }
started=()
echo "demo: capture: $(tail -1 "$out/capture.err")"
echo "demo: tokentap analyze --percentiles 50,90,99 $out/demo.pcap"
echo
"$BUILD/tokentap" analyze --percentiles 50,90,99 "$out/demo.pcap" | tee "$out/report.txt"
echo
analyze_ttft=$(awk -F: '/^Median TTFT \(ms\):/ {gsub(/ /,"",$2); print $2}' "$out/report.txt")
serve_ttft=$(/usr/bin/python3 - "$out/serve.log" <<'PY'
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
)
if [ -n "$serve_ttft" ] && [ -n "$analyze_ttft" ]; then
    set -- $serve_ttft
    awk -v a="$analyze_ttft" -v s="$1" -v n="$2" 'BEGIN {
        printf "demo: median TTFT: analyze (on the wire) %.2f ms, serve log (first token write - request read, %d streams) %.2f ms, difference %+.2f ms\n", a, n, s, a - s }'
else
    echo "demo: could not compare TTFTs (analyze: '${analyze_ttft}', serve log: '${serve_ttft}')"
fi
