"""The end-to-end benchmark on the real stack: `make bench-e2e`.

etcd + kube-apiserver (with an audit log) + the hook + the real Metacontroller v4.17.2, all on
loopback. For each scenario and each Metacontroller setting (its defaults, and the flags the
`with-metacontroller` overlay ships), in one run: `kubectl apply` the MXJobs, then time the
children appearing, the first status condition, and, once the bench has marked every pod
Running through the status subresource (it plays the kubelet: no process runs), the job's
Running condition. CPU seconds of Metacontroller and of the hook come from /proc; API requests
from the audit log; hook calls from the hook's /metrics. Writes docs/performance.md between
the bench-e2e markers.

    .venv/bin/python -m scripts.bench.e2e            # every scenario, ~25 minutes
    .venv/bin/python -m scripts.bench.e2e --quick    # 1/1/2 and 1/16/64 only
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

from e2e import podstatus
from e2e.kube import Kube, path
from e2e.stack import REPO, Stack, real_stack, shipped_flags
from scripts.bench.e2e_report import END, START, Measure, report, summary
from scripts.bench.observe import Seen, audited, cpu_seconds, hook_syncs, wait_for, watching
from scripts.bench.pprof import CpuProfile, top
from scripts.bench.report import write_doc
from scripts.bench.staged import staged_hook
from scripts.bench.workloads import QUICK, SCENARIOS, Scenario, Setting, mxjob
from tests.apiserver.realstack import install_controller

DOC = REPO / "docs" / "performance.md"
MARKERS = 16  # threads patching pod status, as many kubelets would
TYPE_LABEL = "training.kubeflow.org/replica-type"


def mark_running(kube: Kube, namespace: str) -> None:
    """Every pod in `namespace` Running, as its kubelet would report it."""
    pods, _ = kube.list(path("pods", namespace))
    stamp = podstatus.now_stamp()

    def mark(pod: dict[str, Any]) -> None:
        image = pod["spec"]["containers"][0]["image"]
        url = path("pods", namespace, pod["metadata"]["name"]) + "/status"
        kube.merge_patch(url, {"status": podstatus.running(stamp, image)})

    # The Scheduler decides Running (docs/behaviour.md): marked last, after every other pod,
    # so that the time to Running counts from the moment every pod runs.
    schedulers = [p for p in pods if p["metadata"]["labels"].get(TYPE_LABEL) == "scheduler"]
    with ThreadPoolExecutor(MARKERS) as pool:
        list(pool.map(mark, [p for p in pods if p not in schedulers]))
        list(pool.map(mark, schedulers))


def new_namespace(kube: Kube) -> str:
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    kube.create(path("namespaces"), {"metadata": {"name": namespace}})
    return namespace


def apply_and_time(stack: Stack, kube: Kube, namespace: str, scenario: Scenario) -> Seen:
    """`kubectl apply` the scenario's jobs; wait for every child and a condition on every job,
    mark every pod Running, wait for every job's Running condition."""
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
        mark_running(kube, namespace)
        seen.mark("marked")
        wait_for(seen, "running", deadline)
    return seen


def measure(
    stack: Stack,
    kube: Kube,
    audit_log: Path,
    scenario: Scenario,
    setting: Setting,
    progress: Callable[[str], None],
    pprof_seconds: int = 0,
) -> Measure:
    slug = f"{scenario.name.split(' ')[0]}-{setting.name.split(' ')[0].lower()}"
    profile = CpuProfile(pprof_seconds, stack.workdir / f"pprof-{slug}.pb.gz")
    flags = setting.flags + ((profile.flag,) if pprof_seconds else ())
    with ExitStack() as hook:
        if setting.staged:
            install_controller(stack.apiserver, hook.enter_context(staged_hook(stack.hook.url)))
            hook.callback(install_controller, stack.apiserver, stack.hook.url)
        return _measure(stack, kube, audit_log, scenario, setting, progress, profile, flags)


def _measure(
    stack: Stack,
    kube: Kube,
    audit_log: Path,
    scenario: Scenario,
    setting: Setting,
    progress: Callable[[str], None],
    profile: CpuProfile,
    flags: tuple[str, ...],
) -> Measure:
    pprof_seconds = profile.seconds if profile.flag in flags else 0
    with stack.metacontroller(flags) as controller:
        # A freshly started Metacontroller starts its informers on the first job: not measured.
        warm_up = new_namespace(kube)
        apply_and_time(stack, kube, warm_up, SCENARIOS[0])
        cleanup(kube, warm_up)
        namespace = new_namespace(kube)
        offset = audit_log.stat().st_size
        pids = (controller.process.pid, stack.hook.process.pid)
        cpu_before = [cpu_seconds(pid) for pid in pids]
        syncs_before = hook_syncs(stack.hook.url)
        if pprof_seconds:
            profile.start()
        seen = apply_and_time(stack, kube, namespace, scenario)
        cpu_after = [cpu_seconds(pid) for pid in pids]
        syncs = hook_syncs(stack.hook.url) - syncs_before
        if pprof_seconds:
            profile.wait()
            text = top(profile.out, stack.binary)
            profile.out.with_suffix(".txt").write_text(text)
            progress(f"Metacontroller's CPU profile: {profile.out.with_suffix('.txt')}")
    requests = audited(audit_log, offset, namespace)
    cleanup(kube, namespace)
    result = Measure(
        scenario,
        setting,
        dict(seen.at),
        seen.at["marked"],
        cpu_after[0] - cpu_before[0],
        cpu_after[1] - cpu_before[1],
        requests,
        syncs,
    )
    progress(f"{scenario.name}, {setting.name}: " + summary(result))
    return result


def cleanup(kube: Kube, namespace: str) -> None:
    """No controller-manager runs here: delete the jobs and their children by hand (with
    Metacontroller stopped, so that nothing recreates them)."""
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
        "--staged",
        action="store_true",
        help="also measure the shipped setting with the hook's first answer staged (staged.py)",
    )
    parser.add_argument(
        "--no-write", dest="write", action="store_false", help="print only; leave docs/ alone"
    )
    args = parser.parse_args(argv)
    args.argv = argv
    return args


def main(argv: list[str]) -> int:
    args = cli(argv)
    names = args.scenarios.split(",") if args.scenarios else QUICK if args.quick else None
    scenarios = [
        s for s in SCENARIOS if names is None or s.name.split(" ")[0] in names or s.name in names
    ]
    settings = [Setting("Metacontroller's defaults", ())] if args.defaults else []
    for spec in args.setting:
        name, _, flags = spec.partition("=")
        settings.append(Setting(name, tuple(flags.split())))
    settings.append(Setting("shipped", shipped_flags()))
    if args.staged:
        settings.append(Setting("shipped, first answer staged", shipped_flags(), staged=True))
    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started:6.0f} s] {line}", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="mxjob-bench-e2e-"))
    audit_log = workdir / "audit.log"
    measures = []
    with real_stack(workdir, progress, audit_log=audit_log) as stack:
        kube = Kube(stack.apiserver, user_agent="mxjob-bench")
        try:
            for scenario in scenarios:
                for setting in settings:
                    measures.append(
                        measure(stack, kube, audit_log, scenario, setting, progress, args.pprof)
                    )
        finally:
            kube.close()
    text = report(measures, settings, args, time.monotonic() - started)
    print(text)
    print(f"logs: {workdir}")
    if args.write:
        write_doc(DOC, START, END, text)
        print(f"wrote {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
