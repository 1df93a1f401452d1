"""`make bench-e2e` runs: its smallest scenario under the shipped flags, through the real stack.

A smoke run of the bench's code path (its own API server, hook and Metacontroller), not a
timing: it checks that every figure of the table is measured, not how large it is.
"""

import subprocess
import sys

from tests.support import REPO


def test_the_end_to_end_bench_measures_a_small_job() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scripts.bench.e2e", "--scenarios", "small", "--no-defaults",
         "--no-write"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    table = [
        line.split("|")[1:-1]
        for line in done.stdout.splitlines()
        if line.startswith(("| scenario |", "| small 1/1/2 |"))
    ]
    assert len(table) == 2, done.stdout
    row = dict(zip((c.strip() for c in table[0]), (c.strip() for c in table[1]), strict=True))
    assert row["Metacontroller"] == "shipped"
    for figure in ("all pods, s", "all pods and Services, s", "first condition, s",
                   "Metacontroller CPU per job, s", "hook CPU per job, s"):  # fmt: skip
        assert float(row[figure]) >= 0, row
    # 4 pods and 4 Services created by Metacontroller, seen in the audit log (under server-side
    # apply an apply patch creates them); the hook called.
    created, patched, _ = (int(n) for n in row["of which create / patch / update"].split(" / "))
    assert created + patched >= 8, row
    assert int(row["hook calls per job"]) >= 1, row
    assert "--client-go-qps=" in done.stdout
