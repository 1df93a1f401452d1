#!/usr/bin/env bash
# Build every Go binary the test suite uses, in two chains, each in the order the suite first
# needs them. `make test` runs its checks under `prefetch.sh -- ...`: the builds then run in the
# background at the lowest CPU priority while lint, typecheck and the tiers that need no build
# run, so on a fresh machine they use the cores those leave idle instead of each one stopping
# the tests that needs it.
#
# Nothing depends on it for correctness. Each build script takes its own lock, so a test that
# needs a binary still being built here waits for that build instead of starting a second one;
# a build that fails here is left to the test that needs it, which runs the script again and
# fails with its error. With warm caches every step is a cache hit of about a second.
#
# Usage: prefetch.sh             the builds, one line per build on stderr with its seconds
#        prefetch.sh -- CMD...   CMD with the builds in the background (their output in
#                                $MXJOB_CACHE_DIR/prefetch.log); CMD's exit status is returned,
#                                builds still running when it ends are stopped, and the
#                                per-build lines are printed at the end
# Environment: as the build scripts (MXJOB_CACHE_DIR, PYTHON, KUEUE_VERSION, METACONTROLLER_SRC,
# METACONTROLLER_BIN, ...).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT=${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mxjob-controller}

log() { printf 'prefetch: %s\n' "$*" >&2; }

# One build; its own output goes to stderr (the log, under `--`).
step() {
    local name=$1 start=$SECONDS rc=0
    shift
    "$@" >/dev/null || rc=$?
    if ((rc == 0)); then
        log "$name: ready after $((SECONDS - start)) s (at $SECONDS s)"
    else
        log "$name: failed (exit $rc) after $((SECONDS - start)) s; the tests that need it build it again"
    fi
}

# Two chains at once, each in the order the suite first needs its builds (tests/conftest.py
# runs the tiers that build nothing first): the tools of `make lint` and the manifests tier
# (actionlint, helm, promtool, the monitoring CRDs, Katib's condition check) and then the
# API-server tier's optional components; beside them the API-server tier's cluster (the
# end-to-end bench's smoke test needs training-operator early, the Kueue modules come late).
# A Go build compiles on every core but fetches its modules on one connection at a time, so a
# second chain compiles while the first downloads. go-tools.sh is run once per tool, so that
# each tool's line has its own time.
builds() {
    {
        step actionlint "$HERE/go-tools.sh" actionlint
        step helm "$HERE/go-tools.sh" helm
        step promtool "$HERE/go-tools.sh" promtool
        step monitoring-crds "$HERE/go-tools.sh" monitoring-crds
        step katib-conditions "$HERE/katib-conditions.sh"
        step kube-controllers "$HERE/go-tools.sh" kube-controllers
        step kube-state-metrics "$HERE/go-tools.sh" kube-state-metrics
    } &
    step kube-apiserver+etcd+kubectl "$HERE/k8s-binaries.sh"
    step metacontroller "$HERE/metacontroller-binary.sh"
    step training-operator "$HERE/training-operator-binary.sh"
    step kueue "$HERE/kueue-binary.sh"
    wait
    log "all builds done after $SECONDS s"
}

# Stop the process group `$1` (the builds' session) and return once none of it is left: SIGTERM,
# up to 10 s for a compiler or a download to exit, then SIGKILL. `wait` would see only its leader.
stop_group() {
    local group=$1 tries
    kill -- -"$group" 2>/dev/null || return 0
    for ((tries = 0; tries < 100; tries++)); do
        kill -0 -- -"$group" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL -- -"$group" 2>/dev/null || true
}

# CMD in the foreground, the builds in a session of their own in the background.
around() {
    local logfile=$CACHE_ROOT/prefetch.log pid rc=0
    mkdir -p "$CACHE_ROOT"
    setsid nice -n 19 "$0" >"$logfile" 2>&1 </dev/null &
    pid=$!
    # On any exit (CMD done, Ctrl-C, a failed step), stop what is still building.
    # shellcheck disable=SC2064 # $pid is expanded now on purpose: it is local to this function
    trap "kill -- -$pid 2>/dev/null || true" EXIT
    log "building in the background (nice 19); output in $logfile"
    "$@" || rc=$?
    if kill -0 "$pid" 2>/dev/null; then
        log "stopping the builds still running (the command has ended)"
        stop_group "$pid"
    fi
    wait "$pid" 2>/dev/null || true
    grep '^prefetch: ' "$logfile" >&2 || true
    return "$rc"
}

usage() {
    log "usage: $0 [-- CMD...]"
    exit 2
}

main() {
    if [[ ${1:-} == -- ]]; then
        shift
        (($# > 0)) || usage
        around "$@"
    elif (($# == 0)); then
        builds
    else
        usage
    fi
}

main "$@"
