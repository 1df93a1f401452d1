"""The latency bench's command: each setting, scenario and run, then the table of medians."""

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import scripts.bench.latency as latency
from localcluster.rest import Rest as Kube
from localcluster.stack import Stack
from scripts.bench.latency import AGENT
from scripts.bench.latency.breakdown import Breakdown
from scripts.bench.latency.job import REPLICA_SERVICES, one_job
from scripts.bench.latency.stack import latency_stack, settings
from scripts.bench.latency.table import header, median_row, said, with_services
from scripts.bench.report import machine, table
from scripts.bench.workloads import SCENARIOS, Scenario

DEFAULT_SCENARIOS = ("typical", "large")
TRACE_FLAGS = ("--zap-log-level=4", "--zap-time-encoding=epoch")
Rows = list[list[str]]
Dump = list[dict[str, Any]]


def cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.bench.latency", description=latency.__doc__
    )
    parser.add_argument(
        "--scenarios",
        default=",".join(DEFAULT_SCENARIOS),
        help="comma-separated scenario names or their first word (default: typical,large)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="jobs per scenario and setting")
    parser.add_argument(
        "--settings",
        default="shipped",
        help="comma-separated: shipped (server-side-apply), dynamic (dynamic-apply)",
    )
    parser.add_argument(
        "--trace", action="store_true", help="Metacontroller at --zap-log-level=4 (see above)"
    )
    parser.add_argument("--json", type=Path, help="also write every breakdown here")
    parser.add_argument(
        "--replica-services",
        default="all",
        help=f"comma-separated values of the jobs' {REPLICA_SERVICES} annotation (all: none), "
        "taken in turn job by job within each scenario, e.g. all,scheduler",
    )
    return parser.parse_args(argv)


def chosen(names: list[str]) -> list[Scenario]:
    """The scenarios named, or named by their first word; never a whole life."""
    return [
        s for s in SCENARIOS if not s.life and (s.name in names or s.name.split(" ")[0] in names)
    ]


def one_scenario(
    stack: Stack, kube: Kube, audit_log: Path, scenario: Scenario, trace: Path | None,
    label: str, args: argparse.Namespace, progress: Callable[[str], None],
) -> tuple[Rows, Dump]:  # fmt: skip
    """The scenario's runs under one setting, each replica-services value in turn: a row of
    medians per condition and value, and every breakdown."""
    kinds = args.replica_services.split(",")
    found: dict[str, list[Breakdown]] = {v: [] for v in kinds}
    dump: Dump = []
    for n, value in ((n, v) for n in range(args.repeat) for v in kinds):
        got = one_job(stack, kube, audit_log, scenario, trace, value)
        for b in got:
            progress(f"{scenario.name}, {with_services(label, value)}, run {n + 1}: {said(b)}")
        found[value] += got
        dump += [{"scenario": scenario.name, "setting": label, "run": n,
                  "replica_services": value} | vars(b)
                 for b in got]  # fmt: skip
    rows = [
        median_row(f"{scenario.name}, {condition}", with_services(label, value),
                   [b for b in found[value] if b.condition == condition], args.trace)
        for condition in ("Running", "Succeeded")
        for value in kinds
    ]  # fmt: skip
    return rows, dump


def measure_all(
    args: argparse.Namespace, workdir: Path, progress: Callable[[str], None]
) -> tuple[Rows, Dump]:
    """Every setting's scenarios on one latency stack, a fresh Metacontroller per setting."""
    rows: Rows = []
    dump: Dump = []
    scenarios = chosen(args.scenarios.split(","))
    with latency_stack(workdir, progress) as (stack, audit_log):
        kube = Kube(stack.apiserver, user_agent=AGENT)
        try:
            for label, flags in settings(args.settings.split(",")):
                extra = TRACE_FLAGS if args.trace else ()
                with stack.metacontroller(flags + extra) as controller:
                    trace = controller.log if args.trace else None
                    one_job(stack, kube, audit_log, SCENARIOS[0], trace)  # warm-up: not measured
                    for scenario in scenarios:
                        more = one_scenario(
                            stack, kube, audit_log, scenario, trace, label, args, progress
                        )
                        rows += more[0]
                        dump += more[1]
        finally:
            kube.close()
    return rows, dump


def load_average() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def main(argv: list[str]) -> int:
    args = cli(argv)
    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started:6.0f} s] {line}", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="mxjob-bench-latency-"))
    load = load_average()
    rows, dump = measure_all(args, workdir, progress)
    command = " ".join(["python -m scripts.bench.latency", *argv])
    seconds, end = time.monotonic() - started, load_average()
    print(f"\n`make bench-latency` (`{command}`) in {seconds:,.0f} s; load average (1, 5, 15 "
          f"min) at the start {' '.join(load)}, at the end {' '.join(end)}\n")  # fmt: skip
    print("\n".join(machine("Metacontroller, the hook, etcd, kube-apiserver and the bench")))
    print()
    print("\n".join(table(header(args.trace), rows)))
    print(f"\nlogs: {workdir}")
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
