#!/usr/bin/env bash
# Obtain a pinned Kueue controller binary and its CRDs for the Kueue tests, cached outside the tree.
#
# Both come from one module on the Go module proxy (sigs.k8s.io/kueue): the binary is built from
# the module's own go.mod/go.sum (`./cmd/kueue`), the CRDs are the module's
# config/components/crd/bases. Progress goes to stderr; the last lines on stdout are
# `KUEUE=<path>` and `KUEUE_CRDS=<dir>`.
#
# Environment:
#   KUEUE_BIN        use this binary as it is (nothing is built; the CRDs still come from the module)
#   MXJOB_CACHE_DIR  cache root (default ~/.cache/mxjob-controller), shared with the other scripts
set -euo pipefail

KUEUE_VERSION=v0.17.0 # the newest release the Go module proxy serves
CACHE_ROOT=${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mxjob-controller}

# shellcheck source=scripts/lib/build.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

# The module's directory in the Go module cache (downloaded from the proxy on first use).
module_dir() {
    local json dir
    json=$(go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION") \
        || die "could not download sigs.k8s.io/kueue@$KUEUE_VERSION from the Go module proxy"
    dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -f $dir/cmd/kueue/main.go ]] || die "sigs.k8s.io/kueue@$KUEUE_VERSION has no cmd/kueue"
    printf '%s' "$dir"
}

build() {
    local src=$1 dest=$2
    log "building Kueue $KUEUE_VERSION with $(go version)"
    log "(modules from the Go module proxy; a first build takes several minutes on 2 cores)"
    (cd "$src" && GOFLAGS="$GOFLAGS -mod=readonly" quiet "$dest/build.log" \
        with_ticker "go build kueue" go build -trimpath \
        -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
        -o "$dest/kueue.tmp" ./cmd/kueue)
    mv "$dest/kueue.tmp" "$dest/kueue"
    log "built $dest/kueue"
}

main() {
    local src dest
    go_env
    dest=$CACHE_ROOT/kueue/$KUEUE_VERSION
    mkdir -p "$dest"
    exec 9>"$dest/.lock"
    flock 9 # concurrent test sessions wait for one build instead of racing
    src=$(module_dir)
    if [[ ! -d $dest/crds ]]; then
        mkdir -p "$dest/crds.tmp"
        cp "$src"/config/components/crd/bases/*.yaml "$dest/crds.tmp/"
        chmod u+w "$dest"/crds.tmp/*.yaml
        mv "$dest/crds.tmp" "$dest/crds"
    fi
    if [[ -n ${KUEUE_BIN:-} ]]; then
        [[ -x $KUEUE_BIN ]] || die "KUEUE_BIN=$KUEUE_BIN is not executable"
        echo "KUEUE=$KUEUE_BIN"
    else
        [[ -x $dest/kueue ]] || build "$src" "$dest"
        echo "KUEUE=$dest/kueue"
    fi
    echo "KUEUE_CRDS=$dest/crds"
}

main "$@"
