#!/usr/bin/env bash
# The observer effect (issue 16), printed as a markdown section ("## What
# observing costs a benchmark client") on stdout, progress on stderr.
#
# A benchmark client at concurrency 64 (tests/e2e/vllm_like_client.py: TTFT
# median and output throughput as vllm bench serve computes them) against
# one `tokentap serve --profile vllm --ttft-ms 20 --itl-ms 5`, in four
# conditions:
#   plain   the client alone
#   run     the client under `tokentap run` (the LD_PRELOAD probe in it)
#   watch   `tokentap watch --pid SERVE -q` tracing the server with eBPF
#   record  `tokentap record --port P`: both ends with eBPF and the wire
#           with libpcap
#   pcap    libpcap alone, not tokentap (tests/tools/ttcapture on lo with
#           record's wire filter, woken as packets come): what a wire
#           capture costs the client here, beside record's own
# OBSBENCH_ROUNDS rounds (default 20), each running the five conditions
# once, the order rotated from round to round (a Latin square over each
# five rounds) so that drift and warm-up fall on every condition alike. Per
# round, each observed condition's relative change against that round's
# plain run, of the client's TTFT median and of its output throughput; over
# the rounds, the mean change with its 95 % Student's t interval. Every run
# asks the same requests (OBSBENCH_REQUESTS, default 1024, of
# OBSBENCH_TOKENS tokens, default 16; serve's tokens are deterministic) so
# that runs differ only by the condition and the machine's noise.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
TT="$BUILD/tokentap"
work=${OBSBENCH_DIR:-$BUILD/obsbench}
rounds=${OBSBENCH_ROUNDS:-20}
nreq=${OBSBENCH_REQUESTS:-1024}
ntok=${OBSBENCH_TOKENS:-16}
conc=64
client=tests/e2e/vllm_like_client.py
conditions=(plain run watch record pcap)
heading="## What observing costs a benchmark client"
rm -rf "$work"; mkdir -p "$work"
log() { echo "obsbench: $*" >&2; }

. tests/bench/started.sh
. tests/bench/machine.sh
empty_section() { { echo "$heading"; echo; echo "Not measured on this machine: $1."; }; exit 0; }
[ "$(id -u)" = 0 ] || empty_section "not root (eBPF tracing needs root)"
[ -x "$TT" ] || empty_section "$TT is not built"
probe_rc=0; TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name --duration 0.2 -q > /dev/null 2> "$work/probe.err" || probe_rc=$?
[ $probe_rc = 0 ] || [ $probe_rc = 4 ] || empty_section "the eBPF programs do not load ($(head -1 "$work/probe.err"))"

"$TT" serve --listen 127.0.0.1:0 --profile vllm --ttft-ms 20 --itl-ms 5 > "$work/serve.out" 2> "$work/serve.err" &
serve_pid=$!; started+=("$serve_pid")
for _ in $(seq 100); do grep -q '^listening on ' "$work/serve.out" && break; sleep 0.05; done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/serve.out")
[ -n "$port" ] || { log "serve did not start: $(cat "$work/serve.err")"; exit 1; }

# start_observer NAME LINE CMD...: start CMD in the background and wait until
# its stderr shows LINE (it is tracing); sets observer_pid.
start_observer() {
    local name=$1 line=$2; shift 2
    "$@" > "$work/$name.out" 2> "$work/$name.err" &
    observer_pid=$!; started+=("$observer_pid")
    for _ in $(seq 1200); do grep -q "$line" "$work/$name.err" && return 0; sleep 0.05; done
    log "$name did not start in 60 s: $(cat "$work/$name.err")"; exit 1
}
stop_observer() { kill -INT "$observer_pid" 2>/dev/null || true; wait "$observer_pid" 2>/dev/null || true; }

# one_run CONDITION ROUND: the client once, under CONDITION; its result in
# $work/CONDITION-ROUND.json.
one_run() {
    local cond=$1 i=$2 out="$work/$1-$2.json"
    local cmd=(/usr/bin/python3 "$client" "$port" 0 "$out" "$nreq" "ob-$cond-$i-" "$ntok" --concurrency "$conc")
    case $cond in
    plain) "${cmd[@]}" > /dev/null 2>&1 ;;
    run) "$TT" run --report /dev/null -- "${cmd[@]}" > /dev/null 2>&1 ;;
    watch)
        start_observer watch '^tokentap watch: tracing' env TOKENTAP_NO_TLS=1 "$TT" watch --pid "$serve_pid" -q
        "${cmd[@]}" > /dev/null 2>&1
        stop_observer ;;
    record)
        rm -rf "$work/rec"
        start_observer record '^tokentap record: recording' env TOKENTAP_NO_TLS=1 "$TT" record -o "$work/rec" --port "$port"
        "${cmd[@]}" > /dev/null 2>&1
        stop_observer
        rm -rf "$work/rec" ;;
    pcap)
        start_observer pcap '^ready' sh -c 'exec "$0" "$@" >&2' "$BUILD/tools/ttcapture" -i lo -f "tcp port $port" -w "$work/wire.pcap" -d 600
        "${cmd[@]}" > /dev/null 2>&1
        stop_observer
        rm -f "$work/wire.pcap" ;;
    esac
    [ -s "$out" ] || { log "the client wrote no result under $cond (round $i)"; exit 1; }
}

