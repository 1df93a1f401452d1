# shellcheck shell=bash
# Helpers shared by the build scripts (k8s-binaries.sh, go-tools.sh, metacontroller-binary.sh).
# Sourced, not run: the sourcing script defines `log` and `die` and sets CACHE_ROOT first.

# Print a line every minute while a long step runs, so a caller sees it is alive.
with_ticker() {
    local what=$1 start=$SECONDS next=60 pid rc=0
    shift
    "$@" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if ((SECONDS - start >= next)); then
            log "$what: still running ($((next / 60)) min)"
            next=$((next + 60))
        fi
    done
    wait "$pid" || rc=$?
    return "$rc"
}

# Every Go cache lives in the cache directory, shared by the three scripts, so a cold build is
# reproducible and removable in one place.
go_env() {
    export GOPATH=$CACHE_ROOT/go
    export GOMODCACHE=$CACHE_ROOT/go/pkg/mod
    export GOCACHE=$CACHE_ROOT/go/build-cache
    export GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -modcacherw" CGO_ENABLED=0
    command -v go >/dev/null || die "go is not installed"
}
