# Sourced by the bench scripts: every process a bench starts goes into
# started (started+=("$pid")) and is stopped (SIGTERM, then waited for) when
# the script exits; forget PID takes one out once the script stopped it.
started=()
stop_started() {
    for p in "${started[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${started[@]}"; do wait "$p" 2>/dev/null || true; done
    started=()
}
trap stop_started EXIT
forget() { local keep=() p; for p in "${started[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done; started=("${keep[@]}"); }
