"""`make unit` hands tests out to its pytest-xdist workers by node id (`--dist loadgroup`): two
tests that share one would run once. Those (schemathesis gives each API operation's test the
same id) must be in a module of SERIAL_MODULES, which runs in one process after the others."""

import subprocess
import sys
from collections import Counter

import pytest

from tests.conftest import SERIAL_MODULES
from tests.support import REPO


@pytest.mark.slow
def test_no_two_tests_of_the_parallel_run_share_a_node_id() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", "not serial"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=True,
    ).stdout.splitlines()  # fmt: skip
    counts = Counter(line for line in listed if "::" in line)
    assert len(counts) > 2000, listed[-3:]
    assert sorted(nodeid for nodeid, n in counts.items() if n > 1) == []


def test_the_module_whose_tests_share_an_id_runs_serially() -> None:
    assert "test_fuzz_schemathesis.py" in SERIAL_MODULES
