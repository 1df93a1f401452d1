"""The sync hook as a pure function: observed state, `now` and the integrations that may
contribute, desired state out."""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from app.core.children import builders
from app.core.children.desired import Child, desired_children
from app.core.decide import status
from app.core.decide.decision import decide
from app.core.model import conditions, envelope, kinds
from app.core.model.envelope import ObjectMeta
from app.core.model.errors import SpecError
from app.core.model.seam import Contribution, Integration, SyncInputs, reports_of
from app.core.model.spec import MXJobSpec, ReplicaType
from app.core.model.values import sooner
from app.core.mxnet.layout import NO_PODS, layout_for
from app.core.mxnet.mxconfig import config_map_name
from app.core.observe import applied, replicas
from app.core.observe.previous import Previous, read_previous
from app.core.validate.validation import replica_services, validated_spec


@dataclass(frozen=True)
class SyncResult:
    """The answer to one sync request, and what the web layer logs and counts about it."""

    answer: dict[str, Any]
    namespace: str | None
    name: str
    # What the spec asks for in all; 0 when it is invalid.
    replicas: int
    invalid_spec: bool


Integrations = Sequence[Integration]


def sync(body: Any, now: datetime, integrations: Integrations) -> dict[str, Any]:
    """The answer to one sync request, with these `integrations` contributing where the
    controller declares what they need. Raises errors.BadRequest for anything that is not
    one."""
    return sync_result(body, now, integrations).answer


def sync_result(body: Any, now: datetime, integrations: Integrations) -> SyncResult:
    """Answer one sync request, in the order of docs/behaviour.md: read the request and the
    previous status, check the spec, decide the status from what was observed, then build
    the children. Raises errors.BadRequest for anything that is not a sync request."""
    request = envelope.read_request(body)
    meta = request.parent.metadata
    has_children = request.has_pods_or_services()
    guests = tuple(t for i in integrations for t in i.condition_types)
    previous = read_previous(request.parent.status, has_children, guests)
    config_map = request.declares(kinds.CONFIG_MAP_TYPE)
    pods = replicas.read_pods(request.children.get(kinds.POD_TYPE, {}), meta.name)
    try:
        layout = layout_for(config_map, pods.config_map_use)
        fresh = layout_for(config_map, NO_PODS)
        spec = validated_spec(meta.name, request.parent.spec, layout, fresh)
        services = replica_services(_extra(meta, "annotations"), spec)
    except SpecError as err:
        job_status = status.of_invalid_job(meta.name, str(err), previous, has_children, now)
        return _result(meta, job_status, applied.kept_as_observed(request), 0, replicas=0)
    # Valid again: reconciliation carries on from the status the job had before the edit.
    previous = previous.without(conditions.INVALID_SPEC)
    owned = replicas.owned(pods, lambda: request.observed(kinds.SERVICE_TYPE), meta.name, spec)
    job = builders.job_context(
        meta.name,
        meta.namespace,
        spec,
        config_map=config_map,
        observed=pods.config_map_use,
        services=services,
    )
    contributions = _contributions(integrations, request, spec, previous, job)
    job = _fitted(job, contributions)
    decision = decide(meta.name, spec, owned.replicas, previous, now, reports_of(contributions))
    job_status = status.of_valid_job(decision, spec, owned.replicas, previous)
    if _first(request, previous):
        # Staged: Metacontroller writes the status only after every child of the answer, so
        # the first answer is the status alone; writing it brings the sync that asks for all.
        return _result(meta, job_status, [], decision.resync_after, replicas=len(owned.replicas))
    desired, resync = desired_children(job, owned, decision, now, contributions)
    resync = sooner(resync, _config_map_retry(request, pods.any_pod, desired, meta.name))
    for contribution in contributions:
        added, wait = contribution.children(decision, now)
        desired += added
        resync = sooner(resync, wait)
    return _result(meta, job_status, desired, resync, replicas=len(owned.replicas))


def _contributions(
    integrations: Integrations,
    request: envelope.SyncRequest,
    spec: MXJobSpec,
    previous: Previous,
    job: builders.JobContext,
) -> list[Contribution]:
    """The integrations' contributions to the sync, in the order they are given. The first pods
    one reads (a Workload's pod sets) are fitted by those that contributed before it."""
    contributions: list[Contribution] = []

    def first_pod(rtype: ReplicaType) -> dict[str, Any]:
        return builders.pod(_fitted(job, contributions), rtype, 0, 0, 0)

    inputs = SyncInputs(request, spec, previous.conditions, previous.finished, first_pod)
    for integration in integrations:
        contribution = integration.contribute(inputs)
        if contribution is not None:
            contributions.append(contribution)
    return contributions


def _fitted(job: builders.JobContext, contributions: list[Contribution]) -> builders.JobContext:
    """The job's context with what these contributions add to every pod."""
    return replace(job, fits=tuple(c.fit_pod for c in contributions))


# How soon a job asks to be synced again while a ConfigMap of its ConfigMap's name that is not
# its child holds the name: that ConfigMap's removal brings no sync of the job's own.
CONFIG_MAP_RETRY_SECONDS = 30


def _config_map_retry(
    request: envelope.SyncRequest, any_pod: bool, desired: list[Child], name: str
) -> int:
    """CONFIG_MAP_RETRY_SECONDS while the job's pods exist and the ConfigMap the answer asks
    for does not (docs/security.md, "The job's ConfigMap"), else 0."""
    wanted = config_map_name(name)
    if not any_pod or any(
        envelope.name_of(c) == wanted for c in request.observed(kinds.CONFIG_MAP_TYPE)
    ):
        return 0
    asked = any(
        c.get("kind") == kinds.CONFIG_MAP and envelope.name_of(c) == wanted for c in desired
    )
    return CONFIG_MAP_RETRY_SECONDS if asked else 0


def _first(request: envelope.SyncRequest, previous: Previous) -> bool:
    """A job's first sync: no condition yet and no child of any type."""
    return not previous.conditions and not any(request.children.values())


def _extra(meta: ObjectMeta, key: str) -> Any:
    """A metadata field the envelope does not type (`labels`, `annotations`), or None."""
    return meta.model_extra.get(key) if meta.model_extra else None


def _result(
    meta: ObjectMeta,
    job_status: dict[str, Any],
    desired: list[Child],
    resync: int,
    replicas: int,
) -> SyncResult:
    answer = {"status": job_status, "children": desired, "resyncAfterSeconds": resync}
    invalid = status.says_invalid(job_status)
    return SyncResult(answer, meta.namespace, meta.name, replicas, invalid)
