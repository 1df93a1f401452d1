#!/usr/bin/env bash
# Obtain a pinned Metacontroller binary for the tests, `make demo` and the end-to-end bench, cached
# outside the tree.
#
# Metacontroller's Go module is named `metacontroller`, not a fetchable path, so `go install`
# cannot get it; it is built from a copy of its source (by default ../shared/third_party/
# metacontroller beside this checkout; see its SOURCE.md) with dependencies from the Go module
# proxy, pinned by the source's go.sum. The cache key is the version and a digest of the source,
# so another source of the same version builds again. Progress goes to stderr; the last line on
# stdout is `METACONTROLLER=<path>`.
#
# Environment:
#   METACONTROLLER_BIN  use this binary as it is (nothing is built)
#   METACONTROLLER_SRC  build from this source directory, e.g. an upstream checkout of the tag:
#                       git clone --branch v4.17.2 https://github.com/metacontroller/metacontroller
#   MXJOB_CACHE_DIR     cache root (default ~/.cache/mxjob-controller), shared with k8s-binaries.sh
set -euo pipefail

METACONTROLLER_VERSION=v4.17.2
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE_ROOT=${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mxjob-controller}

# shellcheck source=scripts/lib/build.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

check_source() {
    local src=$1
    [[ -d $src ]] || die "no Metacontroller source at $src: set METACONTROLLER_SRC to a checkout \
of metacontroller $METACONTROLLER_VERSION, or METACONTROLLER_BIN to a binary"
    [[ -f $src/go.mod && -f $src/pkg/cmd/metacontroller/main.go ]] \
        || die "$src is not Metacontroller's source (no go.mod or pkg/cmd/metacontroller/main.go)"
    grep -q '^module metacontroller$' "$src/go.mod" || die "$src/go.mod is not module metacontroller"
}

# A digest of what the build reads: go.mod, go.sum and every non-test Go file under pkg/.
source_digest() {
    local src=$1
    (cd "$src" && find go.mod go.sum pkg -type f \
        \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) \
        | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16
}

build() {
    local src=$1 dest=$2 log_file
    go_env
    GOFLAGS+=" -mod=readonly" # only the versions the source's go.sum pins
    mkdir -p "$dest"
    log_file=$dest/build.log
    log "building Metacontroller $METACONTROLLER_VERSION from $src with $(go version)"
    log "(modules from the Go module proxy; the first build takes a few minutes on 2 cores)"
    (cd "$src" && quiet "$log_file" with_ticker "go build metacontroller" go build -trimpath \
        -ldflags "-s -w -X main.version=$METACONTROLLER_VERSION" \
        -o "$dest/metacontroller.tmp" ./pkg/cmd/metacontroller)
    mv "$dest/metacontroller.tmp" "$dest/metacontroller"
    log "built $dest/metacontroller"
}

main() {
    if [[ -n ${METACONTROLLER_BIN:-} ]]; then
        [[ -x $METACONTROLLER_BIN ]] || die "METACONTROLLER_BIN=$METACONTROLLER_BIN is not executable"
        echo "METACONTROLLER=$METACONTROLLER_BIN"
        return
    fi
    local src dest
    src=${METACONTROLLER_SRC:-$REPO/../shared/third_party/metacontroller}
    check_source "$src"
    src=$(cd "$src" && pwd)
    dest=$CACHE_ROOT/metacontroller/$METACONTROLLER_VERSION-$(source_digest "$src")
    mkdir -p "$dest"
    exec 9>"$dest/.lock"
    flock 9 # concurrent test sessions wait for one build instead of racing
    [[ -x $dest/metacontroller ]] || build "$src" "$dest"
    echo "METACONTROLLER=$dest/metacontroller"
}

main "$@"
