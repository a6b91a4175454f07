#!/usr/bin/env bash
# build_go_peer.sh BUILD: build tests/e2e/go_tls_peer.go with the system's
# Go (Debian's golang-go) into BUILD/go/go_tls_peer, and a stripped copy
# (-ldflags "-s -w") into BUILD/go/go_tls_stripped; the Go build cache in
# BUILD/go/cache, no module or network lookups. Exit 1 with Go's message
# when it does not build.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1/go"
out=$(cd "$1/go" && pwd) # Go wants its cache and path absolute
export GOCACHE="$out/cache" GOPATH="$out/path" GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local
go build -o "$out/go_tls_peer" "$root/tests/e2e/go_tls_peer.go"
go build -ldflags "-s -w" -o "$out/go_tls_stripped" "$root/tests/e2e/go_tls_peer.go"
