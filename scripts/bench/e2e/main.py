"""The end-to-end bench's run: every setting's scenarios on one real stack, the fleet at rest,
and the doc's block written."""

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from localcluster import training_operator as to
from localcluster.rest import Rest as Kube
from localcluster.stack import REPO, real_stack, release_0_1_0_flags, shipped_flags
from scripts.bench.controllers import TRAINING_OPERATOR, TrainingOperator
from scripts.bench.e2e.cli import chosen, cli, fleet_shape
from scripts.bench.e2e.configmap import (
    BEFORE,
    CONFIGMAP_END,
    CONFIGMAP_START,
    DYNAMIC,
    configmap_report,
)
from scripts.bench.e2e.figures import Measure
from scripts.bench.e2e.report import END, START, report
from scripts.bench.e2e.run import at_rest, measure
from scripts.bench.fleet import Idle, Plan
from scripts.bench.observe import LoadAverage
from scripts.bench.report import write_doc
from scripts.bench.workloads import Setting

DOC = REPO / "docs" / "performance.md"


def settings(args: argparse.Namespace) -> list[Setting]:
    """Metacontroller's settings to measure, in order; the shipped flags last."""
    chosen = [Setting("Metacontroller's defaults", ())] if args.defaults else []
    if args.configmap:
        before = release_0_1_0_flags()
        chosen = [Setting(BEFORE, before, inline=True), Setting(DYNAMIC, before)]
    for spec in args.setting:
        name, _, flags = spec.partition("=")
        chosen.append(Setting(name, tuple(flags.split())))
    return [*chosen, Setting("shipped", shipped_flags())]


def measure_all(
    args: argparse.Namespace,
    ours: list[Setting],
    rivals: list[Setting],
    plan: Plan,
    workdir: Path,
    progress: Callable[[str], None],
) -> tuple[list[Measure], list[Idle], str]:
    """Each setting's scenarios on one real stack, and the fleet at rest under ours as shipped
    and training-operator; with the range of the load average meanwhile."""
    audit_log = workdir / "audit.log"
    measures: list[Measure] = []
    idles: list[Idle] = []
    with ExitStack() as scope:
        stack = scope.enter_context(real_stack(workdir, progress, audit_log=audit_log))
        kube = scope.enter_context(Kube(stack.apiserver, user_agent="mxjob-bench"))
        scope.enter_context(to.certificates())
        rival = TrainingOperator(stack, progress)
        with LoadAverage() as load:
            for setting in [*ours, *rivals]:
                for scenario in chosen(args):
                    measures.append(measure(stack, kube, audit_log, scenario, setting, progress,
                                            rival, args.pprof))  # fmt: skip
                if plan.sizes and (setting is ours[-1] or setting.name == TRAINING_OPERATOR):
                    idles += at_rest(stack, kube, audit_log, setting, plan, rival, progress)
    return measures, idles, load.seen


def main(argv: list[str]) -> int:
    args = cli(argv)
    ours = settings(args)
    # Last: once installed, its webhook refuses MXJob writes whenever it is down.
    rivals = [Setting(TRAINING_OPERATOR, ())] if args.training_operator else []
    sizes = tuple(int(n) for n in args.fleet.split(",")) if args.fleet else ()
    plan = Plan(fleet_shape(args.fleet_shape), sizes, args.window)
    started_at = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started_at:6.0f} s] {line}", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="mxjob-bench-e2e-"))
    measures, idles, load = measure_all(args, ours, rivals, plan, workdir, progress)
    seconds = time.monotonic() - started_at
    marks = (CONFIGMAP_START, CONFIGMAP_END) if args.configmap else (START, END)
    if args.configmap:
        text = configmap_report(measures, ours, args, seconds)
    else:
        text = report(measures, [*ours, *rivals], idles, args, seconds, load)
    print(text)
    print(f"logs: {workdir}")
    if args.write:
        write_doc(DOC, *marks, text)
        print(f"wrote {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