for i in $(seq "$rounds"); do
    order=()
    for k in "${!conditions[@]}"; do order+=("${conditions[$(( (k + i) % ${#conditions[@]} ))]}"); done
    for cond in "${order[@]}"; do one_run "$cond" "$i"; done
    log "round $i of $rounds done (${order[*]})"
done
kill -INT "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true

rows=$(/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
# two-sided 95 % Student's t quantiles by degrees of freedom
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 11: 2.20,
       12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 19: 2.09, 24: 2.06, 29: 2.05, 39: 2.02, 59: 2.00}
def numbers(cond, i):
    d = json.load(open(f"{work}/{cond}-{i}.json"))
    ok = [t for t in d["ttfts"] if t]
    return statistics.median(ok), d["total_output_tokens"] / d["duration"], d["failed"]
def ci(xs):
    n = len(xs)
    t = T95[max(k for k in T95 if k <= n - 1)]
    m = statistics.mean(xs)
    h = t * statistics.stdev(xs) / n ** 0.5
    return "%+.2f %% (%+.2f .. %+.2f)" % (m, m - h, m + h)
plain = {i: numbers("plain", i) for i in range(1, rounds + 1)}
print("| plain | %.2f ms | | %.0f | | %d |" % (
    1e3 * statistics.median(p[0] for p in plain.values()), statistics.median(p[1] for p in plain.values()),
    sum(p[2] for p in plain.values())))
for cond in ("run", "watch", "record", "pcap"):
    ttft, thr, failed, med_t, med_r = [], [], 0, [], []
    for i in range(1, rounds + 1):
        t, r, f = numbers(cond, i)
        ttft.append(100 * (t / plain[i][0] - 1))
        thr.append(100 * (r / plain[i][1] - 1))
        med_t.append(t); med_r.append(r); failed += f
    print("| %s | %.2f ms | %s | %.0f | %s | %d |" % (cond, 1e3 * statistics.median(med_t), ci(ttft),
                                                      statistics.median(med_r), ci(thr), failed))
PY
)

cat <<EOF
$heading

Measured by \`BUILD=$BUILD tests/bench/observer.sh\` (part of \`make bench\`) on
$(date -u +%Y-%m-%d): $(machine_line).

    tokentap serve --listen 127.0.0.1:0 --profile vllm --ttft-ms 20 --itl-ms 5
    vllm_like_client.py PORT 0 OUT $nreq PREFIX $ntok --concurrency $conc                 # plain
    tokentap run --report /dev/null -- vllm_like_client.py ...                              # run
    TOKENTAP_NO_TLS=1 tokentap watch --pid SERVE -q          (around the client)           # watch
    TOKENTAP_NO_TLS=1 tokentap record -o DIR --port PORT     (around the client)           # record
    ttcapture -i lo -f "tcp port PORT" -w FILE               (around the client)           # pcap

tests/e2e/vllm_like_client.py is a vllm-bench-like client (its TTFT median
and output throughput as vllm bench serve computes them), $conc requests in
flight, $nreq requests of $ntok tokens per run, the same requests in every
run. pcap is libpcap alone, not tokentap: tests/tools/ttcapture in
immediate mode with record's wire filter, asleep in poll on its descriptor,
so woken as packets come (record reads its capture without waiting on it,
between the polls of its eBPF rings): what a capture of the wire
costs this client here by itself, beside record's own.
$rounds rounds, each running the five conditions once in an order
rotated from round to round; per round the change of each observed
condition against that round's plain run; the mean change over the rounds
with its 95 % Student's t interval. Goal (issue 16): a change under 0.5 %.

| condition | TTFT median (median of runs) | TTFT change | throughput, tokens/s (median of runs) | throughput change | failed requests (all runs) |
|---|---|---|---|---|---|
$rows
EOF
