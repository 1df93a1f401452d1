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
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from e2e import podstatus
from e2e.kube import Kube, path
from e2e.stack import REPO, Stack, real_stack, shipped_flags
from scripts.bench.report import machine, table, write_doc

DOC = REPO / "docs" / "performance.md"
START, END = "<!-- bench-e2e:start -->", "<!-- bench-e2e:end -->"
EXAMPLE = REPO / "examples" / "dist-cpu.yaml"
TICK = 0.05
MARKERS = 16  # threads patching pod status, as many kubelets would
CLK_TCK = os.sysconf("SC_CLK_TCK")
TYPE_LABEL = "training.kubeflow.org/replica-type"


@dataclass(frozen=True)
class Scenario:
    name: str
    jobs: int
    servers: int
    workers: int
    timeout: float

    @property
    def pods(self) -> int:
        return self.jobs * (1 + self.servers + self.workers)


SCENARIOS = (
    Scenario("small 1/1/2", 1, 1, 2, 120),
    Scenario("typical 1/16/64", 1, 16, 64, 300),
    Scenario("20 small jobs 1/2/2", 20, 2, 2, 300),
    Scenario("large 1/100/1000", 1, 100, 1000, 1200),
)
QUICK = ("small 1/1/2", "typical 1/16/64")


@dataclass(frozen=True)
class Setting:
    name: str
    flags: tuple[str, ...]


def mxjob(name: str, scenario: Scenario) -> dict[str, Any]:
    """examples/dist-cpu.yaml with the scenario's replica counts."""
    job: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    job["metadata"]["name"] = name
    specs = job["spec"]["mxReplicaSpecs"]
    specs["Server"]["replicas"] = scenario.servers
    specs["Worker"]["replicas"] = scenario.workers
    return job


# ---------------------------------------------------------------- what the cluster shows


@dataclass
class Seen:
    """Times (monotonic) at which the namespace reached each state, from watch events."""

    start: float
    pods: set[str] = field(default_factory=set)
    services: set[str] = field(default_factory=set)
    conditions: dict[str, set[str]] = field(default_factory=dict)
    at: dict[str, float] = field(default_factory=dict)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def mark(self, what: str) -> None:
        self.at.setdefault(what, time.monotonic() - self.start)


@contextmanager
def watching(kube: Kube, namespace: str, scenario: Scenario) -> Iterator[Seen]:
    seen = Seen(time.monotonic())
    stop = threading.Event()

    def follow(resource: str, on_event: Callable[[str, dict[str, Any]], None]) -> None:
        url = path(resource, namespace)
        _, version = kube.list(url)
        ready.release()
        for event in kube.watch(url, version, stop):
            with seen.changed:
                on_event(event["type"], event["object"])
                seen.changed.notify_all()

    def on_pod(kind: str, pod: dict[str, Any]) -> None:
        if kind == "ADDED":
            seen.pods.add(pod["metadata"]["name"])
            if len(seen.pods) == scenario.pods:
                seen.mark("pods")

    def on_service(kind: str, service: dict[str, Any]) -> None:
        if kind == "ADDED":
            seen.services.add(service["metadata"]["name"])
            if len(seen.services) == scenario.pods:
                seen.mark("services")

    def on_job(kind: str, job: dict[str, Any]) -> None:
        conditions = (job.get("status") or {}).get("conditions") or []
        true = {c["type"] for c in conditions if c.get("status") == "True"}
        seen.conditions[job["metadata"]["name"]] = true
        if len(seen.conditions) == scenario.jobs:
            if all(seen.conditions.values()):
                seen.mark("condition")
            if all("Running" in c for c in seen.conditions.values()):
                seen.mark("running")

    ready = threading.Semaphore(0)
    threads = [
        threading.Thread(target=follow, args=args, daemon=True)
        for args in (("pods", on_pod), ("services", on_service), ("mxjobs", on_job))
    ]
    for thread in threads:
        thread.start()
    for _ in threads:
        if not ready.acquire(timeout=60):
            raise RuntimeError("a watch did not start")
    try:
        yield seen
    finally:
        stop.set()


def wait_for(seen: Seen, what: str, deadline: float) -> float:
    with seen.changed:
        while what not in seen.at:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{what} not reached; seen {len(seen.pods)} pods, "
                    f"{len(seen.services)} Services, {seen.conditions}"
                )
            seen.changed.wait(timeout=1)
        return seen.at[what]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def hook_syncs(url: str) -> float:
    text = httpx.get(f"{url}/metrics", trust_env=False, timeout=30).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("mxjob_sync_requests_total{")
    )


def audited(log: Path, offset: int, namespace: str) -> Counter[str]:
    """Metacontroller's requests in `namespace` since `offset`, by verb."""
    verbs: Counter[str] = Counter()
    with log.open("rb") as lines:
        lines.seek(offset)
        for line in lines:
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            agent = event.get("userAgent", "")
            if ref.get("namespace") == namespace and agent.startswith("metacontroller"):
                verbs[event["verb"]] += 1
    return verbs


# ---------------------------------------------------------------- one measurement


