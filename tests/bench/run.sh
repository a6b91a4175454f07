#!/usr/bin/env bash
# make bench: these sections, all written into docs/performance.md:
# 1. tokentap analyze throughput on a generated capture of at least
#    1,000,000 token events, beside `cat FILE > /dev/null` and
#    `tshark -r FILE -Y http` on the same file in the same run. Medians of
#    BENCH_RUNS runs (default 5). Then the same streams as HTTP/2 (h2c,
#    ttpcapgen --http2: one stream per connection, and 8 per connection),
#    their rates beside the HTTP/1.1 one (issue 15: at least half of it).
#    Then rounds of --jobs 1, --jobs 2 and two --jobs 1 at once (the
#    machine's ceiling), and the heap of the text report of a
#    4,000,000-event capture with events released and kept (tests/bench/heap.sh).
# 2. tokentap serve under build/tools/ttload: 1000 keep-alive connections
#    with zero delays (events/s, medians of BENCH_SERVE_RUNS runs, default 3)
#    with --workers BENCH_SERVE_WORKERS (default: the number of CPUs), the
#    same with one worker for comparison (runs alternate), then 1000
#    connections on a 20 ms ITL schedule, the lateness of every token write
#    against its due instant read from serve's --log.
# 3. The eBPF vantage (tests/bench/bpf.sh): added cost per traced syscall,
#    and the highest token-event rate traced with zero drops.
# 4. The LD_PRELOAD probe (tests/bench/probe.sh): added cost per
#    intercepted call, and the call rate held with zero drops.
# 5. Clocks of two hosts (userspace/clocks/): the fit and the per-request
#    uncertainty for 100,000 requests of 20 token events (build/tools/ttclockfit),
#    then two whole recordings of 100,000 requests (build/tools/ttsynthrec)
#    merged by `tokentap analyze SRV CLI`: time and peak memory.
# 6. The TLS plaintext vantage (tests/bench/tls.sh): added cost per SSL
#    call, traced and for a bystander process, and the SSE chunk rate.
# 7. The watcher as a service (tests/bench/watch.sh): its CPU and memory at
#    about 10,000 and 100,000 token events/s, and the paired change in a
#    benchmark client's TTFT median and throughput with it on.
# 8. The watcher held for 10 minutes under churn (tests/bench/soak.sh): only
#    when BENCH_ONLY names soak (`make soak`); otherwise its text is kept.
# 9. The observer effect (tests/bench/observer.sh): a benchmark client at
#    concurrency 64 plain, under `tokentap run`, with `watch --pid` on the
#    server and with `record`, rounds interleaved; the change in its TTFT
#    median and throughput with a 95 % interval.
# BENCH_ONLY=NAME (analyze, serve, bpf, probe, clocks, tls, watch, observer; several separated by commas) reruns
# those sections and keeps the others' text from docs/performance.md.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
only=${BENCH_ONLY:-}
runs=${BENCH_RUNS:-5}
work=${BENCH_DIR:-$BUILD/bench}
mkdir -p "$work"

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
time_cmd() { # time_cmd RUNS CMD... -> median seconds
    local n=$1; shift
    for _ in $(seq "$n"); do
        local t0; t0=$(now_ns)
        "$@" > /dev/null 2>&1 || { echo "bench: '$*' failed" >&2; return 1; }
        echo $(( $(now_ns) - t0 ))
    done | median | awk '{printf "%.3f", $1/1e9}'
}

rate() { awk -v n="$1" -v t="$2" 'BEGIN {printf "%.0f", n/t}'; }
mbps() { awk -v b="$1" -v t="$2" 'BEGIN {printf "%.1f", b/t/1e6}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a/b}'; }
frac() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }

# Every process the bench starts is stopped on exit.
. tests/bench/started.sh
. tests/bench/machine.sh

# The text of one section from the current docs/performance.md (when kept):
# from its heading (the first line of the file for analyze) to the next
# section's heading, trailing blank lines dropped.
serve_heading="## tokentap serve"
bpf_heading="## eBPF vantage"
probe_heading="## The LD_PRELOAD probe (tokentap run)"
clocks_heading="## Clocks of two hosts (analyze DIR DIR...)"
tls_heading="## TLS plaintext vantage (uprobes on OpenSSL and Go)"
watch_heading="## The watcher in production (watch --metrics)"
soak_heading="## The watcher held for hours (make soak)"
observer_heading="## What observing costs a benchmark client"
old_section() {
    [ -f docs/performance.md ] || return 0
    awk -v want="$1" -v s="$serve_heading" -v b="$bpf_heading" -v p="$probe_heading" -v c="$clocks_heading" \
        -v t="$tls_heading" -v w="$watch_heading" -v k="$soak_heading" -v o="$observer_heading" '
        NR == 1 { cur = "analyze" }
        $0 == s { cur = "serve" } $0 == b { cur = "bpf" } $0 == p { cur = "probe" } $0 == c { cur = "clocks" }
        $0 == t { cur = "tls" } $0 == w { cur = "watch" } $0 == k { cur = "soak" } $0 == o { cur = "observer" }
        cur == want { print }' docs/performance.md | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
}

