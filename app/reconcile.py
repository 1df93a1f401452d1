"""The sync hook as a pure function: observed state and `now` in, desired state out."""

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from app import builders, conditions, envelope, events, gang
from app.defaults import SpecError
from app.pods import Attempt, observe
from app.replicas import Replica, recorded_attempts, replicas_of
from app.spec import CleanPodPolicy, MXJobSpec
from app.status import (
    REASON_INVALID,
    REASONS_STOPPED,
    Outcome,
    decide,
    parse_time,
    replica_statuses,
    seconds_until,
    stamp,
)
from app.validation import parse

LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"


def sync(body: Any, now: datetime) -> dict[str, Any]:
    """Answer one sync request. Raises envelope.BadRequest for anything that is not one."""
    request = envelope.parse(body)
    parent = request.parent
    name = parent.metadata.name
    previous = parent.status or {}
    try:
        spec = parse(name, parent.spec)
    except SpecError as err:
        return _invalid(request, previous, err, now)
    job = builders.job_context(
        name, parent.metadata.namespace, spec, gang.declared(request.children)
    )
    pods = request.observed(envelope.POD)
    attempts = observe(pods, name)
    recorded = recorded_attempts(request.observed(envelope.SERVICE), name)
    replicas = replicas_of(spec, attempts, recorded)
    outcome = decide(name, spec, replicas, previous, now)
    children, resync = _children(job, replicas, attempts, outcome, previous, now)
    if job.gang and children:
        children.insert(0, gang.pod_group(job.gang, name, job.namespace, spec))
    status = _status(outcome.conditions, _counts(spec, replicas, previous), outcome.start_time)
    if events.declared(request.children):
        observed = request.observed(events.CHILD_TYPE)
        children += events.story(parent.metadata, outcome.conditions, observed, now)
    return {"status": status, "children": children, "resyncAfterSeconds": resync}


def _status(
    conds: list[conditions.Condition], counts: dict[str, dict[str, int]], start: Any
) -> dict[str, Any]:
    """The whole status: Metacontroller replaces `.status` with it, so nothing is left out."""
    status: dict[str, Any] = {"conditions": conds, "replicaStatuses": counts}
    if parse_time(start):
        status["startTime"] = start
    completed = _completion_time(conds)
    if completed:
        status["completionTime"] = completed
    return status


def _counts(
    spec: MXJobSpec, replicas: list[Replica], previous: dict[str, Any]
) -> dict[str, dict[str, int]]:
    """Replica counts; a finished job keeps those it finished with, after clean-up too."""
    counts = replica_statuses(spec, replicas)
    if not conditions.finished(conditions.parse(previous.get("conditions"))):
        return counts
    recorded = previous.get("replicaStatuses")
    if not isinstance(recorded, dict) or set(recorded) != set(counts):
        return counts
    return {t: _recorded_counts(recorded[t], counts[t]) for t in counts}


def _recorded_counts(recorded: Any, fallback: dict[str, int]) -> dict[str, int]:
    if not isinstance(recorded, dict):
        return fallback
    return {k: _count(recorded.get(k), v) for k, v in fallback.items()}


def _count(value: Any, fallback: int) -> int:
    return value if type(value) is int and value >= 0 else fallback


def _completion_time(conds: list[conditions.Condition]) -> str | None:
    for ctype in (conditions.SUCCEEDED, conditions.FAILED):
        found = conditions.find(conds, ctype)
        if found and found.get("status") == "True":
            return found.get("lastTransitionTime")
    return None


def _children(
    job: builders.Job,
    replicas: list[Replica],
    attempts: list[Attempt],
    outcome: Outcome,
    previous: dict[str, Any],
    now: datetime,
) -> tuple[list[dict[str, Any]], int]:
    """Desired children and the resync delay the job's timers need."""
    if not conditions.finished(outcome.conditions):
        if job.spec.runPolicy.suspend:
            return [], 0
        return _running_children(job, replicas), outcome.resync_after
    if not conditions.finished(conditions.parse(previous.get("conditions"))):
        # The deciding sync removes nothing: the evidence outlives the decision.
        return _kept_children(job, attempts, replicas), 0
    ttl_left = _ttl_left(job.spec, outcome.conditions, now)
    if ttl_left == 0:
        return [], 0
    kept = [a for a in attempts if _survives_cleanup(job.spec, outcome.conditions, a)]
    return _kept_children(job, kept, replicas), ttl_left or 0


