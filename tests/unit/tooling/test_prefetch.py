"""scripts/prefetch.sh, the background builds of `make test`, and the tier order that lets them
overlap the tiers that build nothing."""

import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.conftest import TESTS, TIER_ORDER, tier_rank
from tests.support import REPO

PREFETCH = REPO / "scripts" / "prefetch.sh"


def build_commands() -> set[tuple[str, ...]]:
    """What its `builds` function runs: each step's script and arguments."""
    body = PREFETCH.read_text().split("\nbuilds() {\n", 1)[1].split("\n}\n", 1)[0]
    commands = set()
    for line in body.splitlines():
        found = re.search(r'"\$HERE/([\w.-]+\.sh)"(.*)$', line)
        if found:
            commands.add((found[1], *found[2].split()))
    return commands


def test_every_build_script_the_tests_run_is_prefetched() -> None:
    scripts = {command[0] for command in build_commands()}
    builders = {path.name for path in (REPO / "scripts").glob("*.sh")} - {
        "go-tools.sh",  # one tool at a time, checked below
        "prefetch.sh",
        "image-smoke.sh",  # runs an image, builds no binary
        "lock.sh",  # `make lock`: compiles the images' locks from PyPI, builds no binary
    }
    assert builders <= scripts, f"not prefetched: {sorted(builders - scripts)}"


def test_every_go_tool_the_tests_use_is_prefetched() -> None:
    used = set()
    for path in [*(REPO / "tests").rglob("*.py"), *(REPO / "e2e").rglob("*.py")]:
        used |= set(re.findall(r'go_tool\("([\w-]+)"\)', path.read_text()))
    lint = re.search(r"scripts/go-tools\.sh (\w+)", (REPO / "Makefile").read_text())
    assert lint is not None
    assert lint[1] == "actionlint"
    used.add(lint[1])
    tools = {command[1] for command in build_commands() if command[0] == "go-tools.sh"}
    assert {"helm", "kube-state-metrics"} <= used  # the scan finds the calls
    assert used <= tools, f"not prefetched: {sorted(used - tools)}"


def test_tiers_that_build_nothing_run_first() -> None:
    ranks = [tier_rank(TESTS / tier / "test_x.py") for tier in TIER_ORDER]
    assert ranks == sorted(ranks) == list(range(len(TIER_ORDER)))
    assert TIER_ORDER.index("apiserver") > TIER_ORDER.index("manifests")
    assert tier_rank(TESTS / "elsewhere" / "test_x.py") == len(TIER_ORDER)
    assert tier_rank(REPO / "e2e" / "test_x.py") == len(TIER_ORDER)  # outside tests/
    present = {path.relative_to(TESTS).parts[0] for path in TESTS.rglob("test_*.py")}
    assert present <= set(TIER_ORDER), f"tiers not in TIER_ORDER: {present - set(TIER_ORDER)}"


def processes_with(marker: str) -> list[int]:
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:
            continue  # gone, or not ours to read
    return found


@pytest.mark.slow
def test_the_command_decides_the_status_and_its_end_stops_the_builds(tmp_path: Path) -> None:
    token = str(uuid.uuid4())
    env = {**os.environ, "MXJOB_CACHE_DIR": str(tmp_path / "cache"), "PREFETCH_TEST": token}
    # An empty cache: the first build (actionlint) is under way when the command ends.
    done = subprocess.run(
        ["bash", str(PREFETCH), "--", "sh", "-c", "sleep 2; exit 3"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "prefetch: stopping the builds still running" in done.stderr
    assert processes_with(f"PREFETCH_TEST={token}") == []
    log = (tmp_path / "cache" / "prefetch.log").read_text()
    assert "go-tools:" in log  # the build had started


def test_usage_errors_say_so() -> None:
    for args in (["--"], ["helm"]):
        done = subprocess.run(["bash", str(PREFETCH), *args], capture_output=True, text=True)
        assert done.returncode == 2
        assert "usage:" in done.stderr
