#!/usr/bin/env bash
# watch --metrics (issue 14): `tokentap watch --port P --metrics 127.0.0.1:0`
# over `tokentap serve` (TTFT drawn from 20..200 ms), scraped every second
# by a real Prometheus server (Debian's prometheus, started here on
# loopback with a config written here; it asks for OpenMetrics), while 40
# streamed chat completions run 4 at a time under two models:
#  - Prometheus sees the target up and every request: the TTFT histogram's
#    count at the server vantage is 40, split 20/20 by gen_ai_request_model;
#  - histogram_quantile(0.5 and 0.9) over the scraped buckets is within
#    the width of the bucket that holds tokentap's own value (the median
#    and p90 of the per-request server TTFTs in watch's JSON report);
#  - the page passes `promtool check metrics`, the OpenMetrics form ends
#    with # EOF, another path is 404, a POST 405, a bad --metrics address
#    is exit 2.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF"
command -v prometheus >/dev/null || skip "prometheus not installed"
command -v curl >/dev/null || skip "curl not installed"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
need_bpf "$work"

rc=0; "$TT" watch --metrics 127.0.0.1:notaport --duration 1 > /dev/null 2> "$work/bad.err" || rc=$?
[ $rc = 2 ] && grep -q -- '--metrics wants HOST:PORT' "$work/bad.err" || fail "a bad --metrics: exit $rc, $(cat "$work/bad.err")"
rc=0; "$TT" watch --metrics 127.0.0.1:+9 --duration 1 > /dev/null 2> "$work/bad.err" || rc=$?
[ $rc = 2 ] && grep -q -- '--metrics wants HOST:PORT' "$work/bad.err" || fail "--metrics with a signed port: exit $rc, $(cat "$work/bad.err")"

start_serve "$work" --profile vllm --ttft-ms uniform:20:200 --itl-ms 4 --tokens 6 --seed 11
"$TT" watch --port "$SERVE_PORT" --metrics 127.0.0.1:0 -q --json -o "$work/watch.json" > /dev/null 2> "$work/watch.err" &
wpid=$!
wait_tracing "$work/watch.err"
mport=$(sed -n 's/.*metrics on port \([0-9]*\),.*/\1/p' "$work/watch.err")
[ -n "$mport" ] || fail "no metrics port said: $(cat "$work/watch.err")"
pport=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: tokentap
    static_configs:
      - targets: ['127.0.0.1:$mport']
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$pport" > "$work/prom.log" 2>&1 &
query() { curl -sS --max-time 5 --data-urlencode "query=$1" "http://127.0.0.1:$pport/api/v1/query"; }
value() { /usr/bin/python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "none")'; }
for _ in $(seq 100); do [ "$(query 'up{job="tokentap"}' 2> /dev/null | value 2> /dev/null)" = 1 ] && break; sleep 0.2; done
[ "$(query 'up{job="tokentap"}' | value)" = 1 ] || fail "Prometheus does not scrape watch: $(tail -5 "$work/prom.log")"

workers=""
for w in 0 1 2 3; do
    (for i in $(seq 0 9); do
        n=$((w * 10 + i)); model=$([ $((n % 2)) = 0 ] && echo m-even || echo m-odd)
        curl -sS -N --max-time 10 -o /dev/null -H 'content-type: application/json' -H "x-request-id: pm-$n" \
            -d "{\"model\":\"$model\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}" \
            "http://127.0.0.1:$SERVE_PORT/v1/chat/completions"
    done) &
    workers="$workers $!"
done
for p in $workers; do wait "$p" || fail "a client failed"; done
count='sum(gen_ai_server_time_to_first_token_seconds_count{vantage="server"})'
for _ in $(seq 100); do [ "$(query "$count" | value)" = 40 ] && break; sleep 0.2; done
[ "$(query "$count" | value)" = 40 ] || fail "Prometheus counted $(query "$count" | value) of 40 server TTFTs"
for model in m-even m-odd; do
    n=$(query "sum(gen_ai_server_time_to_first_token_seconds_count{vantage=\"server\",gen_ai_request_model=\"$model\"})" | value)
    [ "$n" = 20 ] || fail "model $model: $n of 20"
