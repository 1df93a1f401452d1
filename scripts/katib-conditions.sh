#!/usr/bin/env bash
# Build scripts/katib-conditions (Katib's trial success/failure decision, with the gjson Katib
# v0.17 and v0.18 pin) once, cached outside the tree; tests/manifests/test_katib.py runs it.
#
# gjson comes from the Go module proxy and shares the Go caches of scripts/k8s-binaries.sh. One
# build per content of main.go. Progress goes to stderr; the last line on stdout is
# `KATIB_CONDITIONS=<path>`. Environment: MXJOB_CACHE_DIR (default ~/.cache/mxjob-controller).
set -euo pipefail

GJSON_VERSION=1.14.1 # github.com/tidwall/gjson as Katib v0.17.0 and v0.18.0's go.mod require it

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT=${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mxjob-controller}
TOOLS=$CACHE_ROOT/tools

# shellcheck source=scripts/lib/build.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

main() {
    local source dest work
    go_env
    mkdir -p "$TOOLS"
    exec 9>"$TOOLS/.katib-conditions.lock"
    flock 9
    source=$(sha256sum "$HERE/katib-conditions/main.go" | cut -c1-12)
    dest=$TOOLS/katib-conditions-gjson-v$GJSON_VERSION-$source
    work=$dest/.module
    if [[ ! -x $dest/katib-conditions ]]; then
        mkdir -p "$work"
        printf 'module mxjob-controller.test/katib-conditions\n\ngo 1.22\n' >"$work/go.mod"
        cp "$HERE/katib-conditions/main.go" "$work/main.go"
        log "resolving github.com/tidwall/gjson v$GJSON_VERSION from the Go module proxy"
        (cd "$work" && quiet "$work/get.log" go get "github.com/tidwall/gjson@v$GJSON_VERSION")
        log "building katib-conditions"
        (cd "$work" && quiet "$work/build.log" \
            go build -trimpath -ldflags "-s -w" -o "$dest/katib-conditions.tmp" .)
        mv "$dest/katib-conditions.tmp" "$dest/katib-conditions"
        log "built $dest/katib-conditions"
    fi
    echo "KATIB_CONDITIONS=$dest/katib-conditions"
}

main "$@"
