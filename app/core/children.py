"""The children a job owns: its observed pods and Services by replica index and attempt, and
the children it should have, or, while its spec is invalid, those it has, as they are."""

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import orjson

from app.core import builders, envelope
from app.core.applied import applied_configuration
from app.core.decision import Decision
from app.core.observed import ObservedReplicas
from app.core.pods import Attempt
from app.core.replicas import Replica
from app.core.seam import PodUpdate, Say, Turn, add_to_pod, said
from app.core.spec import CleanPodPolicy, MXJobSpec, ReplicaType
from app.core.times import parse_time, seconds_until

LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"
Child = dict[str, Any]


def desired(
    job: builders.JobContext,
    owned: ObservedReplicas,
    decision: Decision,
    now: datetime,
    turns: Sequence[Turn] = (),
) -> tuple[list[Child], int]:
    """The children the job should have, and the resync delay its timers need; `turns`: the
    integrations' parts in the sync (app/core/seam.py), whose children these do not include."""
    children, resync = _pods_and_services(job, owned, decision, now, said(turns))
    children[:0] = _job_children(job, turns) if children else []
    return children, resync


def _pods_and_services(
    job: builders.JobContext,
    owned: ObservedReplicas,
    decision: Decision,
    now: datetime,
    say: Say | None,
) -> tuple[list[Child], int]:
    if not decision.finished:
        if job.spec.runPolicy.suspend or (say is not None and say.wait):
            return [], 0
        pod_sets = say.pod_sets if say is not None else {}
        return _while_running(job, owned.replicas, pod_sets), decision.resync_after
    if decision.finishing:
        return _of_attempts(job, owned.attempts, owned.replicas), 0
    ttl_left = _ttl_left(job.spec, decision, now)
    if ttl_left == 0:
        return [], 0
    left = [a for a in owned.attempts if _survives_cleanup(decision.cleanup, a)]
    return _of_attempts(job, left, owned.replicas), ttl_left or 0


def _job_children(job: builders.JobContext, turns: Sequence[Turn]) -> list[Child]:
    """One of each per job, while it has pods, ahead of them in the answer: the integrations'
    (a gang scheduler's PodGroup) and the ConfigMap the pods read MX_CONFIG's shared parts from
    (Metacontroller applies child types in its own order: docs/behaviour.md#children)."""
    out = [child for turn in turns for child in turn.job_children()]
    if job.reads.config_map:
        out.append(builders.config_map(job))
    return out


def _while_running(
    job: builders.JobContext,
    replicas: list[Replica],
    pod_sets: Mapping[ReplicaType, PodUpdate],
) -> list[Child]:
    """The pods and Services of a running job, in the answer's order: every pod, then every
    Service the job has (`JobContext.services`)."""
    pods: list[Child] = []
    services = []
    for replica in replicas:
        first = len(pods)
        going_on = replica.going_on()
        if going_on is not None:
            # The usual case: one pod, which goes on as it is.
            attempt, restarts = going_on.attempt, going_on.restarts_before
            pods.append(builders.pod(job, replica.rtype, replica.index, attempt, restarts))
        else:
            attempt, restarts = replica.next_attempt
            wanted = {a.attempt: a.restarts_before for a in replica.keep_while_running()}
            wanted.setdefault(attempt, restarts)
            pods += [
                builders.pod(job, replica.rtype, replica.index, n, r)
                for n, r in sorted(wanted.items())
            ]
        admitted = pod_sets.get(replica.rtype)
        if admitted is not None:
            for built in pods[first:]:
                add_to_pod(built, admitted)
        if job.has_service(replica.rtype):
            services.append(builders.service(job, replica.rtype, replica.index, attempt, restarts))
    return pods + services


def _of_attempts(
    job: builders.JobContext, attempts: Iterable[Attempt], replicas: list[Replica]
) -> list[Child]:
    """Pods for these observed attempts, and the Services of their replicas that the job
    has."""
    wanted = {(r.rtype, r.index) for r in replicas}
    ours = [a for a in attempts if (a.rtype, a.index) in wanted]
    pods = [builders.pod(job, a.rtype, a.index, a.attempt, a.restarts_before) for a in ours]
    with_pods = {(a.rtype, a.index) for a in ours}
    services = []
    for replica in replicas:
        if (replica.rtype, replica.index) in with_pods and job.has_service(replica.rtype):
            attempt, restarts = replica.next_attempt
            services.append(builders.service(job, replica.rtype, replica.index, attempt, restarts))
    return pods + services


def _survives_cleanup(policy: CleanPodPolicy, attempt: Attempt) -> bool:
    """Whether a finished job's clean-up (`Decision.cleanup`) leaves this pod."""
    if policy is CleanPodPolicy.ALL:
        return False
    return policy is CleanPodPolicy.NONE or attempt.phase in ("Succeeded", "Failed")


def _ttl_left(spec: MXJobSpec, decision: Decision, now: datetime) -> int | None:
    """Seconds until the finished job's children expire; None without a TTL."""
    ttl = spec.runPolicy.ttlSecondsAfterFinished
    completed = parse_time(decision.completion_time)
    if ttl is None or completed is None:
        return None
    return seconds_until(completed, ttl, now)


def kept_as_observed(request: envelope.SyncRequest) -> list[Child]:
    """Every observed child as its own desired state: what an invalid spec is answered with."""
    owner = request.parent.metadata.uid or ""
    return [
        _as_observed(child, kind, owner)
        for kind in sorted(request.children)
        for child in request.observed(kind)
    ]


def _as_observed(child: Child, child_type: str, owner_uid: str) -> Child:
    """An observed child as its own desired state, which changes nothing: what Metacontroller
    last applied (its annotation, or under server-side apply its `managedFields` entry), else the
    child's identity, labels and spec (docs/behaviour.md#validation)."""
    kind, _, api_version = child_type.partition(".")
    applied = _last_applied(child, api_version, kind)
    if applied is None:
        applied = applied_configuration(child, owner_uid, api_version, kind)
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


def _last_applied(child: Child, api_version: str, kind: str) -> Child | None:
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
