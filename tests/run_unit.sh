#!/usr/bin/env bash
# Run each unit-test binary given; print one summary line in the form CI reads.
set -u
pass=0; fail=0; failed=()
for t in "$@"; do
    if "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed+=("$t"); fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ] || { printf 'failed: %s\n' "${failed[@]}"; exit 1; }
