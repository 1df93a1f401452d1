"""Fixtures shared by every tier: the Go tools of scripts/go-tools.sh; the `slow` mark; the
service's JSON log lines; the folder of kept overlay builds; the `fast` hypothesis profile."""

import functools
import io
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _pytest.nodeid import coerce_node_id
from hypothesis import settings

from app.service.jsonlog import JsonFormatter
from tests.support import budgets, kustomize_cache
from tests.support.gotools import GoToolError, obtain

# Modules whose every test is slow: the real server's timeouts, waited out for real; the real
# server started in a process of its own for each test (half a second or more each); a fresh
# clone of the repository, collected and run again by a second pytest.
SLOW_MODULES = {"test_hostile_clients.py", "test_hostile_mix.py", "test_fresh_clone.py"}
SLOW_MODULES |= {"test_http_stack.py", "test_server_lifecycle.py"}
# Modules whose figures a busy machine could spoil (the benches' smoke runs, the hook's memory
# read from /proc): `make unit` runs them alone, after the parallel run of the others.
# Also the modules whose tests share one node id (schemathesis gives each API operation's test
# the same): pytest-xdist's group scheduling tracks tests by node id and would run one of them.
SERIAL_MODULES = {
    "test_bench_e2e_smoke.py",
    "test_bench_latency_smoke.py",
    "test_parse_memory.py",
    "test_fuzz_schemathesis.py",
}


# The tiers in the order a run takes them: those that build nothing first, so that a broken
# rule fails in seconds, and so that on a fresh machine the Go builds `make test` starts in the
# background (scripts/prefetch.sh) are done, or nearly, when the API-server and MXNet tiers
# need them. A folder not listed runs last.
TIER_ORDER = ("unit", "golden", "simulated", "http", "manifests", "apiserver", "e2e")
TESTS = Path(__file__).parent
# `make fast` loads it (`--hypothesis-profile fast`): a fifth of each property test's examples
# (`budgets.examples`); every other run, `make test`'s too, tries them all. Registered here, on
# import, before pytest loads the profile its command line names.
settings.register_profile(budgets.FAST, max_examples=settings().max_examples // budgets.FAST_SHARE)


def tier_rank(path: Path) -> int:
    """Where the tier of the test file at `path` comes in TIER_ORDER."""
    tier = path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else ""
    return TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER)


def pytest_configure(config: pytest.Config) -> None:
    # Overlay builds are kept in pytest's cache, shared by its workers (`--cache-clear` empties it).
    cache = getattr(config, "cache", None)
    kustomize_cache.folder = cache.mkdir("kustomize") if cache is not None else None


# Under pytest-xdist (`--dist loadgroup`, as `make unit` runs), each module goes to one worker
# whole, so that its module fixtures start once, unless a conftest put its tests in a group.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if item.path.name in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(TESTS.parent).as_posix()))
    if getattr(config.option, "loadgroup", False):  # in a worker of `--dist loadgroup`
        for item in items:
            in_group(item)
    items.sort(key=lambda item: tier_rank(item.path))  # stable: each module's order is kept


def in_group(item: pytest.Item) -> None:
    """`<node id>@<group>`, the node id by which pytest-xdist 3.8 hands a test out with its
    group: it sets it through `_nodeid`, which pytest 9 no longer reads (its node id is `_id`)."""
    (mark,) = item.iter_markers("xdist_group")
    if not item.nodeid.endswith(f"@{mark.args[0]}"):
        item._id = coerce_node_id(f"{item.nodeid}@{mark.args[0]}")


@pytest.fixture(scope="session")
def progress(pytestconfig: pytest.Config) -> Callable[[str], None]:
    """Writes a build script's progress line to the terminal, live even under output capture:
    a cold build is silent for minutes."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    reporter = pytestconfig.pluginmanager.getplugin("terminalreporter")

    def write(line: str) -> None:
        if capture is None or reporter is None:
            return
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)

    return write


@pytest.fixture(scope="session")
def go_tool(progress: Callable[[str], None]) -> Callable[[str], Path]:
    """`go_tool("helm")` -> the path of the pinned tool, built on first use (progress shown)."""

    @functools.cache
    def get(name: str) -> Path:
        try:
            paths = obtain([name], progress)
        except GoToolError as error:
            pytest.fail(str(error), pytrace=False)
        key = name.upper().replace("-", "_")
        assert key in paths, f"scripts/go-tools.sh {name} printed no {key}="
        return paths[key]

    return get


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The `mxjob` logger's lines as JsonFormatter writes them."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("mxjob")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    yield out
    logger.removeHandler(handler)
    logger.setLevel(old_level)
