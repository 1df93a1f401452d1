"""The sync hook as a pure function: observed state and `now` in, desired state out."""

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson

from app import builders, conditions, envelope, events, gang
from app.defaults import SpecError
from app.pods import Attempt, observe
from app.replicas import Replica, recorded_attempts, replicas_of
from app.spec import CleanPodPolicy, MXJobSpec, ReplicaType
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
    has_children = _has_children(request)
    previous = _without_edit_failure(parent.status or {}, has_children)
    try:
        spec = parse(name, parent.spec)
    except SpecError as err:
        return _invalid(request, previous, err, has_children, now)
    # Valid again: reconciliation carries on from the status the job had before the edit.
    previous = _without(previous, conditions.INVALID_SPEC)
    job = builders.job_context(
        name,
        parent.metadata.namespace,
        spec,
        gang.declared(request.children),
        config_map=envelope.CONFIG_MAP in request.children,
    )
    pods = request.observed(envelope.POD)
    attempts = observe(pods, name)
    recorded = recorded_attempts(request.observed(envelope.SERVICE), name)
    replicas = replicas_of(spec, attempts, recorded)
    outcome = decide(name, spec, replicas, previous, now)
    children, resync = _children(job, replicas, attempts, outcome, previous, now)
    children[:0] = _job_children(job) if children else []
    status = _status(outcome.conditions, _counts(spec, replicas, previous), outcome.start_time)
    if events.declared(request.children):
        observed = request.observed(events.CHILD_TYPE)
        children += events.story(parent.metadata, outcome.conditions, observed, now)
    return {"status": status, "children": children, "resyncAfterSeconds": resync}


def _job_children(job: builders.Job) -> list[dict[str, Any]]:
    """One of each per job, while it has pods, ahead of them in the answer: the PodGroup
    that schedules them and the ConfigMap they read MX_CONFIG's shared parts from.
    (Metacontroller applies child types in its own order, by group, version and kind,
    which also puts the core ConfigMap before the Pods; see docs/behaviour.md.)"""
    out = []
    if job.gang:
        out.append(gang.pod_group(job.gang, job.name, job.namespace, job.spec))
    if job.config_map:
        out.append(builders.config_map(job))
    return out


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
        kept = replica.kept()
        if len(kept) == 1 and kept[0].attempt == attempt:
            # The usual case: one pod, which goes on as it is.
            pod = builders.pod(job, replica.rtype, replica.index, attempt, kept[0].restarts_before)
            pods.append(pod)
        else:
            wanted = {a.attempt: a.restarts_before for a in kept}
            wanted.setdefault(attempt, restarts)
            pods += [
                builders.pod(job, replica.rtype, replica.index, n, r)
                for n, r in sorted(wanted.items())
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


def _has_children(request: envelope.SyncRequest) -> bool:
    """Whether the job has pods or Services: its Events say nothing about that."""
    return any(request.children.get(kind) for kind in (envelope.POD, envelope.SERVICE))


def _without_edit_failure(previous: dict[str, Any], has_children: bool) -> dict[str, Any]:
    """Earlier versions failed a job for good when an edit broke its spec (Failed with
    MXJobInvalidSpec). For a job that still has children that is not terminal: drop it, and
    the job goes on as an edited one. A job invalid from its creation has no children."""
    failed = conditions.find(conditions.parse(previous.get("conditions")), conditions.FAILED)
    if has_children and failed and failed.get("reason") == REASON_INVALID:
        return _without(previous, conditions.FAILED)
    return previous


def _without(previous: dict[str, Any], ctype: str) -> dict[str, Any]:
    conds = conditions.without(conditions.parse(previous.get("conditions")), ctype)
    return previous | {"conditions": conds}


def _invalid(
    request: envelope.SyncRequest,
    previous: dict[str, Any],
    err: SpecError,
    has_children: bool,
    now: datetime,
) -> dict[str, Any]:
    """An invalid spec: say so in the status and leave every child exactly as it is.

    A job the hook never accepted fails for good. A job that has children, or was accepted
    before (suspended, say), was broken by an edit: the InvalidSpec condition says what is
    wrong, and the next sync with a valid spec carries on from the status the job had."""
    name = request.parent.metadata.name
    conds = conditions.parse(previous.get("conditions"))
    message = f"MXJob {name} has an invalid spec: {err}."
    counts: dict[str, dict[str, int]] = {}
    if has_children or conditions.is_true(conds, conditions.CREATED):
        message += " Its pods and Services are kept as they are until the spec is valid again."
        conds = conditions.set_condition(
            conds, conditions.INVALID_SPEC, "True", REASON_INVALID, message, stamp(now),
            new_message=True,
        )  # fmt: skip
        counts = _recorded_statuses(previous.get("replicaStatuses"))
    elif not conditions.finished(conds):
        conds = conditions.set_condition(
            conds, conditions.FAILED, "True", REASON_INVALID, message, stamp(now)
        )
    status = _status(conds, counts, previous.get("startTime"))
    children = [
        _as_observed(child, kind)
        for kind in sorted(request.children)
        for child in request.observed(kind)
    ]
    return {"status": status, "children": children, "resyncAfterSeconds": 0}


def _recorded_statuses(recorded: Any) -> dict[str, dict[str, int]]:
    """The replica counts a previous status recorded, well-formed, for replica types only."""
    if not isinstance(recorded, dict):
        return {}
    empty = {"active": 0, "succeeded": 0, "failed": 0}
    return {
        t.value: _recorded_counts(recorded[t.value], empty)
        for t in ReplicaType
        if t.value in recorded
    }


def _as_observed(child: dict[str, Any], child_type: str) -> dict[str, Any]:
    """An observed child as its own desired state. Metacontroller updates an in-place child
    by a three-way merge of what it last applied, the desired state and the live object, so
    the desired state that changes nothing is what it last applied: the observed object
    instead (with the fields the API server defaulted) would have it rewrite each Service's
    and ConfigMap's last-applied annotation (measured on a real API server). Without that
    annotation: identity, labels and spec (a ConfigMap's data: the pods still read it),
    nothing the cluster wrote (status, uid, resourceVersion, Metacontroller's bookkeeping).
    Its kind and apiVersion are those of the type it was observed under (`Pod.v1`), which
    Metacontroller needs to apply it."""
    kind, _, api_version = child_type.partition(".")
    applied = _last_applied(child, api_version, kind)
    if applied is not None:
        return applied
    meta = child.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    if isinstance(kept.get("annotations"), dict):
        kept["annotations"] = {k: v for k, v in kept["annotations"].items() if k != LAST_APPLIED}
        if not kept["annotations"]:
            del kept["annotations"]
    out = {"apiVersion": api_version, "kind": kind}
    out |= {k: child[k] for k in ("spec", "data", "binaryData") if k in child}
    return out | {"metadata": kept}


def _last_applied(child: dict[str, Any], api_version: str, kind: str) -> dict[str, Any] | None:
    """What Metacontroller last applied to this child, if its annotation holds this child."""
    meta = child.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not isinstance(text, str):
        return None
    try:
        applied = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(applied, dict) or not isinstance(applied.get("metadata"), dict):
        return None
    assert isinstance(meta, dict)
    mine = [api_version, kind, meta.get("name"), meta.get("namespace")]
    names = [applied["metadata"].get("name"), applied["metadata"].get("namespace")]
    return applied if [applied.get("apiVersion"), applied.get("kind"), *names] == mine else None