analyze_section() {
    streams=${BENCH_STREAMS:-2000}
    tokens=${BENCH_TOKENS:-500}
    cap="$work/bench.pcap"
    gen_args="--dialect openai-chat --streams $streams --tokens $tokens --concurrency 64 --seed 1"
    gen_cmd="$BUILD/tools/ttpcapgen -o $cap $gen_args"
    echo "bench: $gen_cmd"
    $gen_cmd > /dev/null
    sync "$cap"   # let writeback of the new file finish before anything is timed
    bytes=$(stat -c %s "$cap")

    "$BUILD/tokentap" analyze "$cap" > "$work/report.txt"   # also warms the page cache
    events=$(awk -F: '/^Total token events:/ {gsub(/ /,"",$2); print $2}' "$work/report.txt")
    echo "bench: capture $bytes bytes, $events token events"

    t_cat=$(time_cmd "$runs" cat "$cap")
    t_tt=$(time_cmd "$runs" taskset -c 0 "$BUILD/tokentap" analyze "$cap")
    t_json=$(time_cmd "$runs" taskset -c 0 "$BUILD/tokentap" analyze --json -o "$work/report.json" "$cap")
    # the same packets as pcapng: read in place, and through libpcap
    t_ng="" t_ng_lib="" ng_bytes=""
    if command -v editcap > /dev/null && editcap -F pcapng "$cap" "$work/bench.pcapng" 2> /dev/null; then
        sync "$work/bench.pcapng" # its writeback would otherwise run beside the timed runs below
        ng_bytes=$(stat -c %s "$work/bench.pcapng")
        t_ng=$(time_cmd "$runs" taskset -c 0 "$BUILD/tokentap" analyze "$work/bench.pcapng")
        t_ng_lib=$(time_cmd "$runs" env TOKENTAP_PCAPNG_LIBPCAP=1 taskset -c 0 "$BUILD/tokentap" analyze "$work/bench.pcapng")
    fi
    # tshark: BENCH_TSHARK_RUNS rounds (default 3), each beside tokentap
    # pinned and --jobs 2 (the median of 3 runs each), and the ratios of
    # each round: the machine's speed wanders between minutes (at times by
    # half), so only times taken together are compared. A run right after
    # tshark exits can take half as long again (the kernel taking back
    # tshark's 1.3 GB beside it): a single run measured that, not tokentap.
    t_tshark="" r_tshark="" r_tshark_j2=""
    if command -v tshark > /dev/null; then
        local ts="" rt="" rj="" x y z
        sync
        for _ in $(seq "${BENCH_TSHARK_RUNS:-3}"); do
            x=$(time_cmd 1 tshark -r "$cap" -Y http)
            y=$(time_cmd 3 taskset -c 0 "$BUILD/tokentap" analyze "$cap")
            z=$(time_cmd 3 "$BUILD/tokentap" analyze --jobs 2 "$cap")
            ts+="$x"$'\n'; rt+="$(ratio "$x" "$y")"$'\n'; rj+="$(ratio "$x" "$z")"$'\n'
        done
        t_tshark=$(printf '%s' "$ts" | median)
        r_tshark=$(printf '%s' "$rt" | median)
        r_tshark_j2=$(printf '%s' "$rj" | median)
        r_tshark_j2_range="$(printf '%s' "$rj" | sort -n | head -1) to $(printf '%s' "$rj" | sort -n | tail -1)"
    fi

    # the same streams over HTTP/2: one per connection (the same instants), then 8 per connection
    h2_bench "$work/bench-h2.pcap" --http2
    one_cmd=$h2_gen one_bytes=$h2_bytes t_one=$t_h2
    h2_bench "$work/bench-h2-mux.pcap" --http2 --streams-per-conn 8
    mux_cmd=$h2_gen mux_bytes=$h2_bytes t_mux=$t_h2

    # --jobs: rounds on both cores (unpinned) of --jobs 1, --jobs 2, and the
    # machine's own ceiling: two --jobs 1 at once, pinned one to each core,
    # timed until both end (two jobs' work). The machine's speed wanders
    # between rounds (and one core is at times much slower than the other),
    # so each round gives its own ratios.
    local j1="" j2="" jr="" jc="" jo="" a b c d jobs_runs=$((runs * 2 - 1))
    sync # nothing the bench wrote is still being written back on either core
    for _ in $(seq "$jobs_runs"); do
        a=$(time_cmd 1 "$BUILD/tokentap" analyze --jobs 1 "$cap")
        b=$(time_cmd 1 "$BUILD/tokentap" analyze --jobs 2 "$cap")
        c=$(time_cmd 1 bash -c 'taskset -c 0 "$1" analyze --jobs 1 "$2" & taskset -c 1 "$1" analyze --jobs 1 "$2"; s=$?; wait $! ; exit $((s | $?))' \
            _ "$BUILD/tokentap" "$cap")
        # --jobs 2 given one core (a machine busy elsewhere): its threads take turns
        d=$(time_cmd 1 taskset -c 0 "$BUILD/tokentap" analyze --jobs 2 "$cap")
        j1+="$a"$'\n'; j2+="$b"$'\n'; jr+="$(frac "$a" "$b")"$'\n'; jo+="$(frac "$d" "$a")"$'\n'
        jc+="$(awk -v a="$a" -v c="$c" 'BEGIN {printf "%.2f", 2 * a / c}')"$'\n'
    done
    t_j1=$(printf '%s' "$j1" | median); t_j2=$(printf '%s' "$j2" | median)
    r_jobs=$(printf '%s' "$jr" | median)
    r_lo=$(printf '%s' "$jr" | sort -n | head -1); r_hi=$(printf '%s' "$jr" | sort -n | tail -1)
    r_ceiling=$(printf '%s' "$jc" | median)
    r_one_core=$(printf '%s' "$jo" | median)
    c_lo=$(printf '%s' "$jc" | sort -n | head -1); c_hi=$(printf '%s' "$jc" | sort -n | tail -1)

    # start-up: what every command pays before it reads anything (the
    # shared libraries mapped and relocated), the mean of 40 in a row
    local t0 startup_ms
    t0=$(now_ns)
    for _ in $(seq 40); do "$BUILD/tokentap" --version > /dev/null; done
    startup_ms=$(awk -v d="$(( $(now_ns) - t0 ))" 'BEGIN {printf "%.1f", d / 40 / 1e6}')

    ev_rate=$(rate "$events" "$t_tt")
    {
        echo "# Performance"
        echo
        echo "Measured by \`make bench\` (tests/bench/run.sh) on $(date -u +%Y-%m-%d):"
        echo "$(machine_line)."
        echo "Medians of $runs runs (tshark: ${BENCH_TSHARK_RUNS:-3} rounds, each beside tokentap pinned and"
        echo "\`--jobs 2\`, the median of 3 runs each; its ratios are the medians of the rounds' ratios)."
        echo "tokentap is pinned to one core (taskset -c 0)."
        echo
        echo "Capture: \`$gen_cmd\`"
        echo "($bytes bytes, $events token events)."
        echo
        echo "| command | seconds | token events/s | MB/s |"
        echo "|---|---|---|---|"
        echo "| \`cat FILE > /dev/null\` | $t_cat | | $(mbps "$bytes" "$t_cat") |"
        echo "| \`tokentap analyze FILE\` | $t_tt | $ev_rate | $(mbps "$bytes" "$t_tt") |"
        echo "| \`tokentap analyze --json -o OUT FILE\` | $t_json | $(rate "$events" "$t_json") | $(mbps "$bytes" "$t_json") |"
        if [ -n "$t_ng" ]; then
            echo "| \`tokentap analyze FILE.pcapng\` (the same packets, \`editcap -F pcapng\`: $ng_bytes bytes) | $t_ng | $(rate "$events" "$t_ng") | $(mbps "$ng_bytes" "$t_ng") |"
            echo "| \`TOKENTAP_PCAPNG_LIBPCAP=1 tokentap analyze FILE.pcapng\` (read through libpcap) | $t_ng_lib | $(rate "$events" "$t_ng_lib") | $(mbps "$ng_bytes" "$t_ng_lib") |"
        fi
        [ -n "$t_tshark" ] && echo "| \`tshark -r FILE -Y http\` | $t_tshark | $(rate "$events" "$t_tshark") | $(mbps "$bytes" "$t_tshark") |"
        echo
        echo "Targets (issue 2): at least 1,000,000 token events/s on one core; at least"
        echo "20 times tshark."
        echo
        echo "- token events/s: $ev_rate"
        [ -n "$t_tshark" ] && echo "- tokentap vs tshark: $r_tshark times faster (median of the rounds)"
        echo "- tokentap vs cat: $(ratio "$t_tt" "$t_cat") times cat's time"
        echo
        echo "HTTP/2 (h2c with prior knowledge): the same streams, the same instants,"
        echo "\`$one_cmd\`"
        echo "($one_bytes bytes), and multiplexed 8 streams to a connection (ids 1, 3 ... 15),"
        echo "\`$mux_cmd\`"
        echo "($mux_bytes bytes). Both give the same $events token events."
        echo
        echo "| command | seconds | token events/s | MB/s |"
        echo "|---|---|---|---|"
        echo "| \`tokentap analyze FILE\` (HTTP/1.1, above) | $t_tt | $ev_rate | $(mbps "$bytes" "$t_tt") |"
        echo "| \`tokentap analyze FILE-h2\` (HTTP/2, a stream per connection) | $t_one | $(rate "$events" "$t_one") | $(mbps "$one_bytes" "$t_one") |"
        echo "| \`tokentap analyze FILE-h2-mux\` (HTTP/2, 8 streams per connection) | $t_mux | $(rate "$events" "$t_mux") | $(mbps "$mux_bytes" "$t_mux") |"
        echo
        echo "Target (issue 15): HTTP/2 token events/s on one core at least half the HTTP/1.1 figure."
        echo
        echo "- HTTP/2, a stream per connection: $(rate "$events" "$t_one") token events/s, $(frac "$t_tt" "$t_one") times the HTTP/1.1 figure"
        echo "- HTTP/2, 8 streams per connection: $(rate "$events" "$t_mux") token events/s, $(frac "$t_tt" "$t_mux") times the HTTP/1.1 figure"
        echo
        echo "Code placement moves these rows. On 2026-12-06 the 8-streams row went from 0.234 to"
        echo "0.263 s between two runs of this section with the same instructions (cachegrind of"
        echo "a 200-stream capture of that shape: 337.1 M before, 336.1 M after; the changes"
        echo "between were in the shared walk of \`--jobs\` and the HTTP/1.1 parser's files):"
        echo "interleaved rounds, pinned, gave 216 against 233 ms. Built with"
        echo "\`-falign-functions=32 -falign-loops=32\` the same code ran it in 213 ms and the"
        echo "stream-per-connection capture 6 % faster, but HTTP/1.1 0.5 to 2.6 % slower"
        echo "(\`--jobs 1\` and \`--jobs 2\`, 15 rounds, two copies); either flag alone, 0.94 and"
        echo "1.04 times the time. Not kept: which hot loop lands where is a lottery either way."
        echo
        echo "\`--jobs N\` reads a capture file with N threads, one per share of the"
        echo "connections (a hash of the endpoints, N equal parts), each with its own"
        echo "reassembler and tracker (\`tt_pcap_source_share\`, userspace/source/pcap_source.c)."
        echo "They read and walk the file once between them (userspace/source/pcap_walk.c):"
        echo "whichever thread needs a chunk nobody has walked reads it (one pread of 256 KiB"
        echo "into a buffer of its own) and walks it and four chunks after it, listing each"
        echo "record for the share that owns its packet (a TCP packet's owner is read at fixed"
        echo "places over IPv4, and over IPv6 with no extension header; the rest are parsed to"
        echo "find it); each thread then parses its own"
        echo "packets in the chunks' buffers, in file order, asking for the bytes of the"
        echo "packet four ahead. 16 chunks are kept; the walker waits for a thread more than"
        echo "16 chunks behind. A request's metrics and lint are taken on its thread as it"
        echo "is filed. Connection ids and the order of notes come from packet indices, and"
        echo "the shares are merged into one report, byte for byte that of \`--jobs 1\`"
        echo "(tests/e2e/test_analyze_jobs.sh; the counts and error lines of a damaged file"
        echo "too: tests/unit/test_pcap_shares.c). A recording DIR, a file read through"
        echo "libpcap and \`lint\` stay on one thread. What stays serial: start-up, the merge,"
        echo "the summaries and the report. Each thread's reassembler keeps at most 65536"
        echo "live connections, so a capture with more open at one instant can differ from"
        echo "\`--jobs 1\`."
        echo
        echo "$jobs_runs rounds on both cores (not pinned) of \`--jobs 1\`, \`--jobs 2\` and the"
        echo "machine's ceiling: two \`--jobs 1\` at once, pinned one to each core (\`taskset -c 0\`,"
        echo "\`-c 1\`), timed until both end; the ceiling ratio is twice the round's"
        echo "\`--jobs 1\` time over that (what two cores give two independent jobs here)."
        echo
        echo "| command | --jobs 1, s | --jobs 2, s | ratio of each round |"
        echo "|---|---|---|---|"
        echo "| \`tokentap analyze --jobs N FILE\` | $t_j1 | $t_j2 | $r_lo to $r_hi, median $r_jobs |"
        echo "| two \`--jobs 1\` at once (the ceiling) | $t_j1 | | $c_lo to $c_hi, median $r_ceiling |"
        echo
        echo "Targets (issue 16), on 2 cores: at least 1.8 times one job; at least 200 times"
        echo "tshark; at least 1 GB/s."
        echo
        echo "- --jobs 2 against --jobs 1: $r_jobs times (median of the rounds); the machine's ceiling: $r_ceiling times"
        [ -n "$t_tshark" ] && echo "- --jobs 2 against tshark: $r_tshark_j2 times faster (the rounds: $r_tshark_j2_range)"
        echo "- --jobs 2: $(mbps "$bytes" "$t_j2") MB/s"
        echo "- --jobs 2 given one core (\`taskset -c 0\`): $r_one_core times the time of \`--jobs 1\` (median of the rounds)"
        echo
        echo "How it came to this, measured by hand (each figure a median of interleaved"
        echo "rounds). Until 2026-12-06 every thread read and walked the whole file itself"
        echo "(its own pread copy, each record's header, each packet's owner): per symbol, the"
        echo "CPU \`--jobs 2\` spent beyond \`--jobs 1\` (270 against 222 ms) was that walk over"
        echo "the other share's records (take_packet +27 ms, the pread copy +10, window_at +4),"
        echo "and the ratio was 1.55 to 1.64. Two \`--jobs 1\` side by side take as much CPU"
        echo "each as one alone: the cores do not slow each other. The merge of the shares'"
        echo "requests is 2.3 to 3 ms (the first thread done makes room for the other's"
        echo "requests while it still runs, \`tt_tracker_reserve_requests\`); the summaries and"
        echo "the report about 2 ms; a first touch of anonymous memory 1.3 us a page here."
        echo
        echo "Tried and not kept. On 2026-12-05, a shared walk with 4 windows and no lists"
        echo "read ahead: 0.29 to 0.34 s against 0.26, a window being filled holding up the"
        echo "thread that needed it (20 to 100 ms of waiting a run). On 2026-12-06, the same"
        echo "walk as now over a mapping of the whole file instead of pread chunks (and no"
        echo "SIGBUS to handle when the file is cut short while read): 5 ms slower a run and"
        echo "13 ms more CPU, as mapping and unmapping the file's 88,000 pages cost about as"
        echo "much as copying them (a stand-alone walk: 45 ms through the mapping, half of it"
        echo "page-table work; unmapping behind the readers in 16 MiB steps and"
        echo "MADV_POPULATE_READ ahead of the walker changed little); non-temporal stores of"
        echo "the lists, chunks of 64 KiB to 1 MiB, 6 to 16 chunks kept and 2 to 8 walked"
        echo "ahead: no change beyond the rounds' spread. Without the reader's prefetch of the"
        echo "packet four ahead a \`--jobs 2\` run took 173 ms instead of 148. With the shared"
        echo "walk each thread still spends 20 to 35 ms of CPU walking (the pread copy, each"
        echo "header, each owner, the lists), about what one \`--jobs 1\` spends reading."
        echo
        echo "Per-event work, 2026-12-06 (a second pass). Where a \`--jobs 1\` run goes, found by"
        echo "builds that stop the pipeline early at each stage (medians of 15 interleaved rounds,"
        echo "pinned): \`cat\` of the file 31 to 47 ms; packets parsed and reassembled 74; HTTP/1.1,"
        echo "chunked and SSE framing 133; events classified 166; events recorded and requests"
        echo "filed 210; the full run, with each request's metrics, lint and its gaps in the ITL"
        echo "sketch, 234. What changed, each checked by cachegrind's instruction count on a"
        echo "100,000-event capture and by interleaved rounds: gcc's generic tuning wrote struct"
        echo "copies and memsets of 32 bytes to 8 KiB as \`rep movsq\` and \`rep stosq\`, slow to"
        echo "start on these cores (two a token event were 9 % of a run); the Makefile has gcc"
        echo "unroll them up to 256 bytes and call libc above. An SSE event of one data line is"
        echo "read where it was fed, not copied, and taken in one step when its blank line follows"
        echo "in the same bytes; a whole chunk of a chunked body is taken in one step too; the raw"
        echo "line separator check first reads 16 bytes a step for a byte of 0x80 or above; a memo"
        echo "hit copies its result's strings to their ends; a request's event array starts as big"
        echo "as the last filed one's; the ITL sketch finds a sample's bucket in a table of cells"
        echo "instead of calling log(); the TTFTs, TPOTs and E2ELs (one per request) are sorted by"
        echo "qsort, not four radix passes over 65536 counts. Together, against the build of that"
        echo "morning (15 interleaved rounds, pinned): \`--jobs 1\` 212 against 274 ms (0.77),"
        echo "\`--jobs 2\` 118 against 149 (0.78)."
        echo
        echo "\`--jobs 2\` given one core (\`taskset -c 0\`, or a machine busy elsewhere) took twice"
        echo "the time of \`--jobs 1\` until then: a thread that found the next chunk's slot still"
        echo "held by a reader far behind tried again at once, spinning until the scheduler took"
        echo "the CPU. It now waits as for a walker (spin, yield, sleep): 1.15 times."
        echo
        echo "What moves these figures besides the code. The same bytes copied to another file"
        echo "read 8 % faster (9 rounds): where the page cache holds a file shifts every figure,"
        echo "and the bench writes its capture afresh each run; this machine's kernel also takes"
        echo "back cold page cache (kdamond), so a figure by hand wants \`cat FILE\` first. The same"
        echo "code linked with a few bytes of strings moved ran 3 to 6 % apart, so a difference"
        echo "below that is not read from one pair of builds. A \`--jobs 2\` run right after tshark"
        echo "exits took 158 ms where the next took 104 (the kernel taking back tshark's 1.3 GB"
        echo "beside it), hence 3 runs each in the tshark rounds; writeback of the bench's own"
        echo "files is synced before the timed rounds."
        echo
        echo "What \`--jobs 2\` spends beyond \`--jobs 1\` (perf samples of one run each, 20 kHz): 70"
        echo "% of it is the walk (its loop over the records' headers, each packet's owner, the"
        echo "lists), the rest the reader's first touches of packets the other core read in"
        echo "(reassembly, framing). The walk's loop chases each record's length to find the next"
        echo "header, so it waits on the cache once a record. The same binary copied to three"
        echo "files ran \`--jobs 2\` in 108.5 to 116 ms (11 rounds each): a change of under 4 % is"
        echo "not read from one copy of each build."
        echo
        echo "Tried and not kept: profile-guided optimization (gcc -fprofile-use, trained on a"
        echo "100,000-event capture), 0 to 4 %, not worth a second build; glibc's malloc on"
        echo "transparent huge pages, \`--jobs 1\` 2.6 % faster but \`--jobs 2\` 8.7 % slower (2 MiB"
        echo "zeroed at each fault of a thread's arena); -march=native on top of the string"
        echo "options, nothing more; pread chunks of 16 to 64 KiB, no faster (16 KiB 8 % slower);"
        echo "the event record written as one compound literal, more instructions than the memset"
        echo "and its fields. A 64-byte larger event record costs 2.5 % a run: the record (112"
        echo "bytes, a million written and read back as requests are filed) could shrink, but"
        echo "every reader of it would change."
        echo
        echo "A third pass, 2026-12-06 evening, on what \`--jobs 2\` spends beyond \`--jobs 1\` (176"
        echo "against 189 ms of CPU at its start, interleaved rounds). The walk's usual record"
        echo "(whole in its chunk, its owner read at fixed places, room in its owner's list) now"
        echo "goes through a loop of its own with no call in it: a call there took the registers"
        echo "its values lived in, a load and a store each for every record of the file. Byte order"
        echo "and clock map are compiled apart, the rest taken one at a time as before, and IPv6"
        echo "TCP owners are read at fixed places too (each took a parse). cachegrind, \`--jobs 2\` on"
        echo "a 100,000-event capture: 310.5 M instructions before, 298.9 M after; 15 interleaved"
        echo "rounds, two copies of each build: 0.956 and 0.958 of the time before. The ring's 16"
        echo "buffers are one block on huge pages: the walk's first lap faulted 4 MiB in a page at"
        echo "a time (a run's page faults 5550 before, 4520 after; 1.5 ms less CPU, 0.992 and 0.993"
        echo "of the time, within the rounds' spread)."
        echo
        echo "The serial parts of a \`--jobs 2\` run, stamped by hand (CLOCK_MONOTONIC at each step,"
        echo "this capture): the second thread starts 0.4 ms after main (2.5 ms in one run of eight);"
        echo "the readers end within 0.1 ms of each other; after them 2.2 to 2.7 ms go to making"
        echo "room for the merged requests (0.7 ms when both readers end together: realloc copies"
        echo "the first one's 1.7 MiB into fresh pages), the release digests' merge 0.3, the"
        echo "requests' 0.7, their sort 0.3, the summaries 0.4, lint 0.15 and the report 0.1. From"
        echo "the process's start to main 1.7 ms, from main's return to the parent's wait 1.8 ms"
        echo "(1.35 for \`--jobs 1\`: the kernel freeing the heap's pages). A request is 1752 bytes"
        echo "(fixed arrays for its strings), so every move of the requests is megabytes."
        echo
        echo "Tried that pass and not kept: the request array in a mapping of its own, grown by"
        echo "mremap (the room made in 0.05 ms instead of 0.7, but its pages then faulted during"
        echo "the merge: runs 2.6 and 4.3 % slower in two copies); each reader sorting its own"
        echo "requests on its thread and the merge taking the sorted runs in order (0.4 ms less"
        echo "after the readers by the stamps, runs 0.997 and 1.007 of the time); smaller rings (8"
        echo "chunks of 128 KiB 1.01, 4 of 128 KiB 1.07, 6 of 64 KiB 1.11 times the time); skipping"
        echo "the connections' activity order where nothing evicts (perf put 4.4 % of \`--jobs 1\`"
        echo "there): 0.995, those samples were a connection's cache miss landing in it; glibc's"
        echo "mmap threshold fixed (MALLOC_MMAP_THRESHOLD_): the same page faults."
        echo
        echo "Start-up, in every figure above: \`tokentap --version\` takes $startup_ms ms (the mean"
        echo "of 40 in a row; $(ldd "$BUILD/tokentap" | wc -l) shared objects mapped). OpenSSL, libmicrohttpd and libcapstone"
        echo "are loaded only by serve --tls, watch --metrics and Go TLS uprobes, when first"
        echo "used (userspace/core/lazy_lib.h); linked, they took the start from about 10 to 25 ms."
        echo
        # the heap of the text report, events released and kept (tests/bench/heap.sh)
        BUILD=$BUILD HEAP_BENCH_DIR=$work tests/bench/heap.sh
    } > "$work/analyze.md"
}

