"""One scenario under one controller on the real stack, timed from `kubectl apply`, with the
CPU, memory, requests and syncs it cost; and a fleet at rest under it."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from localcluster.rest import Rest as Kube
from localcluster.stack import Stack
from scripts.bench.controllers import (
    TRAINING_OPERATOR,
    Running,
    TrainingOperator,
    go_memory_mib,
    started,
)
from scripts.bench.e2e.figures import Measure, summary
from scripts.bench.fleet import Idle, Plan, fleet
from scripts.bench.namespaces import cleanup, mark_pods, new_namespace
from scripts.bench.observe import audited, cpu_seconds, hook_log, hook_syncs, memory_mib
from scripts.bench.pprof import CpuProfile, top
from scripts.bench.watch import Seen, wait_for, watching
from scripts.bench.workloads import SCENARIOS, Scenario, Setting, mxjob


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


@dataclass(frozen=True)
class Spent:
    """What a controller's processes spent on a run: CPU seconds each (in `pids` order), the
    hook's syncs, memory (peak, now; MiB) and the Go heap."""

    cpu: list[float]
    syncs: float
    memory: dict[str, tuple[float, float]]
    go: dict[str, float]


def spent_on(controller: Running, run: Callable[[], Seen]) -> tuple[Seen, Spent]:
    """`run` under `controller`: what the watch saw, and what the controller spent on it."""
    pids = list(controller.pids.values())
    cpu_before = [cpu_seconds(pid) for pid in pids]
    syncs_before = hook_syncs(controller.hook.url) if controller.hook else 0.0
    seen = run()
    cpu_after = [cpu_seconds(pid) for pid in pids]
    syncs = hook_syncs(controller.hook.url) - syncs_before if controller.hook else 0.0
    memory = {name: memory_mib(pid) for name, pid in controller.pids.items()}
    go = go_memory_mib(controller.go_metrics)
    cpu = [after - before for before, after in zip(cpu_before, cpu_after, strict=True)]
    return seen, Spent(cpu, syncs, memory, go)


def write_profile(profile: CpuProfile, binary: Path, progress: Callable[[str], None]) -> None:
    """Wait for Metacontroller's CPU profile and write its top functions beside it."""
    profile.wait()
    text = top(profile.out, binary)
    profile.out.with_suffix(".txt").write_text(text)
    progress(f"Metacontroller's CPU profile: {profile.out.with_suffix('.txt')}")


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
    pprof_seconds = pprof_seconds if setting.name != TRAINING_OPERATOR else 0
    flags = setting.flags + ((profile.flag,) if pprof_seconds else ())
    with started(stack, setting, flags, rival) as controller:
        # A fresh controller starts its informers on the first job: not measured.
        warm_up = new_namespace(kube)
        apply_and_time(stack, kube, warm_up, SCENARIOS[0])
        namespace = new_namespace(kube)
        offset = audit_log.stat().st_size

        def run() -> Seen:
            if pprof_seconds:
                profile.start()
            return apply_and_time(stack, kube, namespace, scenario)

        seen, spent = spent_on(controller, run)
        if pprof_seconds:
            write_profile(profile, stack.binary, progress)
        if controller.clean_while_running:
            cleanup(kube, warm_up, namespace)
    requests = audited(audit_log, offset, namespace, controller.agent)
    if not controller.clean_while_running:
        cleanup(kube, warm_up, namespace)
    synced = hook_log(controller.hook.log, namespace) if controller.hook else []
    cpu_metacontroller, cpu_hook = spent.cpu[0], sum(spent.cpu[1:])
    result = Measure(scenario, setting, dict(seen.at), seen.at["marked"], cpu_metacontroller,
                     cpu_hook, requests, spent.syncs, synced, spent.memory, spent.go)  # fmt: skip
    progress(f"{scenario.name}, {setting.name}: " + summary(result))
    return result


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
