#!/usr/bin/env bash
# Captures written by the fixture writer at chosen instants, one per dialect
# and framing variant; analyze must reproduce every chosen instant exactly.
set -eu
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
run_case() {
    local name=$1; shift
    "$GEN" -o "$work/$name.pcap" --truth "$work/$name.truth" "$@" > /dev/null
    "$TT" analyze --json "$work/$name.pcap" > "$work/$name.json" || fail "$name: analyze exit $?"
    /usr/bin/python3 tests/e2e/check_truth.py "$work/$name.json" "$work/$name.truth" > "$work/$name.out" \
        || { cat "$work/$name.out"; fail "$name"; }
}
for d in openai-chat openai-completions responses anthropic tgi llamacpp ollama; do
    run_case "$d" --dialect "$d" --streams 6 --tokens 20 --concurrency 3 --seed 7
done
run_case crlf --dialect openai-chat --crlf --streams 4 --tokens 10 --seed 3
run_case usage-with-choices --dialect openai-chat --usage-with-choices --streams 4 --tokens 10 --seed 5
run_case many --dialect openai-chat --streams 200 --tokens 50 --concurrency 32 --seed 11
echo "truth: all cases match"
