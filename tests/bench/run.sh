#!/usr/bin/env bash
# make bench: tokentap analyze throughput on a generated capture of at least
# 1,000,000 token events, beside `cat FILE > /dev/null` and
# `tshark -r FILE -Y http` on the same file in the same run. Medians of
# BENCH_RUNS runs (default 3). Writes the figures into docs/performance.md.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
runs=${BENCH_RUNS:-5}
streams=${BENCH_STREAMS:-2000}
tokens=${BENCH_TOKENS:-500}
work=${BENCH_DIR:-$BUILD/bench}
mkdir -p "$work"
cap="$work/bench.pcap"
gen_cmd="$BUILD/tools/ttpcapgen -o $cap --dialect openai-chat --streams $streams --tokens $tokens --concurrency 64 --seed 1"
echo "bench: $gen_cmd"
$gen_cmd > /dev/null
sync "$cap"   # let writeback of the new file finish before anything is timed
bytes=$(stat -c %s "$cap")

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
time_cmd() { # time_cmd RUNS CMD... -> median seconds
    local n=$1; shift
    for _ in $(seq "$n"); do
        local t0; t0=$(now_ns)
        "$@" > /dev/null 2>&1 || { echo "bench: '$*' failed" >&2; return 1; }
        echo $(( $(now_ns) - t0 ))
    done | median | awk '{printf "%.3f", $1/1e9}'
}

"$BUILD/tokentap" analyze "$cap" > "$work/report.txt"   # also warms the page cache
events=$(awk -F: '/^Total token events:/ {gsub(/ /,"",$2); print $2}' "$work/report.txt")
echo "bench: capture $bytes bytes, $events token events"

t_cat=$(time_cmd "$runs" cat "$cap")
t_tt=$(time_cmd "$runs" taskset -c 0 "$BUILD/tokentap" analyze "$cap")
t_json=$(time_cmd "$runs" taskset -c 0 "$BUILD/tokentap" analyze --json -o "$work/report.json" "$cap")
if command -v tshark > /dev/null; then
    t_tshark=$(time_cmd 1 tshark -r "$cap" -Y http)
else
    t_tshark=""
fi
rate() { awk -v n="$1" -v t="$2" 'BEGIN {printf "%.0f", n/t}'; }
mbps() { awk -v b="$1" -v t="$2" 'BEGIN {printf "%.1f", b/t/1e6}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a/b}'; }

ev_rate=$(rate "$events" "$t_tt")
{
    echo "# Performance"
    echo
    echo "Measured by \`make bench\` (tests/bench/run.sh) on $(date -u +%Y-%m-%d), $(nproc) cores,"
    echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')."
    echo "Medians of $runs runs (tshark: 1 run). tokentap is pinned to one core (taskset -c 0)."
    echo
    echo "Capture: \`$gen_cmd\`"
    echo "($bytes bytes, $events token events)."
    echo
    echo "| command | seconds | token events/s | MB/s |"
    echo "|---|---|---|---|"
    echo "| \`cat FILE > /dev/null\` | $t_cat | | $(mbps "$bytes" "$t_cat") |"
    echo "| \`tokentap analyze FILE\` | $t_tt | $ev_rate | $(mbps "$bytes" "$t_tt") |"
    echo "| \`tokentap analyze --json -o OUT FILE\` | $t_json | $(rate "$events" "$t_json") | $(mbps "$bytes" "$t_json") |"
    [ -n "$t_tshark" ] && echo "| \`tshark -r FILE -Y http\` | $t_tshark | $(rate "$events" "$t_tshark") | $(mbps "$bytes" "$t_tshark") |"
    echo
    echo "Targets (issue 2): at least 1,000,000 token events/s on one core; at least"
    echo "20 times tshark."
    echo
    echo "- token events/s: $ev_rate"
    [ -n "$t_tshark" ] && echo "- tokentap vs tshark: $(ratio "$t_tshark" "$t_tt") times faster"
    echo "- tokentap vs cat: $(ratio "$t_tt" "$t_cat") times cat's time"
} > "$work/performance.md"
cp "$work/performance.md" docs/performance.md
cat docs/performance.md
