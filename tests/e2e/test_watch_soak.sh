#!/usr/bin/env bash
# Running for days (issue 14), in short: `watch --metrics` over a high
# request rate with connection churn (ttload started afresh every 400
# requests: new connections each time) for SOAK_SECONDS (default 45;
# `make soak` runs 600, docs/performance.md). The watcher's resident memory,
# sampled every 2 s, is flat once warmed up: after the first third, no
# sample is more than 5 % above the first sample after it. It keeps only
# the last --keep-requests for its report (100 with --metrics) and
# exports every request: tokentap_requests_total counts every request
# ttload made (ttload's own count, the ground truth). Under ASan+UBSan the
# resident size says nothing (the allocator quarantines freed memory); the
# leak check at the watcher's exit does, and it exits nonzero on a leak.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing needs root"
secs=${SOAK_SECONDS:-45}
work_dir
need_bpf "$work"
start_serve "$work" --profile vllm --ttft-ms 0 --itl-ms 0 --tokens 16
"$TT" watch --port "$SERVE_PORT" --metrics 127.0.0.1:0 -q --interval 0 > "$work/watch.out" 2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"
mport=$(sed -n 's/.*metrics on port \([0-9]*\),.*/\1/p' "$work/watch.err")
[ -n "$mport" ] || fail "no metrics port said: $(cat "$work/watch.err")"

end=$(( $(date +%s) + secs ))
(
    while [ "$(date +%s)" -lt "$end" ]; do
        "$BUILD/tools/ttload" -c 8 -n 400 -T 16 "127.0.0.1:$SERVE_PORT" 2>&1 | tail -1 || exit 1
    done
) > "$work/load.out" 2>&1 &
lpid=$!
while kill -0 $lpid 2>/dev/null; do
    awk '/^VmRSS:/ {print $2}' "/proc/$wpid/status" >> "$work/rss.kb"
    sleep 2
done
wait $lpid || fail "ttload failed: $(tail -3 "$work/load.out")"
sleep 0.5
curl -sS "http://127.0.0.1:$mport/metrics" > "$work/metrics.txt" || fail "no metrics page"
kill -INT $wpid
rc=0; wait $wpid || rc=$?
[ $rc = 0 ] || fail "watch exit $rc (a leak under ASan?): $(tail -5 "$work/watch.err")"
san=0; nm -D "$TT" 2>/dev/null | grep -q __asan_init && san=1
/usr/bin/python3 - "$work" "$secs" "$san" <<'PY'
import json, re, sys
work, secs, san = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
runs = [json.loads(l) for l in open(f"{work}/load.out") if l.startswith("{")]
assert runs and not any(r["errors"] or r["bad_status"] or r["unfinished"] for r in runs), runs[:3]
made = sum(r["requests"] for r in runs)
page = open(f"{work}/metrics.txt").read()
counted = sum(float(v) for v in re.findall(r'^tokentap_requests_total\{[^}]*vantage="server"[^}]*\} (\S+)$', page, re.M))
assert made > 0 and counted == made, ("requests exported at the server vantage", counted, "ttload made", made)
rss = [int(x) for x in open(f"{work}/rss.kb")]
warm = rss[len(rss) // 3:]
assert len(warm) >= 3, rss
growth = max(warm) / warm[0] - 1
if not san:
    assert growth <= 0.05, ("resident memory grew after warm-up", rss)
print("soak: %d s, %d requests (%.0f/s) over new connections every 400, all exported; watcher RSS %.1f MB after "
      "warm-up, at most %+.1f %% later%s" % (secs, made, made / secs, warm[0] / 1024, 100 * growth,
                                            " (ASan: not judged; no leak at exit)" if san else ""))
PY
