#!/usr/bin/env bash
# Receives and stamped sends are taken at the socket layer's hooks
# (sock:sock_recv_length, sock:sock_send_length; bpf/socktap_sock.bpf.h)
# where the kernel has them, which every other watch test then runs
# through; TOKENTAP_NO_SOCK_HOOKS=1 keeps the syscall exits, and
# test_watch.sh (every token write seen at the server vantage, each
# syscall's instant against serve's log) and test_watch_iovec.sh (readv,
# recvmsg and writev bounds, ready instants) pass that way too. watch says
# which it uses.
set -eu
. "$(dirname "$0")/lib.sh"
work_dir
need_bpf "$work"
TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name --duration 0.2 -q > /dev/null 2> "$work/default.err" || true
grep -q 'tracing' "$work/default.err" || fail "watch did not start: $(cat "$work/default.err")"
TOKENTAP_NO_SOCK_HOOKS=1 TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name --duration 0.2 -q > /dev/null 2> "$work/exits.err" || true
grep -q 'tracing.*(data at syscall exits)' "$work/exits.err" \
    || fail "TOKENTAP_NO_SOCK_HOOKS=1: watch does not say it takes data at syscall exits: $(head -1 "$work/exits.err")"
if grep -q '(data at syscall exits)' "$work/default.err"; then
    command -v bpftool > /dev/null || skip "bpftool not installed: cannot tell whether this kernel has the socket hooks"
    if bpftool btf dump file /sys/kernel/btf/vmlinux format raw | grep -q "'btf_trace_sock_recv_length'"; then
        fail "this kernel has sock:sock_recv_length, yet watch takes data at syscall exits: $(head -1 "$work/default.err")"
    fi
    skip "this kernel has no sock:sock_recv_length/sock_send_length, so watch takes data at syscall exits by default"
fi
here=$(dirname "$0")
TOKENTAP_NO_SOCK_HOOKS=1 bash "$here/test_watch.sh" || fail "test_watch.sh failed with data at syscall exits"
TOKENTAP_NO_SOCK_HOOKS=1 bash "$here/test_watch_iovec.sh" || fail "test_watch_iovec.sh failed with data at syscall exits"
echo "PASS: test_watch_sock_hooks (socket hooks by default; test_watch and test_watch_iovec at syscall exits)"
