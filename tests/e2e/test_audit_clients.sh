#!/usr/bin/env bash
# tokentap audit of two benchmarks written the way users write them
# (docs/framing.md, "What tokentap audit says of the test clients"); the
# verdicts must match what their code does:
#  1. tests/e2e/curl_bench.sh: TTFT := curl's time_starttransfer (the
#     response headers), tokens counted from the body, no ITLs: every run
#     mis-measured, TTFT short by about serve's TTFT, the cause "before any
#     event arrived", near the response headers; tokens exact.
#  2. tests/e2e/openai_node_bench.js (openai npm v4, skipped without npm or
#     the registry): TTFT at the first chunk whatever it carries, a gap for
#     every later chunk, tokens from usage: under vllm the role chunk and the
#     usage-only frame each add an ITL sample (role-only-first-chunk,
#     usage-empty-choices), under tabby the finish chunk without text
#     (finish-without-text); tokens exact.
set -eu
. "$(dirname "$0")/lib.sh"
[ -r "$BUILD/libtokentap-probe.so" ] || fail "$BUILD/libtokentap-probe.so not built"
work=$(mktemp -d); trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
command -v curl >/dev/null || skip "curl not installed"
py=/usr/bin/python3

# 1.
rc=0
timeout 300 "$TT" audit -q --json -o "$work/curl.json" --profiles vllm,tabby --concurrency 1,4 --requests 6 \
    --no-server-vantage -- bash tests/e2e/curl_bench.sh {url} {concurrency} {requests} {result} {request_id_prefix} \
    2> "$work/curl.err" || rc=$?
[ $rc = 1 ] || fail "curl audit: exit $rc, want 1: $(cat "$work/curl.err")"
$py - "$work/curl.json" <<'PY' || fail "curl card"
import json, sys
card = json.load(open(sys.argv[1]))
assert card["verdict"] == "mis-measured"
for c in card["cells"]:
    n = c["requests_asked"]
    assert c["result_format"] == "llmperf" and c["records_matched"] == n and c["reported_ok"] == n, c
    assert c["tokens_reported"] == c["tokens_true"] == 16 * n, c
    assert c["itl_samples_reported"] is None, c  # llmperf's file keeps no per-gap samples
    err = c["errors"]["ttft_ns"]["median"]
    # serve's TTFT is 20 ms after it reads the request: curl, stamping the headers, is short by about
    # that (its own start-up eats some; a sanitizer build of serve adds a little to the truth)
    assert -30e6 < err < -10e6, err
    k = [k for k in c["causes"] if k["symptom"].startswith("TTFT taken before any event arrived")]
    assert k and k[0]["requests"] == n and k[0]["finding"] is None, c["causes"]
    near = int(k[0]["symptom"].split(" in ")[-1].split(" of")[0])
    assert near >= 1, k  # stamps sit at the response headers (curl's start-up before its send moves some off)
    assert not any(k["finding"] == "role-only-first-chunk" for k in c["causes"]), c["causes"]
print("curl: %d runs mis-measured, TTFT error median %s ms: stamped before any event, at the headers"
      % (len(card["cells"]), "/".join("%+.1f" % (c["errors"]["ttft_ns"]["median"] / 1e6) for c in card["cells"])))
PY

# 2.
command -v node >/dev/null || skip "node not installed (curl audited)"
npm=$(npm_cmd); [ -n "$npm" ] || skip "npm not installed (curl audited)"
(cd "$work" && timeout 180 $npm install --no-audit --no-fund --silent --prefer-offline openai@4 > npm.log 2>&1) \
    || skip "npm cannot install openai here (curl audited): $(tail -1 "$work/npm.log")"
rc=0
NODE_PATH="$work/node_modules" timeout 300 "$TT" audit -q --json -o "$work/node.json" --profiles vllm,tabby \
    --concurrency 1 --requests 6 --no-server-vantage -- \
    node tests/e2e/openai_node_bench.js {url} {concurrency} {requests} {result} {request_id_prefix} 2> "$work/node.err" || rc=$?
[ $rc = 1 ] || fail "node audit: exit $rc, want 1: $(cat "$work/node.err")"
$py - "$work/node.json" <<'PY' || fail "node card"
import json, sys
card = json.load(open(sys.argv[1]))
by = {c["profile"]: c for c in card["cells"]}
def findings(c): return {k["finding"]: k for k in c["causes"] if k["finding"]}
for p, extra, want in (("vllm", 2, {"role-only-first-chunk", "usage-empty-choices"}), ("tabby", 1, {"finish-without-text"})):
    c = by[p]
    n = c["requests_asked"]
    assert c["result_format"] == "vllm" and c["records_matched"] == n and c["reported_ok"] == n, c
    assert c["tokens_reported"] == c["tokens_true"], c  # from usage: right
    assert c["itl_samples_reported"] == c["itl_samples_true"] + extra * n, c
    f = findings(c)
    assert want <= set(f), (p, c["causes"])
    for w in want:
        # the count is exact; which requests show the sliver evidence depends on the node's reads
        assert f[w]["requests"] >= n // 2 and "one ITL sample too many" in f[w]["symptom"], f[w]
    assert "one output token too many" not in " ".join(k["symptom"] for k in c["causes"]), c["causes"]
print("openai-node: vllm +2 ITL samples per request (role chunk, usage frame), tabby +1 (finish chunk); tokens exact")
PY
echo "audit of real clients: curl stamps the headers; openai-node's naive loop times chunks without tokens"
