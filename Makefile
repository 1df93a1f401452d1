# One command per task. `make run` serves the hook; `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8080
SOAK_SECONDS ?= 180
# The one version source is app/__init__.py; the image is tagged with it.
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' app/__init__.py)
IMAGE ?= ghcr.io/mxjob-controller/mxjob-controller
PLATFORMS ?= linux/amd64,linux/arm64
DOCKER ?= docker

.PHONY: run test fast lint typecheck unit demo soak image image-push lock

# A .venv whose Python is gone (removed or upgraded away), older than 3.11 or without pip is
# built again. Parsing only looks (`python -B`, nothing written); the recipes below remove and
# rebuild it, so `make -n` changes nothing.
ifneq ($(wildcard $(VENV)),)
ifneq ($(shell $(BIN)/python -B -c 'import sys, pip; print(sys.version_info >= (3, 11))' 2>/dev/null),True)
$(info make: $(VENV) is broken (no working Python 3.11 or later with pip in it); building it again)
$(BIN)/python $(VENV)/.runtime $(VENV)/.dev $(VENV)/.bench: FORCE
endif
endif
FORCE:
# The tests' Python processes keep their bytecode (and pytest its rewritten test modules) in
# .venv/pycache, out of the tree, even where the environment says not to write any
# (PYTHONDONTWRITEBYTECODE=1): compiling and rewriting every module again in every process took
# about 3 s of each worker's 9 s of collection (measured 2026-12-07).
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(abspath $(VENV))/pycache

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	    echo "make: mxjob-controller needs Python 3.11 or later, and $(PYTHON) is" \
	        "$$($(PYTHON) --version 2>&1 || echo missing); run make PYTHON=python3.11 (or newer)" >&2; \
	    exit 1; }
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip || { rm -rf $(VENV); exit 1; }

# The image's lock: every package at the version and hashes the image installs; then the checkout
# itself, editable and without dependencies (the lock has them), for $(BIN)/mxjob-controller.
$(VENV)/.runtime: requirements.lock pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps --editable .
	touch $@

# The images' locks first, so that the venv holds the versions they pin (the lock test reads
# their requirements from it), then what the tests need on top, and the checkout as .runtime has it.
$(VENV)/.dev: requirements.lock examples/image/requirements.lock requirements.txt \
    requirements-dev.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock \
	    -r examples/image/requirements.lock
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps --editable .
	touch $@

