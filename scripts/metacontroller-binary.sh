#!/usr/bin/env bash
# Obtain a pinned Metacontroller binary for the tests, `make demo` and the end-to-end bench, cached
# outside the tree.
#
# Metacontroller's Go module is named `metacontroller`, not a fetchable path, so `go install`
# cannot get it; it is built from a copy of its source with dependencies from the Go module
# proxy, pinned by the source's go.sum. The source is, in this order: METACONTROLLER_SRC;
# ../shared/third_party/metacontroller beside this checkout (see its SOURCE.md); else the tag
# fetched with git into the cache (once, its commit checked against the pin). Without a network
# that fetch fails at once, naming both ways out. The cache key is the version and a digest of
# the source, so another source of the same version builds again. Progress goes to stderr; the
# last lines on stdout are `METACONTROLLER_SOURCE=<dir>` and `METACONTROLLER=<path>`.
#
# Usage: metacontroller-binary.sh [source]   (`source`: only find or fetch the source)
#
# Environment:
#   METACONTROLLER_BIN  use this binary as it is (nothing is built)
#   METACONTROLLER_SRC  build from this source directory, e.g. an upstream checkout of the tag:
#                       git clone --branch v4.17.2 https://github.com/metacontroller/metacontroller
#   MXJOB_CACHE_DIR     cache root (default ~/.cache/mxjob-controller), shared with k8s-binaries.sh
set -euo pipefail

METACONTROLLER_VERSION=v4.17.2
METACONTROLLER_COMMIT=76b818bdc67ba56570abe5f69f714d56c0ff5c52 # the tag's commit
METACONTROLLER_REPO=https://github.com/metacontroller/metacontroller
PROBE_TIMEOUT=20  # seconds: without a network, fail at once
FETCH_TIMEOUT=600 # seconds for the shallow clone of the tag
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

# The tag's source fetched with git into the cache, its commit checked against the pin.
fetched_source() {
    local dest=$CACHE_ROOT/metacontroller/source-$METACONTROLLER_VERSION shared=$1 error commit
    mkdir -p "${dest%/*}"
    exec 8>"$dest.lock"
    flock 8
    if ! verified "$dest"; then
        rm -rf "$dest" "$dest.tmp"
        log "no Metacontroller source: METACONTROLLER_SRC is unset and $shared does not exist"
        log "fetching Metacontroller $METACONTROLLER_VERSION from $METACONTROLLER_REPO into $dest"
        command -v git >/dev/null || cannot_fetch "$shared" "git is not installed"
        error=$(timeout "$PROBE_TIMEOUT" git ls-remote --exit-code "$METACONTROLLER_REPO" \
            "refs/tags/$METACONTROLLER_VERSION" 2>&1 >/dev/null) \
            || cannot_fetch "$shared" "${error:-no answer within $PROBE_TIMEOUT s}"
        error=$(timeout "$FETCH_TIMEOUT" git -c advice.detachedHead=false clone --quiet --depth 1 \
            --branch "$METACONTROLLER_VERSION" "$METACONTROLLER_REPO" "$dest.tmp" 2>&1) \
            || cannot_fetch "$shared" "${error:-git clone timed out after $FETCH_TIMEOUT s}"
        commit=$(git -C "$dest.tmp" rev-parse HEAD)
        [[ $commit == "$METACONTROLLER_COMMIT" ]] || die "the fetched tag $METACONTROLLER_VERSION \
is commit $commit, not the pinned $METACONTROLLER_COMMIT: refusing it (left in $dest.tmp)"
        mv "$dest.tmp" "$dest"
        log "fetched Metacontroller $METACONTROLLER_VERSION, commit $METACONTROLLER_COMMIT (verified)"
    fi
    exec 8>&-
    SOURCE=$dest
}

# A fetched copy at the pinned commit with nothing changed in it.
verified() {
    [[ -d $1/.git ]] && [[ $(git -C "$1" rev-parse HEAD 2>/dev/null) == "$METACONTROLLER_COMMIT" ]] \
        && [[ -z $(git -C "$1" status --porcelain 2>/dev/null) ]]
}

cannot_fetch() {
    local shared=$1 reason
    reason=$(printf '%s' "$2" | head -n 1)
    die "Metacontroller $METACONTROLLER_VERSION's source is needed (the binary is built from it and \
the tests read its CRDs and manifests) and there is none: METACONTROLLER_SRC is unset, $shared \
does not exist, and fetching it failed ($reason). Either set METACONTROLLER_SRC to a checkout of \
the tag (git clone --branch $METACONTROLLER_VERSION $METACONTROLLER_REPO), or run again with \
network access so that it is fetched into $CACHE_ROOT/metacontroller."
}

# SOURCE: the source directory to build from and read manifests from.
find_source() {
    local shared
    shared=$(cd "$REPO/.." && pwd)/shared/third_party/metacontroller
    if [[ -n ${METACONTROLLER_SRC:-} ]]; then
        SOURCE=$METACONTROLLER_SRC
    elif [[ -d $shared ]]; then
        SOURCE=$shared
    else
        fetched_source "$shared"
    fi
    check_source "$SOURCE"
    SOURCE=$(cd "$SOURCE" && pwd)
}

main() {
    local dest
    if [[ ${1:-} == source ]]; then
        find_source
        echo "METACONTROLLER_SOURCE=$SOURCE"
        return
    fi
    (($# == 0)) || die "usage: $0 [source]"
    if [[ -n ${METACONTROLLER_BIN:-} ]]; then
        [[ -x $METACONTROLLER_BIN ]] || die "METACONTROLLER_BIN=$METACONTROLLER_BIN is not executable"
        echo "METACONTROLLER=$METACONTROLLER_BIN"
        return
    fi
    find_source
    dest=$CACHE_ROOT/metacontroller/$METACONTROLLER_VERSION-$(source_digest "$SOURCE")
    mkdir -p "$dest"
    exec 9>"$dest/.lock"
    flock 9 # concurrent test sessions wait for one build instead of racing
    [[ -x $dest/metacontroller ]] || build "$SOURCE" "$dest"
    echo "METACONTROLLER_SOURCE=$SOURCE"
    echo "METACONTROLLER=$dest/metacontroller"
}

main "$@"
