#!/usr/bin/env bash
# Compile the images' locks from their human-edited inputs, then check that each lock installs
# under --require-hashes, from wheels only, on every platform its image is built for. Needs
# PyPI; run by `make lock` whenever an input changes (tests/manifests/test_locks.py checks the
# locks against their inputs without a network).
#
#   input                              lock                                image's platforms
#   requirements.txt                   requirements.lock                   amd64, arm64
#   examples/image/requirements.txt     examples/image/requirements.lock    amd64, arm64
#   examples/image/requirements-gpu.txt examples/image/requirements-gpu.lock amd64
#
# Environment: LOCK_BIN, the folder of the pip-compile and pip to use (default .venv/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${LOCK_BIN:-.venv/bin}")
nowhere=$(mktemp -d)
trap 'rm -rf "$nowhere"' EXIT
# A machine's own wheel folder must not leak into a lock or stand in for PyPI.
export PIP_FIND_LINKS='' CUSTOM_COMPILE_COMMAND="make lock"

# The images run CPython 3.11 on Debian bookworm (glibc 2.36): these tags and the older ones.
platform_flags() {
    local tag
    for tag in manylinux_2_36 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_17 \
        manylinux2014 manylinux2010 manylinux1; do
        printf -- '--platform=%s_%s\n' "$tag" "$1"
    done
}

lock() {
    local input=$1 output=$2 arch
    shift 2
    (cd "$(dirname "$input")" && "$bin/pip-compile" --quiet --generate-hashes \
        --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
        --output-file="$(basename "$output")" "$(basename "$input")")
    for arch in "$@"; do
        mapfile -t platforms < <(platform_flags "$arch")
        "$bin/pip" install --quiet --dry-run --ignore-installed --target="$nowhere" \
            "${platforms[@]}" --python-version=3.11 --implementation=cp --abi=cp311 \
            --only-binary=:all: --require-hashes --requirement="$output"
        echo "lock: $output installs on $arch with --require-hashes"
    done
}

lock requirements.txt requirements.lock x86_64 aarch64
lock examples/image/requirements.txt examples/image/requirements.lock x86_64 aarch64
lock examples/image/requirements-gpu.txt examples/image/requirements-gpu.lock x86_64
