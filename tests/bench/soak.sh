#!/usr/bin/env bash
# make soak: tests/e2e/test_watch_soak.sh held for SOAK_SECONDS (default
# 600) with the plain build and with the ASan+UBSan one (build/san, leak
# check at the watcher's exit), printed as the markdown section "## The
# watcher held for hours (make soak)" on stdout, progress on stderr.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
secs=${SOAK_SECONDS:-600}
heading="## The watcher held for hours (make soak)"
rows=()
for b in "$BUILD" build/san; do
    echo "soak: $b for $secs s" >&2
    if out=$(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 SOAK_SECONDS=$secs BUILD=$b tests/e2e/test_watch_soak.sh 2>&1); then
        rows+=("| \`$b\` | passed | $(echo "$out" | tail -1 | sed 's/^soak: //') |")
    else
        rows+=("| \`$b\` | **failed** | $(echo "$out" | tail -3 | tr '\n' ' ' | sed 's/|/\\|/g') |")
    fi
    echo "soak: ${rows[-1]}" >&2
done
cat <<EOF2
$heading

\`make soak\` (\`tests/bench/soak.sh\`: tests/e2e/test_watch_soak.sh with
SOAK_SECONDS=$secs) on $(nproc) CPUs, $(date -u +%Y-%m-%d): \`watch --port P
--metrics -q\` over \`serve\` (zero delays, 16 tokens) while \`ttload -c 8 -n
400\` is started afresh all the time (new connections every 400 requests);
the watcher's resident memory sampled every 2 s must stay within 5 % of its
first sample after the first third (not judged under ASan, whose allocator
quarantines freed memory; there the leak check at exit is the test), and
\`tokentap_requests_total\` must count every request ttload made.

| build | result | measured |
|---|---|---|
$(printf '%s\n' "${rows[@]}")
EOF2
