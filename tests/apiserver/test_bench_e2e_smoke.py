"""`make bench-e2e` runs: its smallest scenario under the shipped flags, through the real stack.

A smoke run of the bench's code path (its own API server, hook and Metacontroller), not a
timing: it checks that every figure of the table is measured, not how large it is.
"""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_end_to_end_bench_measures_a_small_job() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scripts.bench.e2e", "--scenarios", "small", "--no-defaults",
         "--no-write"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {
        cells[1].strip(): [c.strip() for c in cells[2:-1]]
        for line in done.stdout.splitlines()
        if line.startswith("| ") and len(cells := line.split("|")) > 3
    }
    assert rows["figure"] == ["small 1/1/2 — shipped"]
    for figure in ("all pods, s after apply", "all pods and Services, s",
                   "first condition (every job), s", "Metacontroller CPU per job, s"):  # fmt: skip
        assert float(rows[figure][0]) >= 0, rows[figure]
    # 4 pods and 4 Services created by Metacontroller, seen in the audit log; the hook called.
    creates = rows["of which create / patch / update"][0].split(" / ")[0]
    assert int(creates) >= 8, rows
    assert int(rows["hook calls per job"][0]) >= 1
    assert "--client-go-qps=" in done.stdout