@dataclass
class Measure:
    scenario: Scenario
    setting: Setting
    at: dict[str, float]
    marked: float
    cpu_metacontroller: float
    cpu_hook: float
    requests: Counter[str]
    syncs: float

    def per_job(self, value: float) -> float:
        return value / self.scenario.jobs


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
) -> Measure:
    with stack.metacontroller(setting.flags) as controller:
        # A freshly started Metacontroller starts its informers on the first job: not measured.
        warm_up = new_namespace(kube)
        apply_and_time(stack, kube, warm_up, SCENARIOS[0])
        cleanup(kube, warm_up)
        namespace = new_namespace(kube)
        offset = audit_log.stat().st_size
        pids = (controller.process.pid, stack.hook.process.pid)
        cpu_before = [cpu_seconds(pid) for pid in pids]
        syncs_before = hook_syncs(stack.hook.url)
        seen = apply_and_time(stack, kube, namespace, scenario)
        cpu_after = [cpu_seconds(pid) for pid in pids]
        syncs = hook_syncs(stack.hook.url) - syncs_before
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
    for resource in ("mxjobs", "pods", "services"):
        kube.delete(path(resource, namespace))


def summary(m: Measure) -> str:
    at = m.at
    return (
        f"pods {at['pods']:.1f} s, all children {children(m):.1f} s, "
        f"first condition {at['condition']:.1f} s, Running {running_after(m):.2f} s "
        f"after the last pod was marked; CPU/job Metacontroller "
        f"{m.per_job(m.cpu_metacontroller):.2f} s, hook {m.per_job(m.cpu_hook):.2f} s; "
        f"{m.per_job(sum(m.requests.values())):.0f} API requests and "
        f"{m.per_job(m.syncs):.0f} syncs per job"
    )


def children(m: Measure) -> float:
    return max(m.at["pods"], m.at["services"])


def running_after(m: Measure) -> float:
    return m.at["running"] - m.marked


# ---------------------------------------------------------------- report


ROWS: tuple[tuple[str, Callable[[Measure], str]], ...] = (
    ("all pods, s after apply", lambda m: f"{m.at['pods']:.1f}"),
    ("all pods and Services, s", lambda m: f"{children(m):.1f}"),
    ("first condition (every job), s", lambda m: f"{m.at['condition']:.1f}"),
    ("Running after the last pod runs, s", lambda m: f"{running_after(m):.2f}"),
    ("Metacontroller CPU per job, s", lambda m: f"{m.per_job(m.cpu_metacontroller):.2f}"),
    ("hook CPU per job, s", lambda m: f"{m.per_job(m.cpu_hook):.2f}"),
    (
        "API requests per job (Metacontroller)",
        lambda m: f"{m.per_job(sum(m.requests.values())):,.0f}",
    ),
    (
        "  of which create / patch / update",
        lambda m: " / ".join(
            f"{m.per_job(m.requests[v]):,.0f}" for v in ("create", "patch", "update")
        ),
    ),
    ("hook calls per job", lambda m: f"{m.per_job(m.syncs):,.0f}"),
)


def results_table(measures: list[Measure], settings: list[Setting]) -> list[str]:
    scenarios = list(dict.fromkeys(m.scenario.name for m in measures))
    found = {(m.scenario.name, m.setting.name): m for m in measures}
    header = ["figure"] + [f"{s} — {t.name}" for s in scenarios for t in settings]
    rows = [
        [label]
        + [
            cell(found[(s, t.name)]) if (s, t.name) in found else "—"
            for s in scenarios
            for t in settings
        ]
        for label, cell in ROWS
    ]
    return table(header, rows)


# The targets, for the shipped setting: (scenario, figure, limit, what).
TO_CHILDREN_S = 6.9  # training-operator v1.8.1, typical job, its defaults (median of 2)
TO_CPU_S = 0.43
TARGETS: tuple[tuple[str, str, Callable[[Measure], float], float], ...] = (
    ("large 1/100/1000", "all 2,202 children ≤ 60 s", children, 60.0),
    ("large 1/100/1000", "first condition ≤ 5 s", lambda m: m.at["condition"], 5.0),
    ("20 small jobs 1/2/2", "all pods ≤ 10 s", lambda m: m.at["pods"], 10.0),
    (
        "typical 1/16/64",
        f"all children ≤ training-operator's {TO_CHILDREN_S} s",
        children,
        TO_CHILDREN_S,
    ),
    (
        "typical 1/16/64",
        f"Metacontroller + hook CPU ≤ 2x training-operator's {TO_CPU_S} s",
        lambda m: m.cpu_metacontroller + m.cpu_hook,
        2 * TO_CPU_S,
    ),
)


def targets_table(measures: list[Measure], setting: Setting) -> list[str]:
    rows = []
    for scenario, what, figure, limit in TARGETS:
        found = [m for m in measures if m.scenario.name == scenario and m.setting == setting]
        if not found:
            continue
        value = figure(found[0])
        rows.append(
            [
                f"{scenario}: {what}",
                f"{value:.2f} s",
                "**met**" if value <= limit else "**not met**",
            ]
        )
    return table(["target (shipped settings)", "figure", "met"], rows)


def report(
    measures: list[Measure], settings: list[Setting], args: argparse.Namespace, seconds: float
) -> str:
    shipped = settings[-1]
    lines = [
        START,
        f"Generated by `make bench-e2e` (`python -m scripts.bench.e2e {' '.join(args.argv)}`) "
        f"in {seconds:,.0f} s.",
        "",
        *machine("Metacontroller, the hook, etcd, kube-apiserver and the bench share them"),
        "",
        "Settings: "
        + "; ".join(f"**{s.name}** `{' '.join(s.flags) or '(none)'}`" for s in settings)
        + ".",
        "",
        *targets_table(measures, shipped),
        "",
        *results_table(measures, settings),
        END,
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- main


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
                    measures.append(measure(stack, kube, audit_log, scenario, setting, progress))
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