run: $(VENV)/.runtime
	$(BIN)/mxjob-controller serve --host $(HOST) --port $(PORT)

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	actionlint=$$(scripts/go-tools.sh actionlint) && $${actionlint#ACTIONLINT=} -shellcheck $(BIN)/shellcheck

typecheck: $(VENV)/.dev
	$(BIN)/mypy

# Most tests wait (on timers, on servers), so they run in WORKERS pytest-xdist processes, each
# module on one worker whole and each worker with its API server (tests/conftest.py,
# tests/apiserver/conftest.py); then the timing-sensitive ones (marked serial) alone, even if the
# first run failed. The thirty slowest tests listed at the end of each: where the suite's time
# goes (docs/development.md).
WORKERS ?= 3
unit: $(VENV)/.dev
	status=0; $(KEEP_BYTECODE) $(BIN)/pytest -n $(WORKERS) --dist loadgroup -m "not serial" --durations=30 \
	    || status=$$?; $(KEEP_BYTECODE) $(BIN)/pytest -m serial --durations=30 && exit $$status

# Every check. The Go builds the tests use start at once in the background, at the lowest CPU
# priority (scripts/prefetch.sh), so that on a fresh machine they overlap the checks that need
# none; their per-build times are printed at the end.
test: $(VENV)/.dev
	PYTHON=$(abspath $(BIN)/python) scripts/prefetch.sh -- \
	    $(MAKE) --no-print-directory lint typecheck unit

# The Kueue tier against Kueue v0.17.0, the older tested release (`make test` runs it against
# v0.19.2, the newest; docs/kueue.md). A cold build of that Kueue takes most of an hour.
.PHONY: test-kueue-0.17
test-kueue-0.17: $(VENV)/.dev
	KUEUE_VERSION=v0.17.0 $(BIN)/pytest tests/apiserver/test_kueue.py \
	    tests/apiserver/test_kueue_admission.py tests/apiserver/test_kueue_pods_ready.py

# The tier to run on every change: no API server, no MXNet, nothing marked slow (`make test`
# runs those too), on two pytest-xdist workers (FAST_WORKERS sets how many), property tests on a
# fifth of their examples (the `fast` hypothesis profile, tests/support/budgets.py); measured
# figures in docs/development.md, which says how to measure them.
FAST_WORKERS ?= 2
fast: $(VENV)/.dev
	$(KEEP_BYTECODE) $(BIN)/pytest -q -n $(FAST_WORKERS) -m "not apiserver and not mxnet and not slow" \
	    --ignore=tests/apiserver --hypothesis-profile fast

# Real MXNet jobs through the real Metacontroller and hook on a loopback kube-apiserver, their
# pods as local processes (docs/e2e.md; needs root).
demo: $(VENV)/.dev
	$(BIN)/python -m e2e.demo

# Line and branch coverage of app/ by every tier that runs it in-process (all but the API-server
# and MXNet tiers, whose hook is a separate process), in one serial process: about 15 minutes.
# The figures it prints are the floor a change to the suite keeps (docs/development.md).
.PHONY: coverage
coverage: $(VENV)/.dev
	$(BIN)/coverage erase
	$(BIN)/coverage run -m pytest -q -p no:cacheprovider -m "not apiserver and not mxnet"
	$(BIN)/coverage json -q -o - | $(BIN)/python -m scripts.coverage_totals

# Sustained concurrent syncs on loopback with a restart half-way (docs/reliability.md).
soak: $(VENV)/.dev
	$(BIN)/python -m scripts.soak --duration $(SOAK_SECONDS)

# The hook against its floor (echo + parse + serialize) on loopback, on the shipped stack
# (httptools, uvloop) and on h11 (asyncio); rewrites docs/performance.md and its plots, which
# says how long a run takes (BENCH_ARGS=--quick for a smoke run, --help for the rest).
BENCH_ARGS ?=
.PHONY: bench bench-e2e bench-steady bench-latency
$(VENV)/.bench: requirements.txt requirements-bench.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-bench.txt
	touch $@

bench: $(VENV)/.bench
	$(BIN)/python -m scripts.bench $(BENCH_ARGS)

# The images' locks (requirements.lock, examples/image/requirements*.lock) compiled again from
# their inputs with pip-tools, and each checked to install under --require-hashes on every
# platform its image is built for (scripts/lock.sh; needs PyPI). Run it after editing an input.
lock: $(VENV)/.dev
	scripts/lock.sh

# The image for this machine's platform, tagged with the version (docs/install.md shows how to
# load it into kind or push it to your registry).
image:
	$(DOCKER) build --label org.opencontainers.image.version=$(VERSION) -t $(IMAGE):$(VERSION) .

# Every platform in PLATFORMS, pushed to IMAGE (needs docker buildx and a registry login); the
# release workflow (.github/workflows/ci.yaml) does this on a tag vVERSION.
image-push:
	$(DOCKER) buildx build --platform $(PLATFORMS) \
	    --label org.opencontainers.image.version=$(VERSION) -t $(IMAGE):$(VERSION) --push .

# The whole stack (kube-apiserver, etcd, Metacontroller v4.17.2, the hook) from `kubectl apply`
# to Running and Succeeded, Metacontroller's defaults beside the shipped flags and
# training-operator v1.8.1 beside both, then a fleet of running jobs at rest; rewrites its part
# of docs/performance.md, which says how long a run takes (BENCH_ARGS=--quick for 1/1/2 and
# 1/16/64 only; BENCH_ARGS=--configmap for the 1/100/1000 job's whole life with MX_CONFIG inline,
# the per-job ConfigMap under Metacontroller's default apply strategy, and as shipped).
bench-e2e: $(VENV)/.dev
	$(BIN)/python -m scripts.bench.e2e $(BENCH_ARGS)

# One sync of a running 1/100/1000 job: Metacontroller's CPU, the request and the hook's time,
# under each apply strategy (prints a table; BENCH_ARGS=--pprof 25 adds Metacontroller's profile).
bench-steady: $(VENV)/.dev
	$(BIN)/python -m scripts.bench.steady $(BENCH_ARGS)

# From the deciding pod change to the MXJob status write, in parts (the work queue, the hook,
# Metacontroller's apply, the status write), typical and 1/100/1000 (prints a table; about 6
# minutes; BENCH_ARGS="--scenarios small --repeat 1" for a smoke run, --help for the rest).
bench-latency: $(VENV)/.dev
	$(BIN)/python -m scripts.bench.latency $(BENCH_ARGS)
