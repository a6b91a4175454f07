# Shared helpers for the end-to-end scripts; sourced, run from the repo root.
BUILD=${BUILD:-build}
TT="$BUILD/tokentap"
GEN="$BUILD/tools/ttpcapgen"
skip() { echo "SKIP: $*"; exit 77; }
need_root() { [ "$(id -u)" = 0 ] || skip "$1"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# wait for every background job but the ones named
wait_jobs_except() {
    local keep=" $* "
    for j in $(jobs -p); do
        case "$keep" in *" $j "*) ;; *) wait "$j" ;; esac
    done
}
