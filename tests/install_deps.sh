#!/usr/bin/env bash
# Install the Debian packages tokentap builds, tests and benchmarks with.
set -eu
pkgs="build-essential pkg-config clang llvm libclang-rt-14-dev libpcap-dev libcjson-dev zlib1g-dev libcmocka-dev curl tshark python3 python3-aiohttp python3-uvicorn python3-fastapi iproute2 libbpf-dev libelf-dev bpftool chromium openssl libssl-dev libcapstone-dev golang-go libmicrohttpd-dev libnghttp2-dev nghttp2-client prometheus python3-httpx python3-h2 protobuf-compiler python3-grpcio python3-protobuf strace"
# node and npm for the openai npm client tests: Debian's, unless a node is
# already installed (a NodeSource node bundles its own npm, and Debian's npm
# package would conflict with it; tests/e2e/lib.sh finds either)
command -v node >/dev/null || pkgs="$pkgs nodejs npm"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq $missing
fi