# h2_bench FILE GEN_ARGS...: the analyze section's streams ($gen_args) written
# to FILE with GEN_ARGS added, analyzed once to check it gives the HTTP/1.1
# capture's $events token events, then timed on one core; sets h2_gen (the
# command), h2_bytes and t_h2 (median seconds). FILE is removed after.
h2_bench() {
    local file=$1; shift
    h2_gen="$BUILD/tools/ttpcapgen -o $file $gen_args $*"
    echo "bench: $h2_gen"
    $h2_gen > /dev/null
    sync "$file"
    h2_bytes=$(stat -c %s "$file")
    "$BUILD/tokentap" analyze "$file" > "$work/report-h2.txt"   # also warms the page cache
    local n
    n=$(awk -F: '/^Total token events:/ {gsub(/ /,"",$2); print $2}' "$work/report-h2.txt")
    [ "$n" = "$events" ] || { echo "bench: $file gives $n token events, the HTTP/1.1 capture $events" >&2; exit 1; }
    t_h2=$(time_cmd "$runs" taskset -c 0 "$BUILD/tokentap" analyze "$file")
    rm -f "$file"
}

# Starts `tokentap serve ARGS...` on a kernel-chosen loopback port; sets
# serve_pid and serve_port.
start_serve() {
    local out="$work/serve.out"
    : > "$out"
    "$BUILD/tokentap" serve --listen 127.0.0.1:0 "$@" > "$out" 2> "$work/serve.err" &
    serve_pid=$!
    started+=("$serve_pid")
    for _ in $(seq 100); do grep -q '^listening on ' "$out" && break; sleep 0.05; done
    serve_port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out")
    [ -n "$serve_port" ] || { echo "bench: serve did not start: $(cat "$work/serve.err")" >&2; return 1; }
}
stop_serve() {
    kill -TERM "$serve_pid"
    local rc=0; wait "$serve_pid" || rc=$?
    started=()
    [ $rc = 0 ] || { echo "bench: serve exited $rc: $(cat "$work/serve.err")" >&2; return 1; }
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
json_field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" "$1"; }

serve_section() {
    local sruns=${BENCH_SERVE_RUNS:-3} conns=${BENCH_SERVE_CONNS:-1000} secs=${BENCH_SERVE_SECONDS:-10}
    local stokens=200 maxreq=20000 hz; hz=$(getconf CLK_TCK)
    local workers=${BENCH_SERVE_WORKERS:-$(nproc)}
    # serve itself does not raise its descriptor limit: give it room here
    ulimit -n $((conns + 256)) 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    local fast_args="--profile vllm --ttft-ms 0 --itl-ms 0 --tokens $stokens --workers $workers"
    local one_args="--profile vllm --ttft-ms 0 --itl-ms 0 --tokens $stokens --workers 1"
    local load_args="-c $conns -n $maxreq -d $secs -T $stokens"
    local i rc t0 c0 c1 t1 kind args
    rm -f "$work"/serve-fast-*.cpu "$work"/serve-one-*.cpu
    for i in $(seq "$sruns"); do
        for kind in fast one; do   # alternate, so that a noisy moment hits both alike
            if [ $kind = fast ]; then args=$fast_args; else args=$one_args; fi
            start_serve $args
            c0=$(cpu_ticks "$serve_pid"); t0=$(now_ns)
            rc=0; "$BUILD/tools/ttload" $load_args "127.0.0.1:$serve_port" > "$work/serve-$kind-$i.json" || rc=$?
            c1=$(cpu_ticks "$serve_pid"); t1=$(now_ns)
            stop_serve
            [ $rc = 0 ] || { echo "bench: ttload exit $rc: $(cat "$work/serve-$kind-$i.json")" >&2; return 1; }
            awk -v c=$((c1 - c0)) -v hz="$hz" -v t=$((t1 - t0)) 'BEGIN {printf "%.2f\n", c / hz / (t / 1e9)}' > "$work/serve-$kind-$i.cpu"
            echo "bench: serve run $i ($args): $(cat "$work/serve-$kind-$i.json")"
        done
    done
    local fast_eps fast_min fast_max fast_cpu fast_peak fast_served fast_err fast_req
    fast_eps=$(for i in $(seq "$sruns"); do json_field "$work/serve-fast-$i.json" events_per_s; done | median | awk '{printf "%.0f", $1}')
    fast_min=$(for i in $(seq "$sruns"); do json_field "$work/serve-fast-$i.json" events_per_s; done | sort -n | head -1)
    fast_max=$(for i in $(seq "$sruns"); do json_field "$work/serve-fast-$i.json" events_per_s; done | sort -n | tail -1)
    fast_req=$(for i in $(seq "$sruns"); do json_field "$work/serve-fast-$i.json" requests; done | median | awk '{printf "%.0f", $1}')
    fast_cpu=$(cat "$work"/serve-fast-*.cpu | median)
    fast_peak=$(for i in $(seq "$sruns"); do json_field "$work/serve-fast-$i.json" peak_in_flight; done | sort -n | head -1)
    fast_served=$(for i in $(seq "$sruns"); do json_field "$work/serve-fast-$i.json" connections_served; done | sort -n | head -1)
    fast_err=$(for i in $(seq "$sruns"); do json_field "$work/serve-fast-$i.json" errors; done | awk '{s+=$1} END {print s+0}')
    local one_eps one_cpu
    one_eps=$(for i in $(seq "$sruns"); do json_field "$work/serve-one-$i.json" events_per_s; done | median | awk '{printf "%.0f", $1}')
    one_cpu=$(cat "$work"/serve-one-*.cpu | median)

    # A realistic schedule: every token's due instant is known, so the log says how late each write was.
    local sched_tokens=100 sched_secs=${BENCH_SERVE_SCHED_SECONDS:-8}
    local sched_args="--profile vllm --ttft-ms 50 --itl-ms 20 --tokens $sched_tokens --workers $workers --log $work/serve-sched.log"
    local sched_load="-c $conns -d $sched_secs -T $sched_tokens"
    start_serve $sched_args
    rc=0; "$BUILD/tools/ttload" $sched_load "127.0.0.1:$serve_port" > "$work/serve-sched.json" || rc=$?
    stop_serve
    [ $rc = 0 ] || { echo "bench: ttload exit $rc: $(cat "$work/serve-sched.json")" >&2; return 1; }
    echo "bench: serve schedule run: $(cat "$work/serve-sched.json")"
    /usr/bin/python3 - "$work/serve-sched.log" 50 20 > "$work/serve-sched.stats" <<'PY'
import json, sys
log, ttft_ms, itl_ms = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
read_ns, tokens_seen, last_tok, late, itl, spans = {}, {}, {}, [], [], {}
with open(log) as f:
    for line in f:
        e = json.loads(line)
        t = e["type"]
        if t == "request":
            key = (e["peer"], e["ordinal"])
            read_ns[key] = e["request_read_ns"]
            spans[key] = [e["request_read_ns"], e["request_read_ns"]]
        elif t == "write":
            key = (e["peer"], e["ordinal"])
            spans[key][1] = e["mono_ns"]
            for _, kind in e["events"]:
                if kind != "token":
                    continue
                k = tokens_seen.get(key, 0)
                tokens_seen[key] = k + 1
                # the documented absolute schedule: token k due at read + TTFT + k * ITL
                late.append(e["mono_ns"] - (read_ns[key] + int((ttft_ms + k * itl_ms) * 1e6)))
                if key in last_tok:
                    itl.append(e["mono_ns"] - last_tok[key])
                last_tok[key] = e["mono_ns"]
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else float("nan")
edges = sorted([(a, 1) for a, _ in spans.values()] + [(b, -1) for _, b in spans.values()])
now = peak = 0
for _, d in edges:
    now += d
    peak = max(peak, now)
ms = lambda ns: "%.3f" % (ns / 1e6)
print("token_writes", len(late))
print("requests", len(read_ns))
print("peak_streams", peak)
print("late_p50_ms", ms(pct(late, 50)))
print("late_p99_ms", ms(pct(late, 99)))
print("late_p999_ms", ms(pct(late, 99.9)))
print("late_max_ms", ms(max(late)))
print("early_max_ms", ms(max(0, -min(late))))
print("late_over_1ms_pct", "%.2f" % (100 * sum(1 for x in late if x > 1e6) / len(late)))
print("late_over_5ms_pct", "%.2f" % (100 * sum(1 for x in late if x > 5e6) / len(late)))
print("itl_p50_ms", ms(pct(itl, 50)))
print("itl_p1_ms", ms(pct(itl, 1)))
print("itl_p99_ms", ms(pct(itl, 99)))
PY
    stat_of() { awk -v k="$1" '$1 == k {print $2}' "$work/serve-sched.stats"; }
    local sched_eps sched_peak; sched_eps=$(json_field "$work/serve-sched.json" events_per_s)
    sched_peak=$(json_field "$work/serve-sched.json" peak_in_flight)
    local held=no; [ "$fast_peak" -ge 1000 ] && [ "$fast_served" -ge 1000 ] && held=yes
    local met=no; awk -v e="$fast_eps" 'BEGIN {exit !(e >= 200000)}' && met=yes
    {
        echo "$serve_heading"
        echo
        echo "\`tokentap serve\` (vllm profile, chat streams, one \`send()\` per event) driven by"
        echo "build/tools/ttload (tests/tools/ttload.c: one thread, epoll, keep-alive connections,"
        echo "each sending its next streaming request as soon as the previous response ends;"
        echo "events counted by their blank-line separators in the de-chunked body). Both on the"
        echo "same machine ($(machine_line)), unpinned; RLIMIT_NOFILE raised by the bench."
        echo "serve runs $workers worker threads (\`--workers\`, one event loop each; connections"
        echo "dealt round-robin), the default being 1."
        echo
        echo "### Zero delays: as fast as it can"
        echo
        echo "    tokentap serve --listen 127.0.0.1:0 $fast_args"
        echo "    ttload $load_args 127.0.0.1:PORT"
        echo
        echo "$stokens tokens per request = $((stokens + 2)) SSE events (role, tokens, \`[DONE]\`)."
        echo "Median of $sruns runs, each on a fresh server ($secs s or $maxreq requests, whichever first),"
        echo "alternating with the same runs at \`--workers 1\`."
        echo
        echo "| figure | value |"
        echo "|---|---|"
        echo "| SSE events/s (median; min, max) | $fast_eps ($fast_min, $fast_max) |"
        echo "| requests completed per run (median) | $fast_req |"
        echo "| connections open and in flight at once (lowest peak of the runs) | $fast_peak |"
        echo "| connections that completed at least one request (lowest of the runs) | $fast_served |"
        echo "| errors (all runs) | $fast_err |"
        echo "| serve CPU, cores busy during the run (median) | $fast_cpu |"
        echo "| with \`--workers 1\`: SSE events/s (median), serve CPU | $one_eps, $one_cpu |"
        echo "| ratio $workers workers / 1 worker (medians) | $(awk -v a="$fast_eps" -v b="$one_eps" 'BEGIN {printf "%.2f", a / b}') |"
        echo
        echo "Targets (issue 3): at least 1,000 concurrent connections: **$held**;"
        echo "at least 200,000 events/s on this machine: **$met** ($fast_eps)."
        echo
        echo "### A 20 ms ITL schedule on $conns connections"
        echo
        echo "    tokentap serve --listen 127.0.0.1:0 $sched_args"
        echo "    ttload $sched_load 127.0.0.1:PORT"
        echo
        echo "One run. The log has no due instants, but the schedule is absolute and fixed, so"
        echo "token k of a request is due at \`request_read_ns + 50 ms + k x 20 ms\`; lateness is"
        echo "the write's \`mono_ns\` minus that. ITL is between successive token writes of a request."
        echo
        echo "| figure | value |"
        echo "|---|---|"
        echo "| streams in progress at once (from the log; ttload: $sched_peak in flight) | $(stat_of peak_streams) |"
        echo "| requests whose answer began, token writes | $(stat_of requests), $(stat_of token_writes) |"
        echo "| SSE events/s received by ttload | $sched_eps |"
        echo "| lateness median / p99 / p99.9 / max (ms) | $(stat_of late_p50_ms) / $(stat_of late_p99_ms) / $(stat_of late_p999_ms) / $(stat_of late_max_ms) |"
        echo "| token writes more than 1 ms / 5 ms late | $(stat_of late_over_1ms_pct)% / $(stat_of late_over_5ms_pct)% |"
        echo "| earliest write before its due instant (ms) | $(stat_of early_max_ms) |"
        echo "| ITL p1 / median / p99 (ms), configured 20 | $(stat_of itl_p1_ms) / $(stat_of itl_p50_ms) / $(stat_of itl_p99_ms) |"
    } > "$work/serve.md"
}

bpf_section() {
    BUILD=$BUILD BPFBENCH_DIR="$work/bpf" tests/bench/bpf.sh > "$work/bpf.md"
}

probe_section() {
    BUILD=$BUILD tests/bench/probe.sh > "$work/probe.md"
}

clocks_section() {
    local runs=${BENCH_RUNS:-5} fit="" query="" line=""
    for _ in $(seq "$runs"); do
        line=$("$BUILD/tools/ttclockfit" 100000 20) || { echo "bench: ttclockfit failed: $line" >&2; exit 1; }
        fit+="$(echo "$line" | sed -n 's/.*"fit_s": \([0-9.]*\).*/\1/p')"$'\n'
        query+="$(echo "$line" | sed -n 's/.*"query_s": \([0-9.]*\).*/\1/p')"$'\n'
    done
    # Two real recordings of 100,000 requests, merged by analyze.
    local merge=""
    rm -rf "$work/merge" && mkdir -p "$work/merge"
    "$BUILD/tools/ttsynthrec" "$work/merge/srv" "$work/merge/cli" 100000 20 > /dev/null \
        || { echo "bench: ttsynthrec failed" >&2; exit 1; }
    merge=$(/usr/bin/python3 - "$BUILD/tokentap" "$work/merge" <<'PY'
import json, os, resource, subprocess, sys, time
tt, d = sys.argv[1], sys.argv[2]
size = sum(os.path.getsize(f"{d}/{x}") for x in ("srv/server.pcap", "cli/client.pcap"))
t = time.monotonic()
subprocess.run([tt, "analyze", "--json", "-o", f"{d}/out.json", f"{d}/srv", f"{d}/cli"], check=True)
wall = time.monotonic() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
a = json.load(open(f"{d}/out.json"))
cl = a["clocks"][1]
joined = sum(1 for r in a["requests"] if r["request_id"] and set(r["vantages"]) == {"server", "client"})
print(json.dumps({"pcap_bytes": size, "wall_s": round(wall, 2), "max_rss_bytes": rss, "requests_joined": joined,
                  "method": cl["method"], "offset_ns": cl["offset_ns"], "skew_ppm": round(cl["skew_ppm"], 3),
                  "uncertainty_ns": cl["uncertainty_ns"]}))
PY
) || { echo "bench: analyze of two recordings failed" >&2; exit 1; }
    rm -rf "$work/merge"
    {
        echo "## Clocks of two hosts (analyze DIR DIR...)"
        echo
        echo "Measured on $(date -u +%Y-%m-%d): $(machine_line)."
        echo
        echo "    build/tools/ttclockfit 100000 20      # median of $runs runs"
        echo
        echo "100,000 requests over an hour between two hosts 7 s and 30 ppm apart, 20 token"
        echo "events each: 2,200,000 bounds (first and last request byte, every token event),"
        echo 'transits 20-400 us. What `tokentap analyze DIR DIR` adds to reading the second'
        echo "recording twice (once for its bounds, once on the reference's clock; the analyze"
        echo "section's rate applies to that)."
        echo
        echo "| figure | value |"
        echo "|---|---|"
        echo "| fit (hulls of the bounds, then the skew search), s | $(echo -n "$fit" | median) |"
        echo "| uncertainty at each of the 100,000 request instants, s | $(echo -n "$query" | median) |"
        echo "| last run | \`$line\` |"
        echo
        echo "    build/tools/ttsynthrec SRV CLI 100000 20"
        echo "    tokentap analyze --json -o OUT SRV CLI"
        echo
        echo "The whole merge, end to end: two recordings as \`tokentap record\` writes them"
        echo "(tests/tools/ttsynthrec.c: the same exchange of 100,000 requests of 20 token"
        echo "events, one connection each, an hour long; SRV the server vantage on its clock,"
        echo "CLI the client vantage on a clock 7 s ahead and 30 ppm fast), analyzed together:"
        echo "read, the clocks fitted from the traffic, joined, decomposed, written as JSON."
        echo "One run: wall time and the peak resident memory of analyze (the two pcaps are"
        echo "mapped, so their size counts in it; the rest is heap, issue 16's to bound)."
        echo
        echo "| figure | value |"
        echo "|---|---|"
        echo "| the two pcaps, MB | $(echo "$merge" | /usr/bin/python3 -c 'import json,sys; print(round(json.load(sys.stdin)["pcap_bytes"]/1e6))') |"
        echo "| analyze SRV CLI, s | $(echo "$merge" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["wall_s"])') |"
        echo "| peak resident, MB | $(echo "$merge" | /usr/bin/python3 -c 'import json,sys; print(round(json.load(sys.stdin)["max_rss_bytes"]/1e6))') |"
        echo "| the run | \`$merge\` |"
    } > "$work/clocks.md"
}

tls_section() {
    BUILD=$BUILD tests/bench/tls.sh > "$work/tls.md"
}

watch_section() {
    BUILD=$BUILD tests/bench/watch.sh > "$work/watch.md"
}

soak_section() {
    BUILD=$BUILD tests/bench/soak.sh > "$work/soak.md"
}

observer_section() {
    BUILD=$BUILD tests/bench/observer.sh > "$work/observer.md"
}

# Every section when BENCH_ONLY is empty, but soak (10 minutes twice) only by name.
wanted() { { [ -z "$only" ] && [ "$1" != soak ]; } || [[ ",$only," == *",$1,"* ]]; }
sections="analyze serve bpf probe clocks tls watch soak observer"
for name in $sections; do
    if wanted "$name"; then "${name}_section"; else old_section "$name" > "$work/$name.md"; fi
done
first=1
for name in $sections; do
    [ -s "$work/$name.md" ] || continue
    [ $first = 1 ] || echo
    cat "$work/$name.md"; first=0
done > "$work/performance.md"
cp "$work/performance.md" docs/performance.md
cat docs/performance.md
