#!/usr/bin/env bash
# make demo: generate a capture of streamed chat completions with known
# instants (the fixture writer), then analyze it as a user would.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=${DEMO_DIR:-$BUILD/demo}
mkdir -p "$out"
"$BUILD/tools/ttpcapgen" -o "$out/demo.pcap" --truth "$out/demo.truth" --dialect openai-chat \
    --streams 16 --tokens 64 --concurrency 4 --ttft-us 180000 --itl-us 22000 --seed 42 > /dev/null
echo "demo: wrote $out/demo.pcap (16 streamed chat completions, TTFT ~180 ms, ITL ~22 ms)"
echo "demo: tokentap analyze --percentiles 50,90,99 $out/demo.pcap"
echo
"$BUILD/tokentap" analyze --percentiles 50,90,99 "$out/demo.pcap"
