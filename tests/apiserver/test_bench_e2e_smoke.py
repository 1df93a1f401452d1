"""`make bench-e2e` runs: its smallest scenario under the shipped flags and under
training-operator v1.8.1, and a one-job fleet at rest under each, through the real stack.

A smoke run of the bench's code path (its own API server, hook, Metacontroller and
training-operator), not a timing: it checks that every figure of its tables is measured, not
how large it is, and that a running job at rest gets no hook call.
"""

import subprocess
import sys

from tests.support import REPO

TO = "training-operator v1.8.1"


def rows(text: str, header: str) -> list[dict[str, str]]:
    """The markdown table whose header starts with `header`, as dicts."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    cells = [
        [c.strip() for c in line.split("|")[1:-1]] for line in lines[first:] if line.startswith("|")
    ]
    out = []
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        out.append(dict(zip(cells[0], (c.strip() for c in line.split("|")[1:-1]), strict=True)))
    return out


def test_the_end_to_end_bench_measures_both_controllers_and_a_fleet_at_rest() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scripts.bench.e2e", "--scenarios", "small", "--no-defaults",
         "--fleet", "1", "--fleet-shape", "1/1/2", "--window", "10", "--no-write"],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "--client-go-qps=" in out
    assert "load average (1 min, /proc/loadavg) during the run: " in out
    results = {r["controller"]: r for r in rows(out, "scenario")}
    assert set(results) == {"shipped", TO}, out
    for row in results.values():
        for figure in ("all pods, s", "all pods and Services, s", "first condition, s",
                       "Running after the last pod runs, s",
                       "Metacontroller (or training-operator) CPU per job, s"):  # fmt: skip
            assert float(row[figure]) >= 0, row
        assert float(row["controller peak RSS, MiB"].replace(",", "")) > 0, row
        # 4 pods and 4 Services created, seen in the audit log by the controller's user agent
        # (under server-side apply an apply patch creates them).
        created, patched, _ = (int(n) for n in row["of which create / patch / update"].split(" / "))
        assert created + patched >= 8, row
    assert int(results["shipped"]["hook calls per job"]) >= 1, results
    assert results[TO]["hook calls per job"] == "-", results

    side = {r["figure"]: r for r in rows(out, "figure")}
    for label in ("apply → all pods and Services", "controller peak RSS (ours: Metacontroller + hook)",
                  "API requests per job"):  # fmt: skip
        row = side[f"small 1/1/2: {label}"]
        for cell in (row[TO], row["ours (shipped)"]):
            assert float(cell.split()[0].replace(",", "")) > 0, row
        assert row["ours / training-operator"].endswith("x"), row

    idle = [r for r in rows(out, "controller") if r["running 1/1/2 jobs"] == "1"]
    assert {r["controller"] for r in idle} == {"shipped", TO}, out
    for row in idle:
        assert float(row["controller CPU, s per minute"]) >= 0, row
        assert float(row["API requests per minute on jobs and children"]) >= 0, row
        assert float(row["cluster-wide API requests per minute"]) >= 0, row
        assert float(row["controller RSS, MiB"].replace(",", "")) > 0, row
    (ours,) = [r for r in idle if r["controller"] == "shipped"]
    assert float(ours["hook calls per minute"]) == 0, ours
    targets = {r["target (ours as shipped)"]: r for r in rows(out, "target (ours as shipped)")}
    assert targets["at rest: 0 hook calls"]["met"] == "**met**", targets
