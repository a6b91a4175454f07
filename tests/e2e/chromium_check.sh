#!/usr/bin/env bash
# chromium_check.sh HTML_FILE SCREENSHOT_PNG - load a self-contained page
# (the audit's --html) in headless Chromium, offline, and check it is clean.
#
# How: two runs of /usr/lib/chromium/chromium (the binary behind the
# Debian /usr/bin/chromium wrapper), each under `timeout`, each with a fresh
# profile, no sandbox (we may be root), no GPU, and every host resolving to
# nothing (--host-resolver-rules), so nothing can reach a network.
#  1. The page as given, --screenshot to SCREENSHOT_PNG, with
#     --enable-logging=stderr --v=0: Chromium copies every console message
#     of the page to stderr as "...:INFO:CONSOLE:LINE] "text", source: URL",
#     console.log, .warn and .error alike, and uncaught exceptions as
#     "Uncaught ...". Any such line fails (the page is meant to log
#     nothing). Chromium's own noise (dbus, gpu, sandbox warnings) never
#     carries CONSOLE, so it is ignored.
#  2. A copy of the page with a probe script inserted first: it reports
#     with console.error, caught as in 1, every element whose load failed
#     (a capturing "error" listener) and, at "load", every entry of
#     performance.getEntriesByType("resource"): a self-contained page loads
#     no resource at all, so any entry (a file, a CDN, a font) fails.
#     --dump-dom of that run: the DOM after load must hold at least 3 <svg.
# Chromium logs no console line for a failed subresource by itself, hence
# the probe; its run is separate so that the screenshot is of the page as is.
# Checked by hand: a page with `throw new Error("x")`, one with
# `console.error("x")`, and one with a missing <img>, fail; a clean page passes.
#
# Exit 0 pass; 1 with a one-line reason; 77 (skip) without chromium;
# 2 on bad usage. CHROMIUM=PATH picks another binary.
set -u

if [ $# -ne 2 ]; then
    echo "usage: chromium_check.sh HTML_FILE SCREENSHOT_PNG" >&2
    exit 2
fi
html=$1 png=$2
[ -r "$html" ] || { echo "FAIL: cannot read $html"; exit 1; }

# Chromium may be being installed right now: wait for it (up to
# CHROMIUM_WAIT_S, default 180 s) while apt or dpkg runs, not otherwise.
waited=0
while [ ! -x /usr/bin/chromium ] && [ "$waited" -lt "${CHROMIUM_WAIT_S:-180}" ] &&
    pgrep -x 'apt|apt-get|dpkg' >/dev/null 2>&1; do
    sleep 2
    waited=$((waited + 2))
done
bin=${CHROMIUM:-/usr/lib/chromium/chromium}
[ -n "${CHROMIUM:-}" ] || [ -x "$bin" ] || bin=/usr/bin/chromium
if [ ! -x "$bin" ]; then echo "skip: chromium not installed"; exit 77; fi

tmp=$(mktemp -d) || { echo "FAIL: mktemp"; exit 1; }
trap 'rm -rf "$tmp"' EXIT

abs=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
flags=(--headless=new --no-sandbox --disable-gpu --no-first-run --no-default-browser-check
    --disable-extensions --disable-background-networking --disable-component-update --disable-sync
    --disable-default-apps --disable-domain-reliability --hide-scrollbars --mute-audio
    --host-resolver-rules="MAP * ~NOTFOUND" --window-size=1400,2400 --virtual-time-budget=3000
    --enable-logging=stderr --v=0)

# The page's console lines and uncaught exceptions in a chromium stderr.
page_messages() {
    grep -E ':CONSOLE(:[0-9]+)?\]|CONSOLE\(|Uncaught' "$1"
}

# 1: the page as given, screenshot.
rm -f "$png"
timeout 90 "$bin" "${flags[@]}" --user-data-dir="$tmp/p1" --screenshot="$png" "file://$abs" \
    >"$tmp/out1" 2>"$tmp/err1"
rc=$?
[ $rc -eq 124 ] && { echo "FAIL: chromium timed out (screenshot run)"; exit 1; }
if msg=$(page_messages "$tmp/err1" | head -1) && [ -n "$msg" ]; then
    echo "FAIL: the page logged to the console: ${msg#*] }"; exit 1
fi
[ -s "$png" ] || { echo "FAIL: no screenshot (chromium exit $rc: $(tail -1 "$tmp/err1"))"; exit 1; }

# 2: the probed copy (anywhere: any resource load fails, found or not); DOM dump.
# The probe goes right after the doctype (else first), before anything
# the page loads; it holds no '&' (awk's sub() would expand it).
probe='<script>(function(){function r(m){console.error("chromium_check: "+m)}
addEventListener("error",function(e){var t=e.target;if(t===window)return;
r("load failed: "+(t.src||t.href||t.data||t.tagName))},true);
addEventListener("load",function(){var l=performance.getEntriesByType("resource");
for(var i=0;i<l.length;i++)r("resource loaded: "+l[i].name)})})()</script>'
copy=$tmp/probed.html
awk -v probe="$probe" '
    NR == 1 { if (!sub(/^[ \t]*<![Dd][Oo][Cc][Tt][Yy][Pp][Ee][^>]*>/, "&" probe)) $0 = probe $0 }
    { print }' "$html" >"$copy" || { echo "FAIL: cannot write $copy"; exit 1; }
timeout 90 "$bin" "${flags[@]}" --user-data-dir="$tmp/p2" --dump-dom "file://$copy" >"$tmp/dom" 2>"$tmp/err2"
rc=$?
[ $rc -eq 124 ] && { echo "FAIL: chromium timed out (dump-dom run)"; exit 1; }
if msg=$(page_messages "$tmp/err2" | head -1) && [ -n "$msg" ]; then
    echo "FAIL: ${msg#*] }"; exit 1
fi
nsvg=$(grep -o '<svg' "$tmp/dom" | wc -l)
[ "$nsvg" -ge 3 ] || { echo "FAIL: the DOM holds $nsvg <svg> elements, want at least 3 (chromium exit $rc)"; exit 1; }

echo "ok: no console message, no resource load, $nsvg svg, screenshot $png"
exit 0
