# shellcheck shell=bash
# Helpers shared by the build scripts (k8s-binaries.sh, go-tools.sh, metacontroller-binary.sh).
# Sourced, not run, near the top of the script; `go_env` needs CACHE_ROOT set.

# Progress and errors reach the caller even from inside a step whose output is logged: fd 3 is
# the caller's stderr. A line starts with the script's name, which is how a caller (the tests'
# localcluster/buildscript.py) tells progress from other output.
exec 3>&2
BUILD_SCRIPT=$(basename "$0" .sh)
log() { printf '%s: %s\n' "$BUILD_SCRIPT" "$*" >&3; }
die() { log "ERROR: $*"; exit 1; }

# Run a command with its output in a log file; on failure show the log's last 60 lines (a Go
# build's whole log is thousands of lines) and stop.
quiet() {
    local logfile=$1
    shift
    if ! "$@" >"$logfile" 2>&1; then
        log "command failed: $*"
        tail -n 60 "$logfile" >&3
        die "see the output above (all of it in $logfile)"
    fi
}

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
