"""The end-to-end benchmark on the real stack: `make bench-e2e`.

etcd + kube-apiserver (with an audit log) + the controllers, all on loopback: ours (the hook
and the real Metacontroller v4.17.2, under its defaults and under the flags the
`with-metacontroller` overlay ships) and training-operator v1.8.1 as its release ships it
(after ours: once installed, its webhook refuses MXJob writes while it is down). For each
controller and each scenario, in one run, with a fresh controller: `kubectl apply` the MXJobs,
then time the children appearing, the first status condition, and, once the bench has marked
every pod Running through the status subresource (it plays the kubelet: no process runs), the
job's Running condition; over a job's whole life, the Scheduler's exit 0 and the Succeeded
condition too. CPU seconds and peak memory of each process come from /proc; API requests from
the audit log (by user agent); hook calls from the hook's /metrics; the Go heap from the Go
process's /metrics. Then a fleet of running jobs at rest under each (scripts/bench/fleet.py).
Writes docs/performance.md between the bench-e2e markers.

    .venv/bin/python -m scripts.bench.e2e            # every scenario and the fleet, ~45 minutes
    .venv/bin/python -m scripts.bench.e2e --no-defaults  # without Metacontroller's defaults
    .venv/bin/python -m scripts.bench.e2e --quick    # 1/1/2 and 1/16/64 only, no fleet
    .venv/bin/python -m scripts.bench.e2e --configmap  # the big job's life: MX_CONFIG inline,
                                                       # the per-job ConfigMap, as shipped
"""

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml

from localcluster import kubelet as podstatus
from localcluster import training_operator as to
from localcluster.rest import Rest as Kube
from localcluster.rest import path
from localcluster.stack import REPO, Stack, real_stack, release_0_1_0_flags, shipped_flags
from scripts.bench.controllers import TRAINING_OPERATOR, TrainingOperator, go_memory_mib, started
from scripts.bench.e2e_report import (
    BEFORE,
    CONFIGMAP_END,
    CONFIGMAP_START,
    DYNAMIC,
    END,
    START,
    Measure,
    configmap_report,
    report,
    summary,
)
from scripts.bench.fleet import Idle, Plan, fleet
from scripts.bench.observe import (
    LoadAverage,
    Seen,
    audited,
    cpu_seconds,
    hook_log,
    hook_syncs,
    memory_mib,
    wait_for,
    watching,
)
from scripts.bench.pprof import CpuProfile, top
from scripts.bench.report import write_doc
from scripts.bench.workloads import CONFIGMAP, QUICK, SCENARIOS, Scenario, Setting, mxjob

DOC = REPO / "docs" / "performance.md"
MARKERS = 16  # threads patching pod status, as many kubelets would
TYPE_LABEL = "training.kubeflow.org/replica-type"


def mark_pods(kube: Kube, namespace: str, exited: bool = False) -> None:
    """Every pod in `namespace` Running, as its kubelet would report it; with `exited`, the
    Schedulers' pods Succeeded instead (their process exited 0)."""
    pods, _ = kube.list(path("pods", namespace))
    stamp = podstatus.now_stamp()

    def mark(pod: dict[str, Any]) -> None:
        image = pod["spec"]["containers"][0]["image"]
        url = path("pods", namespace, pod["metadata"]["name"]) + "/status"
        if exited:
            status = podstatus.terminated(stamp, stamp, image, 0)
        else:
            status = podstatus.running(stamp, image)
        kube.merge_patch(url, {"status": status})

    # The Scheduler decides Running and Succeeded (docs/behaviour.md): marked last, after
    # every other pod, so that the time to Running counts from the moment every pod runs.
    schedulers = [p for p in pods if p["metadata"]["labels"].get(TYPE_LABEL) == "scheduler"]
    with ThreadPoolExecutor(MARKERS) as pool:
        if not exited:
            list(pool.map(mark, [p for p in pods if p not in schedulers]))
        list(pool.map(mark, schedulers))


def new_namespace(kube: Kube) -> str:
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    kube.create(path("namespaces"), {"metadata": {"name": namespace}})
    return namespace


