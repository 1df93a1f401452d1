#!/usr/bin/env bash
# Obtain Kubeflow training-operator v1.8.1, the last release that runs MXJobs, for the migration
# tests; cached outside the tree.
#
# It is built with `go install` from the Go module proxy (the module has no replace directives,
# so its own go.mod and go.sum pin every dependency). Its release manifests come from the same
# module zip: its `manifests/` folder (the kustomize bases and overlays: the kubeflow.org CRDs,
# the ValidatingWebhookConfiguration, the Deployment) is copied beside the binary. Progress
# goes to stderr; the last lines on stdout are `TRAINING_OPERATOR_MANIFESTS=<dir>` and, last,
# `TRAINING_OPERATOR=<path>`.
#
# Environment: MXJOB_CACHE_DIR (default ~/.cache/mxjob-controller), shared with the other
# build scripts.
set -euo pipefail

TRAINING_OPERATOR_VERSION=v1.8.1
MODULE=github.com/kubeflow/training-operator
PACKAGE=$MODULE/cmd/training-operator.v1
CACHE_ROOT=${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mxjob-controller}

# shellcheck source=scripts/lib/build.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

build() {
    local dest=$1
    log "building training-operator $TRAINING_OPERATOR_VERSION with $(go version)"
    log "(modules from the Go module proxy; the first build takes a few minutes on 2 cores)"
    mkdir -p "$dest/.bin"
    GOBIN=$dest/.bin quiet "$dest/build.log" with_ticker "go install training-operator" \
        go install -trimpath -ldflags "-s -w" "$PACKAGE@$TRAINING_OPERATOR_VERSION"
    mv "$dest/.bin/training-operator.v1" "$dest/training-operator"
    rmdir "$dest/.bin"
    log "built $dest/training-operator"
}

manifests() {
    local dest=$1 json dir
    json=$(go mod download -json "$MODULE@$TRAINING_OPERATOR_VERSION" 2>&1) \
        || die "cannot download $MODULE $TRAINING_OPERATOR_VERSION: $json"
    dir=$(printf '%s\n' "$json" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
    [[ -f $dir/manifests/base/crds/kubeflow.org_mxjobs.yaml ]] \
        || die "$MODULE $TRAINING_OPERATOR_VERSION has no manifests/base/crds/kubeflow.org_mxjobs.yaml"
    rm -rf "$dest/manifests.tmp" "$dest/manifests"
    cp -R "$dir/manifests" "$dest/manifests.tmp"
    chmod -R u+w "$dest/manifests.tmp"
    mv "$dest/manifests.tmp" "$dest/manifests"
}

main() {
    local dest=$CACHE_ROOT/training-operator/$TRAINING_OPERATOR_VERSION
    go_env
    mkdir -p "$dest"
    exec 9>"$dest/.lock"
    flock 9 # concurrent test sessions wait for one build instead of racing
    [[ -x $dest/training-operator ]] || build "$dest"
    [[ -f $dest/manifests/overlays/standalone/kustomization.yaml ]] || manifests "$dest"
    echo "TRAINING_OPERATOR_MANIFESTS=$dest/manifests"
    echo "TRAINING_OPERATOR=$dest/training-operator"
}

main "$@"