done
q50=$(query 'histogram_quantile(0.5, sum by (le) (gen_ai_server_time_to_first_token_seconds_bucket{vantage="server"}))' | value)
q90=$(query 'histogram_quantile(0.9, sum by (le) (gen_ai_server_time_to_first_token_seconds_bucket{vantage="server"}))' | value)
curl -sS "http://127.0.0.1:$mport/metrics" > "$work/page.txt"
curl -sS -H 'Accept: application/openmetrics-text; version=1.0.0' "http://127.0.0.1:$mport/metrics" > "$work/page.om"
code=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/nope")
post=$(curl -sS -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$mport/metrics")
kill -INT $wpid; wait $wpid || fail "watch exit $?: $(cat "$work/watch.err")"
[ "$code" = 404 ] || fail "another path answered $code"
[ "$post" = 405 ] || fail "a POST answered $post"
[ "$(tail -1 "$work/page.om")" = "# EOF" ] || fail "the OpenMetrics page does not end with # EOF"
promtool check metrics < "$work/page.txt" > "$work/promtool.out" 2>&1 || fail "promtool: $(cat "$work/promtool.out")"

PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work" "$q50" "$q90" <<'PY' || fail "Prometheus against tokentap's own report: see above"
import statistics, sys
from json_docs import by_vantage
work, q50, q90 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
reqs = [r for r in by_vantage(f"{work}/watch.json")["server"]["requests"] if (r["request_id"] or "").startswith("pm-")]
ttfts = sorted(r["vantages"]["server"]["ttft_ns"] / 1e9 for r in reqs)
assert len(ttfts) == 40, len(ttfts)
bounds = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]
def width(x):
    lo = 0.0
    for b in bounds:
        if x <= b:
            return b - lo
        lo = b
    return float("inf")
own50 = statistics.median(ttfts)
own90 = ttfts[int(0.9 * len(ttfts)) - 1]
for name, prom, own in (("median", q50, own50), ("p90", q90, own90)):
    assert abs(prom - own) <= width(own), (name, prom, own, width(own))
print("metrics: Prometheus scraped 40/40 server TTFTs (20 per model); histogram_quantile median %.1f ms vs "
      "tokentap's %.1f ms, p90 %.1f ms vs %.1f ms (within the bucket's width)" % (q50 * 1e3, own50 * 1e3, q90 * 1e3, own90 * 1e3))
PY
# The watcher never traces itself: unfiltered, the scrapes of its own
# endpoint are requests at curl's client vantage only, never at its server.
"$TT" watch --metrics 127.0.0.1:0 -q --duration 3 --json -o "$work/self.json" > /dev/null 2> "$work/self.err" &
spid=$!
for _ in $(seq 50); do grep -q 'metrics on port' "$work/self.err" && break; sleep 0.1; done
sport=$(sed -n 's/.*metrics on port \([0-9]*\),.*/\1/p' "$work/self.err")
[ -n "$sport" ] || fail "no metrics port said: $(cat "$work/self.err")"
for _ in 1 2 3; do curl -sS -o /dev/null "http://127.0.0.1:$sport/metrics"; done
rc=0; wait $spid || rc=$?
[ $rc = 0 ] || [ $rc = 4 ] || fail "watch exit $rc: $(cat "$work/self.err")"
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work/self.json" "$sport" <<'PY' || fail "the watcher traced its own metrics endpoint"
import sys
from json_docs import by_vantage
docs, port = by_vantage(sys.argv[1]), sys.argv[2]
served = [r for r in docs.get("server", {}).get("requests", []) if r["connection"]["server"].endswith(":" + port)]
seen_by_curl = [r for r in docs.get("client", {}).get("requests", []) if r["connection"]["server"].endswith(":" + port)]
assert not served and len(seen_by_curl) == 3, (len(served), len(seen_by_curl))
PY
echo "watch --metrics: a real Prometheus scrapes the GenAI histograms; its quantiles agree with tokentap's report; the watcher's own endpoint is not traced"