def apply_and_time(stack: Stack, kube: Kube, namespace: str, scenario: Scenario) -> Seen:
    """`kubectl apply` the scenario's jobs; wait for every child and a condition on every job,
    mark every pod Running, wait for every job's Running condition; for a whole life, mark the
    Schedulers Succeeded and wait for every job's Succeeded condition and the clean-up."""
    jobs = [mxjob(f"job-{i}", scenario) for i in range(scenario.jobs)]
    for job in jobs:
        job["metadata"]["namespace"] = namespace
    manifest = yaml.safe_dump_all(jobs, sort_keys=False)
    with watching(kube, namespace, scenario) as seen:
        seen.start = time.monotonic()
        deadline = seen.start + scenario.timeout
        stack.apiserver.kubectl("apply", "-f", "-", input=manifest)
        for what in ("pods", "services", "condition"):
            wait_for(seen, what, deadline)
        mark_pods(kube, namespace)
        seen.mark("marked")
        wait_for(seen, "running", deadline)
        if scenario.life:
            mark_pods(kube, namespace, exited=True)
            seen.mark("exited")
            wait_for(seen, "succeeded", deadline)
            wait_for(seen, "cleaned", deadline)
    return seen


def measure(
    stack: Stack,
    kube: Kube,
    audit_log: Path,
    scenario: Scenario,
    setting: Setting,
    progress: Callable[[str], None],
    rival: TrainingOperator,
    pprof_seconds: int = 0,
) -> Measure:
    slug = f"{scenario.name.split(' ')[0]}-{setting.name.split(' ')[0].lower()}"
    profile = CpuProfile(pprof_seconds, stack.workdir / f"pprof-{slug}.pb.gz")
    ours = setting.name != TRAINING_OPERATOR
    pprof_seconds = pprof_seconds if ours else 0
    flags = setting.flags + ((profile.flag,) if pprof_seconds else ())
    with started(stack, setting, flags, rival) as controller:
        # A fresh controller starts its informers on the first job: not measured.
        warm_up = new_namespace(kube)
        apply_and_time(stack, kube, warm_up, SCENARIOS[0])
        namespace = new_namespace(kube)
        offset = audit_log.stat().st_size
        pids = list(controller.pids.values())
        cpu_before = [cpu_seconds(pid) for pid in pids]
        syncs_before = hook_syncs(controller.hook.url) if controller.hook else 0.0
        if pprof_seconds:
            profile.start()
        seen = apply_and_time(stack, kube, namespace, scenario)
        cpu_after = [cpu_seconds(pid) for pid in pids]
        syncs = hook_syncs(controller.hook.url) - syncs_before if controller.hook else 0.0
        memory = {name: memory_mib(pid) for name, pid in controller.pids.items()}
        go = go_memory_mib(controller.go_metrics)
        if pprof_seconds:
            profile.wait()
            text = top(profile.out, stack.binary)
            profile.out.with_suffix(".txt").write_text(text)
            progress(f"Metacontroller's CPU profile: {profile.out.with_suffix('.txt')}")
        if controller.clean_while_running:
            cleanup(kube, warm_up, namespace)
    requests = audited(audit_log, offset, namespace, controller.agent)
    if not controller.clean_while_running:
        cleanup(kube, warm_up, namespace)
    cpu = [after - before for before, after in zip(cpu_before, cpu_after, strict=True)]
    result = Measure(
        scenario,
        setting,
        dict(seen.at),
        seen.at["marked"],
        cpu[0],
        sum(cpu[1:]),
        requests,
        syncs,
        hook_log(controller.hook.log, namespace) if controller.hook else [],
        memory,
        go,
    )
    progress(f"{scenario.name}, {setting.name}: " + summary(result))
    return result


def cleanup(kube: Kube, *namespaces: str) -> None:
    """No controller-manager runs here: delete the jobs and their children by hand (ours with
    Metacontroller stopped, so that nothing recreates them)."""
    for namespace in namespaces:
        for resource in ("mxjobs", "pods", "services", "configmaps"):
            kube.delete(path(resource, namespace))


def cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench.e2e", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--scenarios", help="comma-separated scenario names (default: all)")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=FLAGS",
        help="measure these Metacontroller flags too (space-separated)",
    )
    parser.add_argument(
        "--no-defaults",
        dest="defaults",
        action="store_false",
        help="skip Metacontroller's defaults",
    )
    parser.add_argument(
        "--pprof",
        type=int,
        default=0,
        metavar="SECONDS",
        help="profile Metacontroller's CPU for SECONDS from each apply (go tool pprof -top)",
    )
    parser.add_argument(
        "--configmap",
        action="store_true",
        help="only the big job's whole life, side by side: MX_CONFIG inline under release "
        "0.1.0's flags (before), the per-job ConfigMap under them, and as shipped (a few "
        "minutes); writes its own block of the doc",
    )
    parser.add_argument(
        "--training-operator",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure training-operator v1.8.1 too, as its release ships it, after ours "
        "(default: yes; not with --configmap)",
    )
    parser.add_argument(
        "--fleet",
        default="0,10,20",
        metavar="N,N,...",
        help="the at-rest fleet sizes, ascending (default 0,10,20; '' for none)",
    )
    parser.add_argument(
        "--fleet-shape", default="1/16/64", help="the fleet's jobs (default 1/16/64)"
    )
    parser.add_argument(
        "--window",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="each at-rest window (default 120)",
    )
    parser.add_argument(
        "--no-write", dest="write", action="store_false", help="print only; leave docs/ alone"
    )
    args = parser.parse_args(argv)
    args.argv = argv
    if args.configmap or (args.quick and "--fleet" not in argv):
        args.fleet = ""
    if args.configmap:
        args.training_operator = False
    return args


