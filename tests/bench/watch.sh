#!/usr/bin/env bash
# The watcher as a service (issue 14), printed as a markdown section ("## The
# watcher in production (watch --metrics)") on stdout, progress on stderr.
# 1. Its own cost at a steady token-event rate: `tokentap serve` (zero TTFT,
#    --itl-ms 1, long streams) driven by build/tools/ttload with C
#    connections asks for about C x 1000 token events/s; `tokentap watch
#    --port P --metrics -q` traces it for WATCHBENCH_SECONDS (default 10).
#    The watcher's CPU (utime + stime from /proc/PID/stat over the run's
#    wall time), its resident memory at the end and its peak (VmRSS,
#    VmHWM), the rate ttload received, and the ring-buffer drops the
#    watcher exported. Rates: WATCHBENCH_CONNS ("10 100": about 10,000 and
#    100,000 events/s).
# 2. What a benchmark client pays: tests/e2e/vllm_like_client.py (a
#    vllm-bench-like client: TTFT median and output throughput as vllm
#    computes them; WATCHBENCH_REQUESTS per run, default 256) against
#    serve, WATCHBENCH_PAIRS (default 20) pairs of
#    runs, watcher off and on (`watch --port P --metrics -q`), the order
#    alternating from pair to pair; per pair the relative change on/off - 1
#    of the client's TTFT median and of its output throughput; the mean
#    change with a 95 % confidence interval (Student's t over the pairs).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
TT="$BUILD/tokentap"
LOAD="$BUILD/tools/ttload"
work=${WATCHBENCH_DIR:-$BUILD/watchbench}
secs=${WATCHBENCH_SECONDS:-10}
conns=${WATCHBENCH_CONNS:-10 100}
pairs=${WATCHBENCH_PAIRS:-20}
requests=${WATCHBENCH_REQUESTS:-256}
mkdir -p "$work"
heading="## The watcher in production (watch --metrics)"
log() { echo "watchbench: $*" >&2; }

. tests/bench/started.sh
empty_section() { { echo "$heading"; echo; echo "Not measured on this machine: $1."; }; exit 0; }
[ "$(id -u)" = 0 ] || empty_section "not root (eBPF tracing needs root)"
for f in "$TT" "$LOAD"; do [ -x "$f" ] || empty_section "$f is not built"; done
probe_rc=0; TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name --duration 0.2 -q > /dev/null 2> "$work/probe.err" || probe_rc=$?
[ $probe_rc = 0 ] || [ $probe_rc = 4 ] || empty_section "the eBPF programs do not load ($(head -1 "$work/probe.err"))"

