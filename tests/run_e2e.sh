#!/usr/bin/env bash
# Run every tests/e2e/test_*.sh (exit 0 pass, 77 skip, else fail).
set -u
cd "$(dirname "$0")/.."
pass=0; fail=0; skipped=0; failed=()
for t in tests/e2e/test_*.sh; do
    out=$(BUILD=${BUILD:-build} bash "$t" 2>&1); rc=$?
    case $rc in
        0) pass=$((pass+1)); echo "ok   $t${out:+: $(echo "$out" | tail -1)}" ;;
        77) skipped=$((skipped+1)); echo "skip $t: $(echo "$out" | tail -1)" ;;
        *) fail=$((fail+1)); failed+=("$t"); echo "FAIL $t"; echo "$out" | tail -40 | sed 's/^/    /' ;;
    esac
done
echo "e2e: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