def chosen(args: argparse.Namespace) -> list[Scenario]:
    if args.configmap:
        names: tuple[str, ...] = CONFIGMAP
    elif args.scenarios:
        names = tuple(args.scenarios.split(","))
    elif args.quick:
        names = QUICK
    else:
        return [s for s in SCENARIOS if not s.name.startswith("life")]
    return [s for s in SCENARIOS if s.name in names or s.name.split(" ")[0] in names]


def fleet_shape(text: str) -> Scenario:
    scheduler, servers, workers = (int(n) for n in text.split("/"))
    if scheduler != 1:
        raise SystemExit("--fleet-shape: an MXJob has one Scheduler (1/SERVERS/WORKERS)")
    return Scenario(f"{text}", 1, servers, workers, 300)


def main(argv: list[str]) -> int:
    args = cli(argv)
    scenarios = chosen(args)
    settings = [Setting("Metacontroller's defaults", ())] if args.defaults else []
    if args.configmap:
        before = release_0_1_0_flags()
        settings = [Setting(BEFORE, before, inline=True), Setting(DYNAMIC, before)]
    for spec in args.setting:
        name, _, flags = spec.partition("=")
        settings.append(Setting(name, tuple(flags.split())))
    shipped = Setting("shipped", shipped_flags())
    settings.append(shipped)
    # Last: once installed, its webhook refuses MXJob writes whenever it is down.
    rival_settings = [Setting(TRAINING_OPERATOR, ())] if args.training_operator else []
    sizes = tuple(int(n) for n in args.fleet.split(",")) if args.fleet else ()
    plan = Plan(fleet_shape(args.fleet_shape), sizes, args.window)
    started_at = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started_at:6.0f} s] {line}", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="mxjob-bench-e2e-"))
    audit_log = workdir / "audit.log"
    measures = []
    idles: list[Idle] = []
    with ExitStack() as scope:
        stack = scope.enter_context(real_stack(workdir, progress, audit_log=audit_log))
        kube = scope.enter_context(Kube(stack.apiserver, user_agent="mxjob-bench"))
        scope.enter_context(to.certificates())
        rival = TrainingOperator(stack, progress)
        with LoadAverage() as load:
            for setting in [*settings, *rival_settings]:
                for scenario in scenarios:
                    measures.append(measure(stack, kube, audit_log, scenario, setting, progress,
                                            rival, args.pprof))  # fmt: skip
                if sizes and (setting is shipped or setting.name == TRAINING_OPERATOR):
                    idles += at_rest(stack, kube, audit_log, setting, plan, rival, progress)
    seconds = time.monotonic() - started_at
    marks = (CONFIGMAP_START, CONFIGMAP_END) if args.configmap else (START, END)
    if args.configmap:
        text = configmap_report(measures, settings, args, seconds)
    else:
        text = report(measures, [*settings, *rival_settings], idles, args, seconds, load.seen)
    print(text)
    print(f"logs: {workdir}")
    if args.write:
        write_doc(DOC, *marks, text)
        print(f"wrote {DOC.relative_to(REPO)}")
    return 0


def at_rest(
    stack: Stack,
    kube: Kube,
    audit_log: Path,
    setting: Setting,
    plan: Plan,
    rival: TrainingOperator,
    progress: Callable[[str], None],
) -> list[Idle]:
    """The fleet's idle windows under one controller; its jobs deleted afterwards."""
    namespaces: list[str] = []

    def run_jobs(scenario: Scenario) -> str:
        namespaces.append(new_namespace(kube))
        apply_and_time(stack, kube, namespaces[-1], scenario)
        return namespaces[-1]

    def clear() -> None:
        cleanup(kube, *namespaces)

    return fleet(stack, audit_log, setting, plan, rival, run_jobs, clear, progress)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
