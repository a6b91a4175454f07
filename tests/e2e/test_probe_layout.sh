#!/usr/bin/env bash
# The probe's data layout that its cost depends on (probe/probe_internal.h:
# FD_LOW): every system call here empties the TLB, and each page the probe
# reads afterwards costs a walk, so the globals of the common path and the
# slots of the low fds (fd_low) share one page: the whole .bss of
# libtokentap-probe.so must fit in one 4 KiB page, fd_low inside it. A
# global added to the probe that pushes .bss over a page fails here.
set -eu
. "$(dirname "$0")/lib.sh"
SO="$BUILD/libtokentap-probe.so"
[ -r "$SO" ] || fail "$SO not built"
command -v readelf > /dev/null && command -v nm > /dev/null || skip "binutils not installed"
read -r start size < <(readelf -SW "$SO" | awk '$2 == ".bss" {print $4, $6}')
[ -n "${start:-}" ] || fail "no .bss in $SO"
first=$((0x$start / 4096)) last=$(((0x$start + 0x$size - 1) / 4096))
[ "$first" = "$last" ] || fail ".bss spans pages $first..$last (0x$start + 0x$size): it must fit one 4 KiB page"
read -r addr len < <(nm -S "$SO" | awk '$4 == "fd_low" {print $1, $2}')
[ -n "${addr:-}" ] || fail "no fd_low in $SO"
[ $((0x$addr / 4096)) = "$first" ] && [ $(((0x$addr + 0x$len - 1) / 4096)) = "$first" ] \
    || fail "fd_low (0x$addr + 0x$len) is not in .bss's page"
echo "probe layout: .bss 0x$size bytes in one page, fd_low (0x$len bytes) with it"
