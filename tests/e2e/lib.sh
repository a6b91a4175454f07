# Shared helpers for the end-to-end scripts; sourced, run from the repo root.
BUILD=${BUILD:-build}
TT="$BUILD/tokentap"
GEN="$BUILD/tools/ttpcapgen"
skip() { echo "SKIP: $*"; exit 77; }
need_root() { [ "$(id -u)" = 0 ] || skip "$1"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# pcapgen SEED PATH ARGS...: a capture from ttpcapgen at PATH, or fail
pcapgen() {
    local seed=$1 path=$2
    shift 2
    "$GEN" -o "$path" --seed "$seed" "$@" > /dev/null || fail "ttpcapgen $(basename "$path")"
}

# wait_listening OUTFILE: wait for `tokentap serve`'s "listening on HOST:PORT"
# line in OUTFILE and print the port (nothing after 10 s: a loaded machine
# under the sanitizer build once took longer than 5).
wait_listening() {
    for _ in $(seq 100); do grep -q '^listening on ' "$1" 2>/dev/null && break; sleep 0.1; done
    sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$1"
}

# start_capture PCAP FILTER: capture on lo with build/tools/ttcapture in the
# background (pid in CAPTURE_PID), returning once it is capturing.
start_capture() {
    "$BUILD/tools/ttcapture" -i lo -f "$2" -w "$1" -d 30 > "$1.out" 2> "$1.err" &
    CAPTURE_PID=$!
    for _ in $(seq 50); do grep -q ready "$1.out" 2>/dev/null && break; sleep 0.1; done
    sleep 0.2
}

# stop_capture PCAP: stop the capture started by start_capture; fail when
# the kernel dropped packets (the capture itself would be wrong, not tokentap).
stop_capture() {
    sleep 0.3
    kill -INT "$CAPTURE_PID" 2>/dev/null || true
    wait "$CAPTURE_PID" 2>/dev/null || true
    grep -q ' 0 dropped by the kernel' "$1.err" || fail "the capture itself lost packets: $(cat "$1.err")"
}

# capture_during DIR PORT CMD...: a loopback capture of PORT (DIR/wire.pcap)
# around CMD, then `analyze --json` of it into DIR/wire.json.
capture_during() {
    local dir=$1 port=$2
    shift 2
    start_capture "$dir/wire.pcap" "tcp port $port"
    "$@"
    stop_capture "$dir/wire.pcap"
    "$TT" analyze --json "$dir/wire.pcap" > "$dir/wire.json" || fail "analyze wire.pcap exit $?"
}

# stop_serve: stop the serve start_serve started; fail unless it exits 0.
stop_serve() {
    kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || fail "serve exit $?"
}

# work_dir: a fresh temporary directory in $work; at exit every background
# job of the test is stopped and the directory removed (kept with KEEP=1).
work_dir() {
    work=$(mktemp -d)
    trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
}

# need_curl_openssl: skip unless curl (built with OpenSSL) and openssl are here.
need_curl_openssl() {
    command -v curl >/dev/null || skip "curl not installed"
    command -v openssl >/dev/null || skip "openssl not installed"
    curl -V | head -1 | grep -q OpenSSL || skip "curl is not built with OpenSSL"
}

# bpf_loads DIR: true when the eBPF programs load here, found by a short
# `tokentap watch` of nothing (no TLS: detaching uprobes from every libssl
# in use takes many seconds); DIR/probe.err keeps its stderr. As root on a
# kernel with BTF the programs must load (a verifier rejection is a bug,
# not a missing feature), so there it fails the test instead, unless
# TOKENTAP_TEST_BPF_OPTIONAL=1 (a container without the capabilities, say).
bpf_loads() {
    local rc=0
    TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name --duration 0.2 -q > /dev/null 2> "$1/probe.err" || rc=$?
    [ $rc = 0 ] || [ $rc = 4 ] && return 0
    bpf_must_load && fail "the eBPF programs do not load as root on a kernel with BTF: $(head -1 "$1/probe.err")"
    return 1
}

# bpf_must_load: true where a failure to load the eBPF programs is a bug.
bpf_must_load() {
    [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] && [ -z "${TOKENTAP_TEST_BPF_OPTIONAL:-}" ]
}

# need_bpf DIR: skip (exit 77) when the eBPF programs cannot load here.
need_bpf() {
    bpf_loads "$1" || skip "BPF cannot load here: $(head -1 "$1/probe.err")"
}

# record_during DIR PORT CMD...: `tokentap record -o DIR/dir --port PORT`
# (5 s) around CMD, then `analyze --json` of its server, client and wire
# pcaps into DIR/server.json, DIR/client.json and DIR/wire.json.
record_during() {
    local dir=$1 port=$2 rpid
    shift 2
    "$TT" record -o "$dir/dir" --port "$port" --duration 5 2> "$dir/record.err" &
    rpid=$!
    for _ in $(seq 50); do grep -q '^tokentap record: recording' "$dir/record.err" 2>/dev/null && break; sleep 0.1; done
    grep -q '^tokentap record: recording' "$dir/record.err" || fail "record did not start: $(cat "$dir/record.err")"
    sleep 0.2
    "$@"
    wait $rpid || fail "record exit $?: $(cat "$dir/record.err")"
    for v in server client wire; do
        "$TT" analyze --json "$dir/dir/$v.pcap" > "$dir/$v.json" || fail "analyze $v.pcap exit $?"
    done
}

# start_serve DIR ARGS...: `tokentap serve` on a free loopback port with its
# log in DIR/serve.log and the extra ARGS; sets SERVE_PID and SERVE_PORT.
start_serve() {
    local dir=$1; shift
    # a serve.out left by an earlier serve would be read before this one's
    # shell truncates it: gone first, wait_listening sees only the new one
    rm -f "$dir/serve.out"
    "$TT" serve --listen 127.0.0.1:0 --log "$dir/serve.log" "$@" > "$dir/serve.out" 2> "$dir/serve.err" &
    SERVE_PID=$!
    SERVE_PORT=$(wait_listening "$dir/serve.out")
    [ -n "$SERVE_PORT" ] || fail "serve did not start: stderr '$(cat "$dir/serve.err")', stdout '$(cat "$dir/serve.out")'"
}

# npm_cmd: print how to run npm here (Debian's npm, or the one a NodeSource
# node bundles under /usr/lib/node_modules); nothing when there is none.
npm_cmd() {
    if command -v npm >/dev/null; then echo npm
    elif [ -r /usr/lib/node_modules/npm/bin/npm-cli.js ] && command -v node >/dev/null; then
        echo "node /usr/lib/node_modules/npm/bin/npm-cli.js"
    fi
}

# ready_instants: true when eBPF loads here and the kernel gives ready
# instants (sock:sk_data_ready), as watch's summary line says.
ready_instants() {
    [ "$(id -u)" = 0 ] || return 1
    TOKENTAP_NO_TLS=1 "$TT" watch --comm tt-no-such-name --duration 0.2 -q 2>&1 >/dev/null | grep -q ' ready instants ('
}

# wait_tracing ERRFILE: wait (5 s at most) for watch's "tracing" line in
# ERRFILE, its stderr; fail with what it said when it does not come.
wait_tracing() {
    for _ in $(seq 50); do grep -q '^tokentap watch: tracing' "$1" 2>/dev/null && return 0; sleep 0.1; done
    fail "watch did not start: $(cat "$1")"
}

# wait_tracing_or_skip ERRFILE PID: as wait_tracing, for a watch (PID)
# started without need_bpf: its exit 3 (BPF cannot load here) is a skip,
# any other exit a failure.
wait_tracing_or_skip() {
    for _ in $(seq 100); do
        grep -q '^tokentap watch: tracing' "$1" && return 0
        if ! kill -0 "$2" 2>/dev/null; then
            local rc=0; wait "$2" || rc=$?
            [ $rc = 3 ] && ! bpf_must_load && skip "BPF cannot load here: $(head -1 "$1")"
            fail "watch exit $rc: $(cat "$1")"
        fi
        sleep 0.1
    done
    fail "watch did not start: $(cat "$1")"
}

# netns_pair NS VETH_HOST VETH_NS SUBNET: network namespace NS joined to
# this one by a veth pair, SUBNET.1/24 here on VETH_HOST and SUBNET.2/24
# in NS on VETH_NS, every link up (NS's loopback too); skips when the
# kernel will not make them. netns_pair_del NS VETH_HOST removes both
# (for the caller's exit trap; quiet when they are gone).
netns_pair() {
    local ns=$1 va=$2 vb=$3 net=$4
    ip netns add "$ns" || skip "cannot make a network namespace"
    ip link add "$va" type veth peer name "$vb" || skip "cannot make a veth pair"
    ip link set "$vb" netns "$ns"
    ip addr add "$net.1/24" dev "$va"; ip link set "$va" up
    ip netns exec "$ns" ip addr add "$net.2/24" dev "$vb"
    ip netns exec "$ns" ip link set "$vb" up
    ip netns exec "$ns" ip link set lo up
}
netns_pair_del() {
    ip netns del "$1" 2>/dev/null || true
    ip link del "$2" 2>/dev/null || true
}

# self_signed_cert DIR: DIR/c.pem and DIR/k.pem, a certificate and key for
# localhost valid one day (fails the test when openssl cannot make them).
self_signed_cert() {
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1/k.pem" -out "$1/c.pem" -days 1 -subj /CN=localhost \
        > /dev/null 2>&1 || fail "openssl could not make a certificate"
}

# wait_tls_attached ERRFILE PID: wait (5 s at most) for watch's line saying
# a TLS library was attached in PID (a program started after watch).
wait_tls_attached() {
    for _ in $(seq 100); do grep -q "TLS library attached (pid $2)" "$1" 2>/dev/null && return 0; sleep 0.05; done
}

# expect_whole VANTAGE ERRFILE WHAT: watch's live line of a whole request
# (200, 8 tokens) at VANTAGE in ERRFILE, else fail naming WHAT.
expect_whole() {
    grep -q "^$1 .* status=200 tokens=8 ttft=[0-9.]*ms e2el=" "$2" || fail "$3's TLS request not whole: $(cat "$2")"
}
