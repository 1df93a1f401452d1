"""The at-rest fleet of the end-to-end bench: N running jobs that nothing happens to, and what
the controller spends on them while idle (`make bench-e2e`, the "At rest" table).

For each controller (ours as shipped; training-operator v1.8.1), started fresh: for each fleet
size in turn (0 jobs, then more jobs of the fleet's shape added, each in a namespace of its
own, every pod marked Running as a kubelet would and every job Running), a settle time, then
a fixed idle window over which the bench reads the controller's CPU (/proc), the hook's calls
(its /metrics), the controller's API requests (the audit log, by user agent: those on jobs and
their children, which name a namespace, apart from the cluster-wide rest, discovery and watch
renewals, which do not grow with the jobs) and its resident memory. What one more running job
costs a minute is the slope between the smallest and the largest fleet, extrapolated to 1,000
jobs; the cluster-wide requests are counted at their mean over the windows."""

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from localcluster.stack import Stack
from scripts.bench.controllers import TrainingOperator, started
from scripts.bench.observe import audit_events, cpu_seconds, hook_syncs, memory_mib
from scripts.bench.workloads import Scenario, Setting

SETTLE_S = 15.0  # after the last job runs: the syncs its marking caused are over


@dataclass(frozen=True)
class Idle:
    """One idle window of one controller over a fleet of `jobs` running jobs."""

    setting: Setting
    jobs: int
    seconds: float
    cpu: float  # controller CPU over the window (ours: Metacontroller + hook)
    hook_calls: float
    requests: int  # on jobs and their children: the requests that name a namespace
    cluster_requests: int  # the rest: discovery, cluster-wide watches renewed, leases
    rss_mib: float  # controller resident memory at the end (ours: Metacontroller + hook)
    seen: dict[str, int] = field(default_factory=dict)  # "verb resource": count

    def per_minute(self, value: float) -> float:
        return value * 60 / self.seconds


@dataclass(frozen=True)
class Plan:
    """The fleet: its jobs' shape, the fleet sizes measured in turn, the idle window in s."""

    shape: Scenario
    sizes: tuple[int, ...]
    window: float


def fleet(
    stack: Stack,
    audit_log: Path,
    setting: Setting,
    plan: Plan,
    rival: TrainingOperator,
    run_jobs: Callable[[Scenario], str],
    clear: Callable[[], None],
    progress: Callable[[str], None],
) -> list[Idle]:
    """Idle windows over fleets of each size in `plan.sizes` (ascending) of one controller;
    `run_jobs` applies jobs in a new namespace and returns once they all run, `clear` deletes
    them (while the controller runs or after, as `Running.clean_while_running` says)."""
    shape, window = plan.shape, plan.window
    out = []
    running = 0
    with started(stack, setting, setting.flags, rival) as controller:
        for size in plan.sizes:
            if size > running:
                more = Scenario(shape.name, size - running, shape.servers, shape.workers,
                                shape.timeout * (size - running))  # fmt: skip
                run_jobs(more)
                running = size
            time.sleep(SETTLE_S)
            pids = list(controller.pids.values())
            offset = audit_log.stat().st_size
            cpu = [cpu_seconds(pid) for pid in pids]
            calls = hook_syncs(controller.hook.url) if controller.hook else 0.0
            started_at = time.monotonic()
            time.sleep(window)
            seconds = time.monotonic() - started_at
            cpu_used = sum(cpu_seconds(pid) - before for pid, before in zip(pids, cpu, strict=True))
            calls = (hook_syncs(controller.hook.url) - calls) if controller.hook else 0.0
            scoped, cluster = by_scope(audit_log, offset, controller.agent)
            rss = sum(memory_mib(pid)[1] for pid in pids)
            idle = Idle(setting, size, seconds, cpu_used, calls, sum(scoped.values()),
                        sum(cluster.values()), rss, dict(scoped + cluster))  # fmt: skip
            progress(
                f"at rest, {setting.name}, {size} running {shape.name} jobs: "
                f"CPU {idle.per_minute(cpu_used):.3f} s/min, {idle.per_minute(calls):.1f} hook "
                f"calls/min, API requests {dict(scoped)} on jobs and children, {dict(cluster)} "
                f"cluster-wide in {seconds:.0f} s, RSS {rss:.0f} MiB"
            )
            out.append(idle)
        if controller.clean_while_running:
            clear()
    if not controller.clean_while_running:
        clear()
    return out


def by_scope(log: Path, offset: int, agent: str) -> tuple[Counter[str], Counter[str]]:
    """The requests of the controller whose user agent starts with `agent` since `offset`, as
    "verb resource": those that name a namespace (on a job or its children), and the rest."""
    scoped: Counter[str] = Counter()
    cluster: Counter[str] = Counter()
    for event in audit_events(log, offset):
        if not event.get("userAgent", "").startswith(agent):
            continue
        ref = event.get("objectRef") or {}
        what = ref.get("resource") or event.get("requestURI", "").split("?")[0]
        (scoped if ref.get("namespace") else cluster)[f"{event['verb']} {what}"] += 1
    return scoped, cluster


def slope(idles: list[Idle], value: Callable[[Idle], float]) -> float:
    """What one more running job adds a minute: between the smallest and largest fleet."""
    low, high = idles[0], idles[-1]
    if high.jobs == low.jobs:
        return 0.0
    return (high.per_minute(value(high)) - low.per_minute(value(low))) / (high.jobs - low.jobs)


def cluster_wide(idles: list[Idle]) -> float:
    """The cluster-wide requests a minute (discovery, watch renewals), mean over the windows."""
    return sum(i.per_minute(i.cluster_requests) for i in idles) / len(idles)


def requests_at(idles: list[Idle], jobs: int) -> float:
    """All requests a minute at `jobs` running jobs: those on jobs extrapolated, plus the
    cluster-wide mean."""
    return at(idles, jobs, lambda i: i.requests) + cluster_wide(idles)


def at(idles: list[Idle], jobs: int, value: Callable[[Idle], float]) -> float:
    """The figure a minute extrapolated to `jobs` running jobs (the empty cluster's, plus the
    slope per job)."""
    return idles[0].per_minute(value(idles[0])) + slope(idles, value) * (jobs - idles[0].jobs)
