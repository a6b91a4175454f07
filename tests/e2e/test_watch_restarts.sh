#!/usr/bin/env bash
# Processes come and go (issue 14): `watch --comm NAME` and `watch --cgroup
# DIR`, started once, follow a server that is restarted twice: three
# processes, three pids, three ports, the third over TLS (its uprobes
# attached when it starts). The server is `tokentap serve` run from a copy
# named ttsrv (so that its comm is that), each time moved into a cgroup v2
# directory first. Every request made to every incarnation (2 each,
# x-request-id) is at the server vantage of both watchers with all its
# tokens (the third's at server_tls), and nothing else is (the clients
# are curl, neither named ttsrv nor in the cgroup). Skipped when no cgroup2 mount can take a directory.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF tracing and cgroups need root"
command -v curl >/dev/null || skip "curl not installed"
work=$(mktemp -d)
cgroot=$(findmnt -n -t cgroup2 -o TARGET | head -1)
cg=${cgroot:+$cgroot/tt-restart-$$}
cleanup() {
    kill $(jobs -p) 2>/dev/null || true
    wait 2>/dev/null || true
    [ -z "$cg" ] || rmdir "$cg" 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
need_bpf "$work"
[ -n "$cg" ] && mkdir "$cg" 2>/dev/null || skip "no cgroup v2 directory can be made here"
cp "$TT" "$work/ttsrv"
self_signed_cert "$work"

"$TT" watch --comm ttsrv --json -o "$work/comm.json" > /dev/null 2> "$work/comm.err" &
wcomm=$!
"$TT" watch --cgroup "$cg" --json -o "$work/cgroup.json" > /dev/null 2> "$work/cgroup.err" &
wcg=$!
for f in comm cgroup; do wait_tracing "$work/$f.err"; done

body='{"model":"m","stream":true,"max_tokens":6,"messages":[{"role":"user","content":"x"}]}'
for k in 1 2 3; do
    tls=() scheme=http
    [ $k = 3 ] && tls=(--tls "$work/c.pem" "$work/k.pem") scheme=https
    bash -c 'cg=$1; shift; echo $$ > "$cg/cgroup.procs" && exec "$@"' _ "$cg" \
        "$work/ttsrv" serve --listen 127.0.0.1:0 --profile vllm --ttft-ms 5 --itl-ms 1 --tokens 6 "${tls[@]}" \
        > "$work/serve$k.out" 2> "$work/serve$k.err" &
    spid=$!
    port=$(wait_listening "$work/serve$k.out")
    [ -n "$port" ] || fail "serve $k did not start: $(cat "$work/serve$k.err")"
    echo "$spid $port" >> "$work/incarnations"
    if [ $k = 3 ]; then
        for f in comm cgroup; do
            wait_tls_attached "$work/$f.err" $spid || fail "watch --$f attached no TLS library to pid $spid: $(cat "$work/$f.err")"
        done
    fi
    for i in 1 2; do
        curl -ksN -o /dev/null -H 'content-type: application/json' -H "x-request-id: rs-$k-$i" -d "$body" \
            "$scheme://127.0.0.1:$port/v1/chat/completions" || fail "curl to serve $k"
    done
    kill -TERM $spid; wait $spid 2>/dev/null || true
done
sleep 0.3
kill -INT $wcomm $wcg
wait $wcomm || fail "watch --comm: exit $?: $(cat "$work/comm.err")"
wait $wcg || fail "watch --cgroup: exit $?: $(cat "$work/cgroup.err")"
PYTHONPATH="$(dirname "$0")" /usr/bin/python3 - "$work" <<'PY'
import sys
from json_docs import by_vantage
work = sys.argv[1]
incarnations = [line.split() for line in open(f"{work}/incarnations")]
assert len({pid for pid, _ in incarnations}) == 3, incarnations
want = {f"rs-{k}-{i}": port for k, (_, port) in enumerate(incarnations, 1) for i in (1, 2)}
for name in ("comm", "cgroup"):
    docs = by_vantage(f"{work}/{name}.json")
    assert "client" not in docs or not docs["client"]["requests"], (name, "curl traced")
    for vantage, ids in (("server", [r for r in want if not r.startswith("rs-3")]),
                         ("server_tls", [r for r in want if r.startswith("rs-3")])):
        got = {r["request_id"]: r for r in docs[vantage]["requests"]}
        assert set(got) == set(ids), (name, vantage, sorted(got), ids)
        for rid in ids:
            r = got[rid]
            assert r["connection"]["server"].endswith(":" + want[rid]), (name, rid, r["connection"])
            assert r["complete"] and r["vantages"][vantage]["token_events"] == 6, (name, rid, r["incomplete_reasons"])
print("restarts: --comm and --cgroup each followed 3 incarnations of the server (3 pids, 3 ports, the last over "
      "TLS), 6/6 requests with 6/6 tokens each at the server vantage (the TLS ones at server_tls), no client traced")
PY
