#!/usr/bin/env bash
# ttpcapgen --http2 writes the same streams as h2c with prior knowledge: for
# each case the HTTP/1.1 capture and the HTTP/2 capture of the same seed,
# each analyzed with `tokentap analyze --json` and checked against the
# instants ttpcapgen chose (--truth, not computed by tokentap): the request
# count, each request complete with its terminal event, its token events,
# TTFT and E2EL within 1 us of the truth; the two captures' truths are the
# same file with one stream per connection; with --streams-per-conn N the
# requests share connections N at a time as stream ids 1, 3, 5 ...
set -eu
. "$(dirname "$0")/lib.sh"
[ -x "$GEN" ] || fail "$GEN not built"
work_dir

# run_case NAME PER_CONN ARGS...: both captures of ARGS, HTTP/2 with PER_CONN streams per connection
run_case() {
    local name=$1 per=$2; shift 2
    "$GEN" -o "$work/$name-h1.pcap" --truth "$work/$name-h1.truth" "$@" > /dev/null || fail "$name: ttpcapgen"
    "$GEN" -o "$work/$name-h2.pcap" --truth "$work/$name-h2.truth" --http2 --streams-per-conn "$per" "$@" \
        > /dev/null || fail "$name: ttpcapgen --http2"
    if [ "$per" = 1 ]; then
        cmp -s "$work/$name-h1.truth" "$work/$name-h2.truth" || fail "$name: --http2 chose other instants"
    fi
    for v in h1 h2; do
        "$TT" analyze --json "$work/$name-$v.pcap" > "$work/$name-$v.json" || fail "$name-$v: analyze exit $?"
        /usr/bin/python3 - "$work/$name-$v.json" "$work/$name-$v.truth" "$v" "$per" <<'PY' || fail "$name-$v"
import json, sys
rep_path, truth_path, version, per = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rep = json.load(open(rep_path))
truth = [json.loads(l) for l in open(truth_path) if l.strip()]
errors = []
if len(rep["requests"]) != len(truth):
    errors.append(f"{len(rep['requests'])} requests reported, {len(truth)} generated")
reqs = {r["request_id"]: r for r in rep["requests"]}
for t in truth:
    r = reqs.get(t["request_id"])
    if r is None:
        errors.append(f"{t['request_id']}: missing")
        continue
    if not r["complete"] or not r["terminal_seen"] or r["status"] != 200:
        errors.append(f"{t['request_id']}: complete {r['complete']} {r['incomplete_reasons']} "
                      f"terminal {r['terminal_seen']} status {r['status']}")
        continue
    w = r["vantages"]["wire"]
    tok = t["token_ns"]
    if w["token_events"] != len(tok):
        errors.append(f"{t['request_id']}: {w['token_events']} token events, truth {len(tok)}")
    for k, v in (("ttft_ns", tok[0] - t["req_first_ns"]), ("e2el_ns", tok[-1] - t["req_first_ns"])):
        if w[k] is None or abs(w[k] - v) > 1000:
            errors.append(f"{t['request_id']}: {k} {w[k]}, truth {v}")
# connections: one request each over HTTP/1.1; over HTTP/2 `per` streams, ids 1, 3, 5 ...
conns = {}
for r in rep["requests"]:
    conns.setdefault(r["connection"]["client"], []).append(r["connection"].get("stream_id"))
want_per = per if version == "h2" else 1
for c, ids in conns.items():
    n = len(ids)
    if n > want_per or (n < want_per and len(truth) % want_per == 0):
        errors.append(f"{c}: {n} requests on the connection, want {want_per}")
    if version == "h2" and sorted(ids) != list(range(1, 2 * n, 2)):
        errors.append(f"{c}: stream ids {sorted(ids)}")
if errors:
    print("\n".join(errors[:20]))
    sys.exit(1)
print(f"{version}: {len(truth)} requests on {len(conns)} connections, "
      f"{sum(len(t['token_ns']) for t in truth)} token events match the truth")
PY
    done
}

for d in openai-chat anthropic tgi ollama; do
    run_case "$d" 1 --dialect "$d" --streams 6 --tokens 20 --concurrency 3 --seed 7
done
run_case responses-mux 3 --dialect responses --streams 9 --tokens 15 --concurrency 6 --seed 4
run_case micro-ipv6 2 --streams 8 --tokens 12 --concurrency 4 --seed 9 --micro --ipv6
run_case many-mux 8 --streams 200 --tokens 40 --concurrency 32 --seed 11
# a large event: TGI's last frame repeats the whole text, past one DATA frame (16384 bytes)
run_case long-tgi 1 --dialect tgi --streams 2 --tokens 4000 --itl-us 100 --seed 5
"$GEN" -o "$work/bad.pcap" --streams-per-conn 2 > /dev/null 2> "$work/bad.err" && fail "--streams-per-conn without --http2 accepted"
grep -q 'needs --http2' "$work/bad.err" || fail "no clear error: $(cat "$work/bad.err")"
echo "PASS: test_pcapgen_http2"
