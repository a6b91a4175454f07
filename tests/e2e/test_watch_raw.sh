#!/usr/bin/env bash
# The opt-in raw syscall tracepoints (TOKENTAP_BPF_RAW=1: the data syscalls
# through tp_btf sys_enter/sys_exit, bpf/README.md) give what the classic
# tracepoints give: test_watch.sh (every token write seen at the server
# vantage, each syscall's instant against serve's log) and
# test_watch_iovec.sh (the iovec walk's bounds) pass with them, and watch
# says it uses them.
set -eu
. "$(dirname "$0")/lib.sh"
work_dir
need_bpf "$work"
TOKENTAP_BPF_RAW=1 TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name --duration 0.2 -q > /dev/null 2> "$work/probe.err" || true
if ! grep -q 'data syscalls on raw tracepoints' "$work/probe.err"; then
    grep -q 'tracing' "$work/probe.err" || fail "watch did not start: $(cat "$work/probe.err")"
    skip "this kernel has no tp_btf sys_enter/sys_exit, so TOKENTAP_BPF_RAW falls back to the classic tracepoints"
fi
here=$(dirname "$0")
TOKENTAP_BPF_RAW=1 bash "$here/test_watch.sh" || fail "test_watch.sh failed on raw tracepoints"
TOKENTAP_BPF_RAW=1 bash "$here/test_watch_iovec.sh" || fail "test_watch_iovec.sh failed on raw tracepoints"
echo "PASS: test_watch_raw (test_watch and test_watch_iovec on raw syscall tracepoints)"
