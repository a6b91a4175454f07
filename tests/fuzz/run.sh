#!/usr/bin/env bash
# Build every tests/fuzz/fuzz_*.c as a libFuzzer target (clang, ASan+UBSan)
# and run each: `short` for a few seconds each (inside make test), `long`
# for FUZZ_SECONDS (default 300) each. Seeds: tests/fuzz/corpus/<name>/ and
# the golden inputs named in tests/fuzz/<name>.seeds (one glob a line).
# FUZZ_ONLY=fuzz_a,fuzz_b runs only those targets.
set -eu
mode=${1:-short}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=build/fuzz
mkdir -p "$out"
if ! command -v clang >/dev/null; then
    echo "fuzz: clang not installed; run tests/install_deps.sh" >&2
    exit 1
fi
case "$mode" in
    short) secs=${FUZZ_SECONDS:-6} ;;
    long) secs=${FUZZ_SECONDS:-300} ;;
    *) echo "usage: $0 short|long" >&2; exit 2 ;;
esac
lib_src=$(find userspace -name '*.c' ! -name main.c | sort)
cflags="-g -O1 -std=gnu11 -D_GNU_SOURCE -Iuserspace -Itests/support $(pkg-config --cflags libpcap libcjson zlib) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
libs="$(pkg-config --libs libpcap libcjson zlib openssl libmicrohttpd libnghttp2) -lm"
# the library once, as objects with fuzzer coverage
mkdir -p "$out/obj"
objs=()
for s in $lib_src; do
    o="$out/obj/$(echo "$s" | tr / _).o"
    if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ -n "$(find userspace -name '*.h' -newer "$o" -print -quit)" ]; then
        clang $cflags -fsanitize=fuzzer-no-link -c "$s" -o "$o" 2>/dev/null || clang ${cflags/-fsanitize=fuzzer,/-fsanitize=} -c "$s" -o "$o"
    fi
    objs+=("$o")
done
pass=0; fail=0
for f in tests/fuzz/fuzz_*.c; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .c)
    [ -z "${FUZZ_ONLY:-}" ] || [[ ",$FUZZ_ONLY," == *",$name,"* ]] || continue
    bin="$out/$name"
    clang $cflags "$f" "${objs[@]}" $libs -o "$bin"
    corpus="$out/corpus-$name"
    mkdir -p "$corpus"
    seeds=()
    [ -d "tests/fuzz/corpus/$name" ] && seeds+=("tests/fuzz/corpus/$name")
    if [ -f "tests/fuzz/$name.seeds" ]; then
        while read -r g; do
            [ -n "$g" ] || continue
            for s in $g; do [ -e "$s" ] && cp -f "$s" "$corpus/" ; done
        done < "tests/fuzz/$name.seeds"
    fi
    echo "fuzz: $name for ${secs}s"
    if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
        -artifact_prefix="$out/$name-" "$corpus" "${seeds[@]}" > "$out/$name.log" 2>&1; then
        pass=$((pass+1))
    else
        fail=$((fail+1))
        echo "fuzz: $name FAILED; last lines of $out/$name.log:" >&2
        tail -30 "$out/$name.log" >&2
    fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
