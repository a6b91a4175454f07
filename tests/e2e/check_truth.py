#!/usr/bin/python3
"""Compare `tokentap analyze --json` with the instants the fixture writer
chose (ttpcapgen --truth): ground truth tokentap did not compute.
usage: check_truth.py REPORT.json TRUTH.jsonl [--usage-tokens]"""
import json
import sys

rep = json.load(open(sys.argv[1]))
truth = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
reqs = {r["request_id"]: r for r in rep["requests"]}
errors = []
if len(rep["requests"]) != len(truth):
    errors.append(f"{len(rep['requests'])} requests reported, {len(truth)} generated")
for t in truth:
    r = reqs.get(t["request_id"])
    if r is None:
        errors.append(f"{t['request_id']}: missing")
        continue
    w = r["vantages"]["wire"]
    if not r["complete"]:
        errors.append(f"{t['request_id']}: not complete ({r['incomplete_reasons']})")
        continue
    tok = t["token_ns"]
    want = {
        "req_first_mono_ns": t["req_first_ns"],
        "first_token_mono_ns": tok[0],
        "last_token_mono_ns": tok[-1],
        "ttft_ns": tok[0] - t["req_first_ns"],
        "e2el_ns": tok[-1] - t["req_first_ns"],
        "token_events": len(tok),
        "itl_ns": [b - a for a, b in zip(tok, tok[1:])],
    }
    for k, v in want.items():
        if w[k] != v:
            errors.append(f"{t['request_id']}: {k} = {w[k]!r:.200}, truth {v!r:.200}")
    if w["e2el_ns"] - w["ttft_ns"] != sum(w["itl_ns"]):
        errors.append(f"{t['request_id']}: E2EL - TTFT != sum(ITL)")
    if "tokens" in t and w["usage_completion_tokens"] not in (None, t["tokens"]):
        errors.append(f"{t['request_id']}: usage {w['usage_completion_tokens']} != {t['tokens']}")
    if not r["terminal_seen"]:
        errors.append(f"{t['request_id']}: no terminal event seen")
if errors:
    print("\n".join(errors[:20]))
    sys.exit(1)
print(f"truth: {len(truth)} requests, {sum(len(t['token_ns']) for t in truth)} token instants match exactly")