# start_serve OUT ARGS...: serve on a free loopback port (serve_pid, serve_port)
start_serve() {
    local out=$1; shift
    "$TT" serve --listen 127.0.0.1:0 "$@" > "$out" 2> "$out.err" &
    serve_pid=$!; started+=("$serve_pid")
    for _ in $(seq 100); do grep -q '^listening on ' "$out" && break; sleep 0.05; done
    serve_port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$out")
    [ -n "$serve_port" ] || { log "serve did not start: $(cat "$out.err")"; exit 1; }
}
stop_pid() { kill -INT "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
# start_watch OUT: watch --port serve_port --metrics (watch_pid, metrics_port),
# without TLS uprobes (nothing here speaks TLS; attaching them to every
# libssl on the host, and detaching, took tens of seconds on the busy
# development machine, a cost of its own: docs/performance.md, TLS section)
start_watch() {
    TOKENTAP_NO_TLS=1 "$TT" watch --port "$serve_port" --metrics 127.0.0.1:0 -q --interval 0 > "$1" 2> "$1.err" &
    watch_pid=$!; started+=("$watch_pid")
    # (attaching the TLS uprobes to every libssl in use can take seconds)
    for _ in $(seq 600); do grep -q '^tokentap watch: tracing' "$1.err" && break; sleep 0.05; done
    metrics_port=$(sed -n 's/.*metrics on port \([0-9]*\),.*/\1/p' "$1.err")
    [ -n "$metrics_port" ] || { log "watch did not start: $(cat "$1.err")"; exit 1; }
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
ring_drops() {
    curl -sS "http://127.0.0.1:$metrics_port/metrics" |
        awk '$1 == "tokentap_ring_drops_total" {print $2; found=1} END {if (!found) print "?"}'
}
hz=$(getconf CLK_TCK)

# ---- 1. the watcher's own cost ----
rows=()
for c in $conns; do
    log "cost: $c connections for $secs s"
    start_serve "$work/serve-$c.out" --profile vllm --ttft-ms 0 --itl-ms 1 --tokens 2000
    start_watch "$work/watch-$c.out"
    t0=$(cpu_ticks "$watch_pid"); w0=$(date +%s%N)
    "$LOAD" -c "$c" -d "$secs" -T 2000 "127.0.0.1:$serve_port" > "$work/load-$c.json" 2> "$work/load-$c.err" || true
    t1=$(cpu_ticks "$watch_pid"); w1=$(date +%s%N)
    rss=$(status_kb "$watch_pid" VmRSS); hwm=$(status_kb "$watch_pid" VmHWM); drops=$(ring_drops)
    stop_pid "$watch_pid"; stop_pid "$serve_pid"
    rows+=("$(/usr/bin/python3 - "$work/load-$c.json" "$c" "$t0" "$t1" "$w0" "$w1" "$hz" "$rss" "$hwm" "$drops" <<'PY'
import json, sys
load = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
c, t0, t1, w0, w1, hz, rss, hwm, drops = sys.argv[2:]
wall = (int(w1) - int(w0)) / 1e9
cpu = (int(t1) - int(t0)) / int(hz)
print("| %s | %.0f | %.1f %% | %.1f | %.1f | %s |" % (c, load["events"] / load["seconds"], 100 * cpu / wall,
                                                   int(rss) / 1024, int(hwm) / 1024, drops))
PY
)")
    log "${rows[-1]}"
done

# ---- 2. the paired change in a benchmark client's numbers ----
client=tests/e2e/vllm_like_client.py
start_serve "$work/serve-pairs.out" --profile vllm --ttft-ms 20 --itl-ms 5
run_client() { # run_client OUT
    /usr/bin/python3 "$client" "$serve_port" 0 "$1" "$requests" wb- 32 --concurrency 8 > /dev/null 2>&1
}
for i in $(seq "$pairs"); do
    order="off on"; [ $((i % 2)) = 0 ] && order="on off"
    for mode in $order; do
        if [ "$mode" = on ]; then start_watch "$work/watch-pair.out"; fi
        run_client "$work/pair-$i-$mode.json"
        if [ "$mode" = on ]; then stop_pid "$watch_pid"; fi
    done
    log "pair $i done ($order)"
done
stop_pid "$serve_pid"
paired=$(/usr/bin/python3 - "$work" "$pairs" <<'PY'
import json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
T95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26, 11: 2.23, 12: 2.20,
       13: 2.18, 14: 2.16, 15: 2.14, 16: 2.13, 20: 2.09, 25: 2.06, 30: 2.05}
def numbers(path):
    d = json.load(open(path))
    return statistics.median(d["ttfts"]), d["total_output_tokens"] / d["duration"]
def ci(xs):
    n = len(xs)
    t = T95.get(n) or T95[max(k for k in T95 if k <= n)]
    m = statistics.mean(xs)
    h = t * statistics.stdev(xs) / n ** 0.5
    return "%+.2f %% (95 %% CI %+.2f .. %+.2f %%)" % (100 * m, 100 * (m - h), 100 * (m + h))
ttft, thr, off_ttft, off_thr = [], [], [], []
for i in range(1, pairs + 1):
    (a_t, a_r), (b_t, b_r) = numbers(f"{work}/pair-{i}-off.json"), numbers(f"{work}/pair-{i}-on.json")
    ttft.append(b_t / a_t - 1)
    thr.append(b_r / a_r - 1)
    off_ttft.append(a_t)
    off_thr.append(a_r)
print("| TTFT median | %.2f ms | %s |" % (1e3 * statistics.median(off_ttft), ci(ttft)))
print("| output throughput | %.0f tokens/s | %s |" % (statistics.median(off_thr), ci(thr)))
PY
)

cat <<EOF2
$heading

Measured by \`BUILD=$BUILD tests/bench/watch.sh\` (part of \`make bench\`) on
$(nproc) CPUs, $(date -u +%Y-%m-%d).

**The watcher's own cost** (\`TOKENTAP_NO_TLS=1 watch --port P --metrics 127.0.0.1:0 -q\`
tracing \`serve --ttft-ms 0 --itl-ms 1 --tokens 2000\` under \`ttload -c C
-d $secs -T 2000\`; CPU is the watcher's user + system time over the run's
wall time, one core = 100 %; memory from /proc/PID/status at the end):

| ttload connections | token events/s received | watcher CPU | RSS MB | peak RSS MB | ring-buffer drops |
|---|---|---|---|---|---|
$(printf '%s\n' "${rows[@]}")

**What a benchmark client pays** (\`tests/e2e/vllm_like_client.py\`: $requests
streamed requests of 32 tokens at concurrency 8 against \`serve --ttft-ms 20
--itl-ms 5\`, its TTFT median and output throughput as vllm computes them;
$pairs pairs of runs with the watcher off and on, the order alternating;
the change is on/off - 1 per pair, mean with Student's t interval; goal:
under 0.5 %):

| client's number | median with the watcher off | change with it on |
|---|---|---|
$paired
EOF2
