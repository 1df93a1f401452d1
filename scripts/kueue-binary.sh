#!/usr/bin/env bash
# Obtain a pinned Kueue controller binary, its CRDs and its aggregated batch roles for the Kueue
# tests, cached outside the tree.
#
# All come from one module on the Go module proxy (sigs.k8s.io/kueue): the binary is built from
# the module's own go.mod/go.sum (`./cmd/kueue`), the CRDs are the module's
# config/components/crd/bases, the roles its config/components/rbac/batch_*_role.yaml. Progress
# goes to stderr; the last lines on stdout are `KUEUE=<path>`, `KUEUE_CRDS=<dir>` and
# `KUEUE_RBAC=<dir>`. `kueue-binary.sh crds` obtains the CRDs and roles alone (a module download,
# no build) and prints their two lines.
#
# Environment:
#   KUEUE_VERSION    the release to obtain (default v0.19.2; `make test-kueue-0.17` sets v0.17.0)
#   KUEUE_BIN        use this binary as it is (nothing is built; the CRDs still come from the module)
#   MXJOB_CACHE_DIR  cache root (default ~/.cache/mxjob-controller), shared with the other scripts
set -euo pipefail

# The newest release the Go module proxy serves (`go list -versions` lists only v0.17.0, but
# the proxy serves later tags by name); v0.17.0 is the other tested version (docs/kueue.md).
KUEUE_VERSION=${KUEUE_VERSION:-v0.19.2}
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

print_manifests() {
    echo "KUEUE_CRDS=$1/crds"
    echo "KUEUE_RBAC=$1/rbac"
}

main() {
    local src dest
    go_env
    dest=$CACHE_ROOT/kueue/$KUEUE_VERSION
    mkdir -p "$dest"
    # Copied before any build, under the lock: once both are there, no build need be waited for.
    if [[ ${1:-} == crds && -d $dest/crds && -d $dest/rbac ]]; then
        print_manifests "$dest"
        return
    fi
    exec 9>"$dest/.lock"
    flock 9 # concurrent test sessions wait for one build instead of racing
    src=$(module_dir)
    if [[ ! -d $dest/crds ]]; then
        mkdir -p "$dest/crds.tmp"
        cp "$src"/config/components/crd/bases/*.yaml "$dest/crds.tmp/"
        chmod u+w "$dest"/crds.tmp/*.yaml
        mv "$dest/crds.tmp" "$dest/crds"
    fi
    # Kueue's aggregated batch roles, which gather every job kind's editor and viewer roles
    # by label (the kueue component's MXJob roles among them).
    if [[ ! -d $dest/rbac ]]; then
        mkdir -p "$dest/rbac.tmp"
        cp "$src"/config/components/rbac/batch_{admin,user}_role.yaml "$dest/rbac.tmp/"
        chmod u+w "$dest"/rbac.tmp/*.yaml
        mv "$dest/rbac.tmp" "$dest/rbac"
    fi
    if [[ ${1:-} == crds ]]; then
        print_manifests "$dest"
        return
    fi
    if [[ -n ${KUEUE_BIN:-} ]]; then
        [[ -x $KUEUE_BIN ]] || die "KUEUE_BIN=$KUEUE_BIN is not executable"
        echo "KUEUE=$KUEUE_BIN"
    else
        [[ -x $dest/kueue ]] || build "$src" "$dest"
        echo "KUEUE=$dest/kueue"
    fi
    print_manifests "$dest"
}

main "$@"
