#!/usr/bin/env bash
# watch --pid on a process that forks short-lived TLS clients (issue 14: a
# watcher that runs for days on a forking server): the uprobe links each
# child gets are let go when that child exits, not held until watch ends.
# A bash shell, traced with `watch --pid`, runs 15 curl processes one after
# another against `tokentap serve --tls` (each a forked subshell that waits
# 1 s, past its attach and any detach that attach waits for, then execs
# curl: about one a second), then, once the links are back down, one more.
#  1. each curl's request whole at the client_tls vantage (200, 8 tokens):
#     attaching process by process still works, before and after releases;
#  2. the bpf links watch holds (its descriptors whose fdinfo has a
#     link_type line) come back to what they were before the loop, within
#     20 s of the last curl's exit (a few seconds here: each uprobe link
#     takes the kernel ~0.1 s to take down), and not below it: the shell,
#     still alive, keeps its own.
set -eu
. "$(dirname "$0")/lib.sh"
need_root "eBPF uprobes"
need_curl_openssl
work_dir
need_bpf "$work"
self_signed_cert "$work"
start_serve "$work" --profile vllm --tls "$work/c.pem" "$work/k.pem" --ttft-ms 5 --itl-ms 2
mkfifo "$work/go" "$work/again" "$work/end" "$work/never"

# links_of PID: how many bpf links PID holds (one descriptor each)
links_of() { grep -l '^link_type:' /proc/"$1"/fdinfo/* 2>/dev/null | wc -l; }

# The shell forks nothing but the curls: it waits on FIFOs with the read
# builtin, and each subshell waits with read -t before its exec.
W="$work" PORT="$SERVE_PORT" bash -c '
one() {
    (read -t 1 <> "$W/never"; exec curl -sS -N -k --max-time 10 -H "content-type: application/json" \
        -H "x-request-id: churn-$1" \
        -d "{\"model\":\"m\",\"stream\":true,\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}" \
        "https://127.0.0.1:$PORT/v1/chat/completions" > "$W/out-$1") || exit 1
}
read -r _ < "$W/go"
for ((i = 1; i <= 15; i++)); do one $i; done
: > "$W/looped"
read -r _ < "$W/again"
one 16
: > "$W/again-done"
read -r _ < "$W/end"' 2> "$work/sh.err" &
shpid=$!
"$TT" watch --pid "$shpid" > /dev/null 2> "$work/w.err" &
wpid=$!
wait_tracing "$work/w.err"
before=$(links_of $wpid)
[ "$before" -gt 0 ] || fail "no bpf link found in /proc/$wpid/fdinfo"

# 1. fifteen curls; the links they add counted on the way
echo go > "$work/go"
peak=$before
for _ in $(seq 600); do
    [ -e "$work/looped" ] && break
    kill -0 $shpid 2>/dev/null || fail "the shell ended: $(cat "$work/sh.err")"
    n=$(links_of $wpid); [ "$n" -gt "$peak" ] && peak=$n
    sleep 0.1
done
[ -e "$work/looped" ] || fail "the 15 curls did not end within 60 s"
t0=$(date +%s%N)

# 2. back to the links held before, within 20 s
now=$(links_of $wpid)
at_end=$now
while [ "$now" -gt "$before" ] && [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 20000 ]; do
    sleep 0.1
    now=$(links_of $wpid)
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$now" = "$before" ] || fail "watch holds $now bpf links $ms ms after the last curl exited, $before before the" \
    "loop ($peak at most during it, $at_end at its end)"

# 1 again: the shell still followed, its next child attached and whole
echo again > "$work/again"
for _ in $(seq 100); do [ -e "$work/again-done" ] && break; sleep 0.1; done
[ -e "$work/again-done" ] || fail "the 16th curl did not end: $(cat "$work/sh.err")"
sleep 0.3
echo end > "$work/end"
wait $shpid || fail "the shell's curls failed: $(cat "$work/sh.err")"
held=$(links_of $wpid)
t1=$(date +%s%N)
kill -INT $wpid; wait $wpid || fail "watch --pid exit $?: $(cat "$work/w.err")"
exit_ms=$(( ($(date +%s%N) - t1) / 1000000 ))
whole=$(grep -c "^client_tls .* status=200 tokens=8 ttft=[0-9.]*ms e2el=" "$work/w.err" || true)
[ "$whole" = 16 ] || fail "$whole of 16 curl requests whole at the client_tls vantage: $(cat "$work/w.err")"
echo "tls churn: 16/16 curl requests whole at client_tls; bpf links held by watch: $before before, $peak at" \
    "most during 15 curls, $at_end at the last one's exit, $before again $ms ms later; $held at the end," \
    "watch ended $exit_ms ms after SIGINT"
