"""The sync hook as a pure function: observed state and `now` in, desired state out."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app import builders, children, conditions, envelope, events, gang, kueue, observed, status
from app.defaults import SpecError
from app.envelope import ObjectMeta
from app.spec import MXJobSpec
from app.template import config_map_name
from app.times import sooner
from app.validation import replica_services, validated_spec


@dataclass(frozen=True)
class SyncResult:
    """The answer to one sync request, and what the web layer logs and counts about it."""

    answer: dict[str, Any]
    namespace: str | None
    name: str
    # What the spec asks for in all; 0 when it is invalid.
    replicas: int
    invalid_spec: bool


def sync(body: Any, now: datetime) -> dict[str, Any]:
    """The answer to one sync request. Raises envelope.BadRequest for anything that is not
    one."""
    return sync_result(body, now).answer


def sync_result(body: Any, now: datetime) -> SyncResult:
    """Answer one sync request, in the order of docs/behaviour.md: read the request and the
    previous status, check the spec, decide the status from what was observed, then build
    the children. Raises envelope.BadRequest for anything that is not a sync request."""
    request = envelope.read_request(body)
    meta = request.parent.metadata
    has_children = request.has_pods_or_services()
    previous = status.read_previous(request.parent.status, has_children)
    config_map = request.declares(envelope.CONFIG_MAP)
    pods = observed.read_pods(request.children.get(envelope.POD, {}), meta.name)
    try:
        layout = observed.layout(config_map, pods.readers)
        fresh = observed.layout(config_map, observed.NO_PODS)
        spec = validated_spec(meta.name, request.parent.spec, layout, fresh)
        services = replica_services(_extra(meta, "annotations"), spec)
    except SpecError as err:
        job_status = status.of_invalid_job(meta.name, str(err), previous, has_children, now)
        return _result(meta, job_status, children.as_they_are(request), 0, replicas=0)
    # Valid again: reconciliation carries on from the status the job had before the edit.
    previous = previous.without(conditions.INVALID_SPEC)
    owned = observed.owned(pods, lambda: request.observed(envelope.SERVICE), meta.name, spec)
    queue = _kueue_gate(request, spec, previous)
    decision = status.decide(meta.name, spec, owned.replicas, previous, now, queue)
    job_status = status.of_valid_job(decision, spec, owned.replicas, previous)
    if _first(request, previous):
        # Staged: Metacontroller writes the status only after every child of the answer, so
        # the first answer is the status alone; writing it brings the sync that asks for all.
        return _result(meta, job_status, [], decision.resync_after, replicas=len(owned.replicas))
    job = builders.job_context(
        meta.name,
        meta.namespace,
        spec,
        gang.declared(request.declares),
        config_map=config_map,
        observed=pods.readers,
        services=services,
    )
    desired, resync = children.desired(job, owned, decision, now, queue)
    resync = sooner(resync, _config_map_retry(request, desired, meta.name))
    if queue is not None and queue.wants_workload and not decision.finished:
        labels = _extra(meta, "labels")
        prio = kueue.priority(labels, spec, request.related)
        desired.append(children.workload(job, kueue.queue_name(labels) or "", prio))
    if request.declares(events.CHILD_TYPE):
        seen = request.observed(events.CHILD_TYPE)
        story = events.story(meta, decision.conditions, seen, now)
        desired += story
        resync = sooner(resync, events.expiry_in(story, now))
    return _result(meta, job_status, desired, resync, replicas=len(owned.replicas))


# How soon a job asks to be synced again while a ConfigMap of its ConfigMap's name that is not
# its child holds the name: that ConfigMap's removal brings no sync of the job's own.
CONFIG_MAP_RETRY_SECONDS = 30


def _config_map_retry(
    request: envelope.SyncRequest, desired: list[children.Child], name: str
) -> int:
    """CONFIG_MAP_RETRY_SECONDS while the job's pods exist and the ConfigMap the answer asks
    for does not (docs/security.md, "The job's ConfigMap"), else 0."""
    wanted = config_map_name(name)
    if not request.children.get(envelope.POD) or any(
        envelope.name_of(c) == wanted for c in request.observed(envelope.CONFIG_MAP)
    ):
        return 0
    asked = any(c.get("kind") == "ConfigMap" and envelope.name_of(c) == wanted for c in desired)
    return CONFIG_MAP_RETRY_SECONDS if asked else 0


def _first(request: envelope.SyncRequest, previous: status.Previous) -> bool:
    """A job's first sync: no condition yet and no child of any type."""
    return not previous.conditions and not any(request.children.values())


def _kueue_gate(
    request: envelope.SyncRequest, spec: MXJobSpec, previous: status.Previous
) -> kueue.Gate | None:
    """Kueue's say over this sync: None unless the controller declares Workload children
    and the job is, or was, queued."""
    if not request.declares(kueue.WORKLOAD_TYPE):
        return None
    meta = request.parent.metadata
    labels = _extra(meta, "labels")
    workloads = {
        w.get("metadata", {}).get("name"): w for w in request.observed(kueue.WORKLOAD_TYPE)
    }
    view = kueue.JobView(
        name=meta.name,
        queue=kueue.queue_name(labels),
        workload=workloads.get(kueue.workload_name(meta.name)),
        live_pods=any(
            not (p.get("metadata") or {}).get("deletionTimestamp")
            for p in request.observed(envelope.POD)
        ),
        finished=previous.finished,
        suspended=spec.runPolicy.suspend,
    )
    return kueue.gate(view, previous.conditions, request.related, spec)


def _extra(meta: ObjectMeta, key: str) -> Any:
    """A metadata field the envelope does not type (`labels`, `annotations`), or None."""
    return meta.model_extra.get(key) if meta.model_extra else None


def _result(
    meta: ObjectMeta,
    job_status: dict[str, Any],
    desired: list[children.Child],
    resync: int,
    replicas: int,
) -> SyncResult:
    answer = {"status": job_status, "children": desired, "resyncAfterSeconds": resync}
    invalid = status.says_invalid(job_status)
    return SyncResult(answer, meta.namespace, meta.name, replicas, invalid)