def _running_children(job: builders.Job, replicas: list[Replica]) -> list[dict[str, Any]]:
    pods, services = [], []
    for replica in replicas:
        attempt, restarts = replica.next_pod
        kept = {a.attempt: a.restarts_before for a in replica.kept()}
        kept.setdefault(attempt, restarts)
        pods += [
            builders.pod(job, replica.rtype, replica.index, n, r) for n, r in sorted(kept.items())
        ]
        services.append(builders.service(job, replica.rtype, replica.index, attempt, restarts))
    return pods + services


def _kept_children(
    job: builders.Job, attempts: Iterable[Attempt], replicas: list[Replica]
) -> list[dict[str, Any]]:
    """Pods for these observed attempts, and the Services of their replicas."""
    wanted = {(r.rtype, r.index) for r in replicas}
    kept = [a for a in attempts if (a.rtype, a.index) in wanted]
    pods = [builders.pod(job, a.rtype, a.index, a.attempt, a.restarts_before) for a in kept]
    services = []
    for replica in replicas:
        if any((a.rtype, a.index) == (replica.rtype, replica.index) for a in kept):
            attempt, restarts = replica.next_pod
            services.append(builders.service(job, replica.rtype, replica.index, attempt, restarts))
    return pods + services


def _survives_cleanup(spec: MXJobSpec, conds: list[conditions.Condition], attempt: Attempt) -> bool:
    policy = spec.runPolicy.cleanPodPolicy
    failed = conditions.find(conds, conditions.FAILED)
    if failed and failed.get("reason") in REASONS_STOPPED and policy is CleanPodPolicy.NONE:
        policy = CleanPodPolicy.RUNNING
    if policy is CleanPodPolicy.ALL:
        return False
    return policy is CleanPodPolicy.NONE or attempt.phase in ("Succeeded", "Failed")


def _ttl_left(spec: MXJobSpec, conds: list[conditions.Condition], now: datetime) -> int | None:
    """Seconds until the finished job's children expire; None without a TTL."""
    ttl = spec.runPolicy.ttlSecondsAfterFinished
    completed = parse_time(_completion_time(conds))
    if ttl is None or completed is None:
        return None
    return seconds_until(completed, ttl, now)


def _invalid(
    request: envelope.SyncRequest, previous: dict[str, Any], err: SpecError, now: datetime
) -> dict[str, Any]:
    """An invalid spec: say so in the status and leave every child exactly as it is."""
    name = request.parent.metadata.name
    conds = conditions.parse(previous.get("conditions"))
    if not conditions.finished(conds):
        message = f"MXJob {name} has an invalid spec: {err}."
        conds = conditions.set_condition(
            conds, conditions.FAILED, "True", REASON_INVALID, message, stamp(now)
        )
    status = _status(conds, {}, previous.get("startTime"))
    children = [
        _as_observed(child) for kind in sorted(request.children) for child in request.observed(kind)
    ]
    return {"status": status, "children": children, "resyncAfterSeconds": 0}


def _as_observed(child: dict[str, Any]) -> dict[str, Any]:
    """An observed child as its own desired state: identity, labels and spec, nothing
    the cluster wrote (status, uid, resourceVersion, Metacontroller's bookkeeping)."""
    meta = child.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    if isinstance(kept.get("annotations"), dict):
        kept["annotations"] = {k: v for k, v in kept["annotations"].items() if k != LAST_APPLIED}
    out = {k: child[k] for k in ("apiVersion", "kind", "spec") if k in child}
    return out | {"metadata": kept}
