#!/usr/bin/env bash
# Install the Debian packages tokentap builds, tests and benchmarks with.
set -eu
pkgs="build-essential pkg-config clang llvm libclang-rt-14-dev libpcap-dev libcjson-dev zlib1g-dev libcmocka-dev curl tshark python3 python3-aiohttp iproute2 libbpf-dev libelf-dev bpftool"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq $missing
fi
