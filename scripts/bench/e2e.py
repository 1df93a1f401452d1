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
from localcluster.realstack import Hook, composite_controller, install_controller, serve_hook
from localcluster.rest import Rest as Kube
from localcluster.rest import path
from localcluster.stack import REPO, Stack, real_stack, release_0_1_0_flags, shipped_flags
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
from scripts.bench.observe import (
    Seen,
    audited,
    cpu_seconds,
    hook_log,
    hook_syncs,
    wait_for,
    watching,
)
from scripts.bench.pprof import CpuProfile, top
from scripts.bench.report import write_doc
from scripts.bench.workloads import CONFIGMAP, QUICK, SCENARIOS, Scenario, Setting, mxjob

DOC = REPO / "docs" / "performance.md"
MARKERS = 16  # threads patching pod status, as many kubelets would
TYPE_LABEL = "training.kubeflow.org/replica-type"
INLINE_BODY_LIMIT = 192 * 1024 * 1024  # the previous release's MXJOB_MAX_BODY_BYTES


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
    pprof_seconds: int = 0,
) -> Measure:
    slug = f"{scenario.name.split(' ')[0]}-{setting.name.split(' ')[0].lower()}"
    profile = CpuProfile(pprof_seconds, stack.workdir / f"pprof-{slug}.pb.gz")
    flags = setting.flags + ((profile.flag,) if pprof_seconds else ())
    with ExitStack() as scope:
        hook = stack.hook
        if setting.inline:
            env = {"MXJOB_MAX_BODY_BYTES": str(INLINE_BODY_LIMIT)}
            hook = scope.enter_context(serve_hook(stack.workdir, env))
            controller = composite_controller(hook.url)
            kept = controller["spec"]["childResources"]
            kept[:] = [c for c in kept if c["resource"] != "configmaps"]
            stack.apiserver.apply(controller)
            scope.callback(install_controller, stack.apiserver, stack.hook.url)
        args = (stack, hook, kube, audit_log, scenario, setting, progress, profile, flags)
        return _measure(*args)


def _measure(
    stack: Stack,
    hook: Hook,
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
        pids = (controller.process.pid, hook.process.pid)
        cpu_before = [cpu_seconds(pid) for pid in pids]
        syncs_before = hook_syncs(hook.url)
        if pprof_seconds:
            profile.start()
        seen = apply_and_time(stack, kube, namespace, scenario)
        cpu_after = [cpu_seconds(pid) for pid in pids]
        syncs = hook_syncs(hook.url) - syncs_before
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
        hook_log(hook.log, namespace),
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
        "--configmap",
        action="store_true",
        help="only the big job's whole life, side by side: MX_CONFIG inline under release "
        "0.1.0's flags (before), the per-job ConfigMap under them, and as shipped (a few "
        "minutes); writes its own block of the doc",
    )
    parser.add_argument(
        "--no-write", dest="write", action="store_false", help="print only; leave docs/ alone"
    )
    args = parser.parse_args(argv)
    args.argv = argv
    return args


def chosen(args: argparse.Namespace) -> list[Scenario]:
    if args.configmap:
        names: tuple[str, ...] = CONFIGMAP
    elif args.scenarios:
        names = tuple(args.scenarios.split(","))
    elif args.quick:
        names = QUICK
    else:
        return [s for s in SCENARIOS if not s.life]
    return [s for s in SCENARIOS if s.name in names or s.name.split(" ")[0] in names]


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
    settings.append(Setting("shipped", shipped_flags()))
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
    seconds = time.monotonic() - started
    marks = (CONFIGMAP_START, CONFIGMAP_END) if args.configmap else (START, END)
    text = (configmap_report if args.configmap else report)(measures, settings, args, seconds)
    print(text)
    print(f"logs: {workdir}")
    if args.write:
        write_doc(DOC, *marks, text)
        print(f"wrote {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
