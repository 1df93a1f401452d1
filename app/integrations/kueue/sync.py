"""Kueue's side of a sync: what the gate reads of the request, and the Workloads the job keeps.
The core hands over the job's first pods as it builds them, the templates of its pod sets."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.core.model import envelope, kinds
from app.core.model.envelope import SyncRequest
from app.core.model.seam import ContributionDefaults, Decision, FirstPod, Integration, SyncInputs
from app.core.model.spec import MXJobSpec
from app.integrations.kueue.api import API_VERSION, QUEUED, WORKLOAD_KIND, WORKLOAD_TYPE
from app.integrations.kueue.gating import JobView, QueueReport, gate
from app.integrations.kueue.priorities import priority
from app.integrations.kueue.queues import queueing
from app.integrations.kueue.workloads import (
    covers,
    legacy_workload_name,
    pod_sets,
    pod_template,
    workload,
    workload_name,
)


@dataclass(frozen=True)
class KueueContribution(ContributionDefaults):
    """Kueue's part in one sync: the gate's answer, reported before the decision, and the
    Workloads the job keeps after it."""

    request: SyncRequest
    spec: MXJobSpec
    view: JobView
    report: QueueReport | None
    first_pod: FirstPod

    def children(self, decision: Decision, now: datetime) -> tuple[list[dict[str, Any]], int]:
        """The Workloads: while the job is not finished, those the gate asks for; once it is,
        those it has, until none of its pods may still run. No timer of its own."""
        if decision.finished:
            return finished_workloads(self.view), 0
        if self.report is None:
            return [], 0
        return workloads(self.request, self.spec, self.report, self.view, self.first_pod), 0


def finished_workloads(view: JobView) -> list[dict[str, Any]]:
    """A finished job's Workloads, kept as they are while any of its pods may still run (not
    Succeeded or Failed, being deleted or not: those `cleanPodPolicy` stops, or leaves
    running), so that their quota is not handed to another job before they are gone; then
    none (docs/kueue.md)."""
    if not view.active_pods:
        return []
    observed = [view.workload] if view.workload is not None else []
    return [_kept(w) for w in [*observed, *view.stale]]


def contribute(inputs: SyncInputs) -> KueueContribution | None:
    """Kueue's contribution to a sync: None unless the controller declares Workload children."""
    view = job_view(inputs.request, inputs.spec, inputs.finished, inputs.first_pod)
    if view is None:
        return None
    report = gate(view, inputs.previous, inputs.request.related, inputs.spec)
    return KueueContribution(inputs.request, inputs.spec, view, report, inputs.first_pod)


def job_view(
    request: SyncRequest, spec: MXJobSpec, finished: bool, first_pod: FirstPod
) -> JobView | None:
    """What Kueue's gate reads of this sync: None unless the controller declares Workload
    children."""
    if not request.declares(WORKLOAD_TYPE):
        return None
    meta = request.parent.metadata
    observed_workloads = request.observed(WORKLOAD_TYPE)
    where = queueing(_labels(request), meta.namespace, observed_workloads, request.related)
    current = []
    if where.queue is not None or observed_workloads:
        wanted = workload_name(meta.name, _pod_sets(spec, first_pod))
        current = [w for w in observed_workloads if envelope.name_of(w) == wanted]
    if observed_workloads and not current:
        # A Workload named as earlier releases named them still serves if it asks for the
        # same counts and requests, so an upgrade stops no admitted job.
        legacy = legacy_workload_name(meta.name)
        sets = _pod_sets(spec, first_pod)
        current = [
            w for w in observed_workloads if envelope.name_of(w) == legacy and covers(w, sets)
        ]
    pods = request.observed(kinds.POD_TYPE)
    return JobView(
        name=meta.name,
        queue=where.queue,
        workload=current[0] if current else None,
        live_pods=any(not (p.get("metadata") or {}).get("deletionTimestamp") for p in pods),
        finished=finished,
        suspended=spec.runPolicy.suspend,
        held=where.held,
        stale=tuple(w for w in observed_workloads if w not in current),
        active_pods=any(
            (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed") for p in pods
        ),
    )


def workloads(
    request: SyncRequest,
    spec: MXJobSpec,
    queue: QueueReport,
    view: JobView,
    first_pod: FirstPod,
) -> list[dict[str, Any]]:
    """The Workloads the job keeps: the one for its pod sets as they are, if it wants it, and
    an outgrown one whose pods are stopping (observed ones kept as they are: Workloads are
    never updated)."""
    out = []
    if queue.keep is not None:
        out.append(_kept(queue.keep))
    if queue.wants_workload:
        meta = request.parent.metadata
        prio = priority(_labels(request), spec, request.related)
        sets = _pod_sets(spec, first_pod)
        name = workload_name(meta.name, sets)
        built = workload(meta.name, meta.namespace, view.queue or "", sets, prio, name)
        current = view.workload
        have = (current.get("metadata") or {}).get("name") if current is not None else None
        # A Workload named as earlier releases named them, kept under its own name.
        out.append(_kept(current) if current and have != envelope.name_of(built) else built)
    return out


def _pod_sets(spec: MXJobSpec, first_pod: FirstPod) -> list[dict[str, Any]]:
    """The job's Workload pod sets, their templates being its first pods as they are built."""
    templates = {t: pod_template(first_pod(t)) for t in spec.types()}
    return pod_sets(templates, spec)


def _kept(observed: Mapping[str, Any]) -> dict[str, Any]:
    """An observed Workload as its own desired state (Workloads are never updated)."""
    meta = observed.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "namespace", "labels") if k in meta}
    return kinds.header(WORKLOAD_KIND, API_VERSION) | {
        "metadata": kept,
        "spec": observed.get("spec") or {},
    }


def _labels(request: SyncRequest) -> Any:
    """The job's labels, which the envelope does not type, or None."""
    meta = request.parent.metadata
    return meta.model_extra.get("labels") if meta.model_extra else None


INTEGRATION = Integration("kueue", contribute, condition_types=(QUEUED,))
