# One command per task. `make run` serves the hook; `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8080
SOAK_SECONDS ?= 180

.PHONY: run test lint typecheck unit demo soak

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

run: $(VENV)/.runtime
	$(BIN)/python -m app serve --host $(HOST) --port $(PORT)

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(VENV)/.dev
	$(BIN)/mypy

unit: $(VENV)/.dev
	$(BIN)/pytest

test: lint typecheck unit

# A real MXNet job through the real hook, its pods as local processes (docs/e2e.md; needs root).
demo: $(VENV)/.dev
	$(BIN)/python -m e2e.demo

# Sustained concurrent syncs on loopback with a restart half-way (docs/reliability.md).
soak: $(VENV)/.dev
	$(BIN)/python -m scripts.soak --duration $(SOAK_SECONDS)

# The hook against an echo baseline on loopback; rewrites docs/performance.md and its plot
# (a few minutes; BENCH_ARGS=--quick for a smoke run, --help for the rest).
BENCH_ARGS ?=
.PHONY: bench
$(VENV)/.bench: requirements.txt requirements-bench.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-bench.txt
	touch $@

bench: $(VENV)/.bench
	$(BIN)/python -m scripts.bench $(BENCH_ARGS)
