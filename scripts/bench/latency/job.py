"""One job's life on the latency stack, from `kubectl apply` to Succeeded, and the breakdowns of
its two deciding pod writes."""

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from localcluster.rest import Rest as Kube
from localcluster.rest import path
from localcluster.stack import Stack
from scripts.bench.latency.breakdown import Breakdown, breakdown
from scripts.bench.latency.logs import Requests, hook_syncs, namespace_events, sync_starts
from scripts.bench.namespaces import TYPE_LABEL, cleanup, mark_pods, new_namespace
from scripts.bench.watch import Seen, wait_for, watching
from scripts.bench.workloads import Scenario, mxjob

QUIET = 1.5  # seconds without a hook call or a request of Metacontroller: the job settled
REPLICA_SERVICES = "training.kubeflow.org/replica-services"
# Each condition measured, and the watch's marks of its pod write and of the condition seen.
CONDITIONS = (("Running", ("marked", "running")), ("Succeeded", ("exited", "succeeded")))


def wait_quiet(stack: Stack, namespace: str, job: str, requests: Requests, deadline: float) -> None:
    """Until the hook has answered no sync of the job, and Metacontroller made no request in
    its namespace, for QUIET seconds (a sync that creates children goes on long after the
    hook answered it)."""
    seen, since = (-1, -1), time.monotonic()
    while time.monotonic() < deadline:
        now = (len(hook_syncs(stack.hook.log, namespace, job)), requests())
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= QUIET:
            return
        time.sleep(0.2)
    raise TimeoutError(f"the job {namespace}/{job} never settled")


def scheduler_pod(kube: Kube, namespace: str) -> str:
    pods, _ = kube.list(path("pods", namespace))
    return next(
        str(p["metadata"]["name"])
        for p in pods
        if p["metadata"]["labels"].get(TYPE_LABEL) == "scheduler"
    )


def every_child(seen: Seen, services: int, deadline: float) -> float:
    """Seconds from the apply to the moment the watch had seen every pod and `services`
    Services (noticed within ms: the watch threads notify on each event)."""
    with seen.changed:
        while "pods" not in seen.at or len(seen.services) < services:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(seen.services)} of {services} Services seen")
            seen.changed.wait(timeout=1)
        return time.monotonic() - seen.start


def job_in(namespace: str, scenario: Scenario, services: str) -> dict[str, Any]:
    """The scenario's job in `namespace`; `services`: its replica-services annotation, none
    for `all`."""
    job = mxjob("job-0", scenario)
    job["metadata"]["namespace"] = namespace
    if services != "all":
        job["metadata"]["annotations"] = {REPLICA_SERVICES: services}
    return job


def decide(
    kube: Kube,
    namespace: str,
    seen: Seen,
    marks: tuple[str, str],
    deadline: float,
    settle: Callable[[], None],
) -> float:
    """Write the deciding pods' status (Running; Succeeded after the first), wait for the
    job's condition and for it to settle; return when the writes began, wall clock."""
    began = time.time()
    mark_pods(kube, namespace, exited=marks[0] == "exited")
    seen.mark(marks[0])
    wait_for(seen, marks[1], deadline)
    settle()
    return began


def breakdowns(
    stack: Stack, kube: Kube, audit_log: Path, offset: int, namespace: str, job: str,
    trace: Path | None, seen: Seen, began: dict[str, float],
) -> list[Breakdown]:  # fmt: skip
    """The breakdown of each condition's deciding pod write, from the logs since `offset`."""
    pod = scheduler_pod(kube, namespace)
    events = namespace_events(audit_log, offset, namespace)
    syncs = hook_syncs(stack.hook.log, namespace, job)
    starts = sync_starts(trace, namespace, job) if trace else []
    return [
        breakdown(events, syncs, starts, pod, job, condition, began[condition],
                  seen.at[marks[1]] - seen.at[marks[0]])
        for condition, marks in CONDITIONS
    ]  # fmt: skip


def one_job(
    stack: Stack,
    kube: Kube,
    audit_log: Path,
    scenario: Scenario,
    trace: Path | None,
    services: str = "all",
) -> list[Breakdown]:
    """One job's Running and Succeeded, each from its deciding pod write; `services`: the
    job's replica-services annotation, none for `all`."""
    namespace = new_namespace(kube)
    job = job_in(namespace, scenario, services)
    name = job["metadata"]["name"]
    offset = audit_log.stat().st_size
    requests = Requests(audit_log, namespace)
    with watching(kube, namespace, scenario) as seen:
        deadline = seen.start + scenario.timeout
        stack.apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump(job))
        for what in ("pods", "condition"):
            wait_for(seen, what, deadline)
        all_children = every_child(seen, scenario.pods if services == "all" else 1, deadline)

        def settle() -> None:
            wait_quiet(stack, namespace, name, requests, deadline)

        settle()
        began = {c: decide(kube, namespace, seen, m, deadline, settle) for c, m in CONDITIONS}
    out = breakdowns(stack, kube, audit_log, offset, namespace, name, trace, seen, began)
    for found in out:
        found.all_children = all_children
    cleanup(kube, namespace)
    return out
