"""Token instants tokentap reported, against `tokentap serve --log`: the
instants serve wrote each token (ground truth tokentap did not compute).
For the truth tests' inline checks (PYTHONPATH=tests/e2e)."""
import json
import statistics
import sys


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def load_log(path, clock_kind):
    """serve's request lines, write lines, and what to add to a write's
    mono_ns to put it on the report's clock ("wall" for a capture's
    instants, "mono" for the syscall vantages')."""
    lines = [json.loads(l) for l in open(path)]
    clock = lines[0]
    if clock["type"] != "clock":
        fail(f"{path}: the first line is not the clock line")
    shift = clock["realtime_ns"] - clock["mono_ns"] if clock_kind == "wall" else 0
    return ([l for l in lines if l["type"] == "request"], [l for l in lines if l["type"] == "write"], shift)


def token_writes(writes, shift, match):
    """The instants of the writes match() accepts that carry a token."""
    return [w["mono_ns"] + shift for w in writes if match(w) and any(k == "token" for _, k in w["events"])]


def token_instants(vantage):
    """A vantage block's token instants: the first token's, then each ITL on."""
    seen = [vantage["first_token_mono_ns"]]
    for gap in vantage["itl_ns"] or []:
        seen.append(seen[-1] + gap)
    return seen


def judge(label, diffs, early_us, median_us):
    """Print the instants' differences (tokentap minus serve) and fail when
    one is more than early_us early or their median is outside
    [-early_us, median_us)."""
    med = statistics.median(diffs)
    print(f"{label}, {len(diffs)} token instants; minus serve's write median {med / 1e3:.1f} us, "
          f"min {min(diffs) / 1e3:.1f} us, max {max(diffs) / 1e3:.1f} us")
    if min(diffs) < -early_us * 1000:
        fail(f"{label}: a token seen more than {early_us} us before serve wrote it")
    if not -early_us * 1000 <= med < median_us * 1000:
        fail(f"{label}: median {med} ns not within {median_us} us")
