#!/usr/bin/env bash
# Smoke test of a built image of the hook: `--version` names app.__version__, `render` checks
# an example, and the image's default command serves GET /healthz. Run by the CI workflow on
# every push and pull request (tests/manifests/test_release.py runs it with a stand-in for
# docker).
#
#   scripts/image-smoke.sh IMAGE
#
# Environment: DOCKER (default docker), PORT (the loopback port to publish, default 18080),
# TIMEOUT (seconds to wait for /healthz, default 30).
set -euo pipefail

image=${1:?usage: scripts/image-smoke.sh IMAGE}
docker=${DOCKER:-docker}
port=${PORT:-18080}
timeout=${TIMEOUT:-30}
cd "$(dirname "$0")/.."
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' app/__init__.py)
[[ -n $version ]] || { echo "image-smoke: no __version__ in app/__init__.py" >&2; exit 1; }

said=$("$docker" run --rm "$image" --version)
if [[ $said != "mxjob-controller $version" ]]; then
    echo "image-smoke: $image --version says '$said', not 'mxjob-controller $version'" >&2
    exit 1
fi
echo "image-smoke: --version: $said"

# render reads the CRD the image carries beside app/ (app/cli/schema.py).
if ! "$docker" run -i --rm "$image" render - <examples/dist-cpu.yaml >/dev/null; then
    echo "image-smoke: $image cannot render examples/dist-cpu.yaml" >&2
    exit 1
fi
echo "image-smoke: render: examples/dist-cpu.yaml"

name=mxjob-smoke-$$
"$docker" run -d --name "$name" -p "127.0.0.1:$port:8080" "$image" >/dev/null
trap '"$docker" rm -f "$name" >/dev/null 2>&1 || true' EXIT
for ((waited = 0; waited < timeout * 2; waited++)); do
    if body=$(curl -fsS "http://127.0.0.1:$port/healthz" 2>/dev/null); then
        echo "image-smoke: GET /healthz: $body"
        exit 0
    fi
    sleep 0.5
done
echo "image-smoke: no answer from GET /healthz on 127.0.0.1:$port within ${timeout}s; logs:" >&2
"$docker" logs "$name" >&2 || true
exit 1
