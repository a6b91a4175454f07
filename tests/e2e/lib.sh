# Shared helpers for the end-to-end scripts; sourced, run from the repo root.
BUILD=${BUILD:-build}
TT="$BUILD/tokentap"
GEN="$BUILD/tools/ttpcapgen"
skip() { echo "SKIP: $*"; exit 77; }
need_root() { [ "$(id -u)" = 0 ] || skip "$1"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
