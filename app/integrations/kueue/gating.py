"""The gate: what Kueue allows a job this sync, from its queue, its Workload and its status."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.core.model import conditions
from app.core.model.conditions import Condition
from app.core.model.spec import MXJobSpec, ReplicaType
from app.integrations.kueue.admission import Admission, PodSetInfo, admission
from app.integrations.kueue.api import (
    QUEUE_LABEL,
    QUEUED,
    REASON_ADMITTED,
    REASON_DEACTIVATED,
    REASON_EVICTED,
    REASON_NO_QUEUE,
    REASON_QUEUED,
    REASON_REQUEUED,
    REASON_UNQUEUED,
)
from app.integrations.kueue.flavors import pod_set_infos


@dataclass(frozen=True)
class QueueReport:
    """What Kueue reports before the decision (a `seam.Report`), what it allows the job this sync:
    whether it waits (no pods, Services or job children), the Queued condition to set, and
    what admitted pods get."""

    wait: bool
    # (status, reason, message) of the Queued condition, or None to leave it as it is.
    condition: tuple[str, str, str] | None
    # Whether the job wants its Workload (False: the Workload, if any, is deleted).
    wants_workload: bool
    pod_sets: dict[ReplicaType, PodSetInfo] = field(default_factory=dict)
    # An admitted Workload for other pod sets, kept (its quota held) while the pods it
    # admitted stop.
    keep: Mapping[str, Any] | None = None

    @property
    def condition_type(self) -> str:
        """Kueue's condition on the job."""
        return QUEUED


@dataclass(frozen=True)
class JobView:
    """What `gate` reads of the job and its observed children."""

    name: str
    queue: str | None
    # The Workload for the job's pod sets as they are now, if observed.
    workload: Mapping[str, Any] | None
    # Pods of the job that are not being deleted.
    live_pods: bool
    finished: bool
    suspended: bool
    # Without a queue, whether its namespace holds it (MANAGED_NAMESPACE_LABEL).
    held: bool = False
    # The job's other observed Workloads: made for pod sets the spec no longer asks for.
    stale: tuple[Mapping[str, Any], ...] = ()
    # Pods of the job that may still run: not Succeeded or Failed, deleted or not.
    active_pods: bool = False


def gate(
    job: JobView, previous: list[Condition], related: Mapping[str, Any], spec: MXJobSpec
) -> QueueReport | None:
    """Kueue's report for this sync, or None when it has none (the job behaves exactly as
    without Kueue). See docs/kueue.md for each case."""
    before = conditions.find(previous, QUEUED)
    waiting_before = before is not None and before.get("status") == "True"
    # A job that ran before its namespace held such jobs runs on, as under Kueue's webhook.
    started_unqueued = before is None and job.live_pods
    if job.queue is None and job.held and not (job.finished or job.suspended or started_unqueued):
        return _held(job.name)
    if job.queue is None or job.finished:
        if waiting_before and not job.finished:
            message = f"MXJob {job.name} is no longer queued: its {QUEUE_LABEL} label was removed."
            return QueueReport(False, ("False", REASON_UNQUEUED, message), wants_workload=False)
        return None
    if before is None and job.live_pods:
        # Started without Kueue (the label came later): it runs to its end unqueued.
        return None
    if job.suspended:
        return None
    return _queued(job, before, related, spec)


def _queued(
    job: JobView, before: Condition | None, related: Mapping[str, Any], spec: MXJobSpec
) -> QueueReport:
    """The gate of a job in a LocalQueue: waiting, evicted, admitted or running on."""
    waiting_before = before is not None and before.get("status") == "True"
    where = f"LocalQueue {job.queue}"
    outgrown = next((w for w in job.stale if admission(w).admitted), None)
    if outgrown is not None:
        # Kueue's "No matching Workload": the pods go, and only then the Workload, so its
        # quota is held until they are gone; the new Workload follows (docs/kueue.md).
        message = (
            f"MXJob {job.name} no longer matches the pod sets Kueue admitted: its pods are "
            f"stopped and it is queued again in {where}."
        )
        if job.active_pods:
            return QueueReport(True, ("True", REASON_REQUEUED, message), False, keep=outgrown)
        # The outgrown Workload is the evidence, not the status, which a sync may see one
        # write behind: the job waits as requeued from here on.
        before = {
            "type": QUEUED,
            "status": "True",
            "reason": REASON_REQUEUED,
            "message": message,
        }
        waiting_before = True
    admitted_before = before is not None and before.get("reason") == REASON_ADMITTED
    keeps_running = job.live_pods and not waiting_before and admitted_before and not job.stale
    if job.workload is None:
        if keeps_running:
            return QueueReport(False, None, wants_workload=True)
        return _waiting(job.name, where, "", before, wants_workload=True)
    state = admission(job.workload)
    if state.cluster_queue:
        where += f" (ClusterQueue {state.cluster_queue})"
    if state.evicted and not state.active:
        return _deactivated(job.name, job.workload, state)
    if state.evicted:
        return _evicted(job.name, job.queue, state, before if waiting_before else None)
    if state.admitted:
        return _admitted(job.name, where, keeps_running, state, related, spec)
    if keeps_running:
        return QueueReport(False, None, wants_workload=True)
    return _waiting(job.name, where, state.message, before, wants_workload=True)


def _deactivated(name: str, workload: Mapping[str, Any], state: Admission) -> QueueReport:
    """Deactivated: Kueue keeps it out of the queue, so the Workload stays (its requeueState
    with it) and the job waits until someone activates it again."""
    workload_name = workload.get("metadata", {}).get("name", "")
    message = (
        f"MXJob {name} was stopped by Kueue ({state.reason or 'Deactivated'}): "
        f"{state.message or 'no message'}; it is not queued again until its Workload "
        f"{workload_name} is active again (spec.active: true)."
    )
    return QueueReport(True, ("True", REASON_DEACTIVATED, message), wants_workload=True)


def _evicted(
    name: str, queue: str | None, state: Admission, waiting: Condition | None
) -> QueueReport:
    """An evicted Workload: the job waits, queued again; `waiting` is the Queued condition it
    had, if it was waiting."""
    if waiting is not None and waiting.get("reason") == REASON_EVICTED:
        # The status records the eviction. With the writer, which clears the reservation
        # once the pods are gone, the Workload and its requeueState stay and Kueue requeues
        # it with its backoff; without it, the Workload goes (releasing its quota) and the
        # next sync makes it again, pending; not earlier, so a sync one status behind still
        # finds the evidence (docs/kueue.md).
        condition = ("True", REASON_EVICTED, waiting.get("message", ""))
        return QueueReport(True, condition, wants_workload=state.kept_on_eviction)
    why = f" ({state.reason})" if state.reason else ""
    message = (
        f"MXJob {name} was evicted by Kueue{why}: {state.message or 'no message'}; "
        f"it is queued again in LocalQueue {queue}."
    )
    return QueueReport(True, ("True", REASON_EVICTED, message), wants_workload=True)


def _admitted(
    name: str,
    where: str,
    keeps_running: bool,
    state: Admission,
    related: Mapping[str, Any],
    spec: MXJobSpec,
) -> QueueReport:
    """An admitted Workload: the pods start with what the admission adds, unless it cannot."""
    infos = pod_set_infos(state, related, spec)
    if isinstance(infos, str) and keeps_running:
        # A flavor gone from under a running job (say) does not stop it.
        return QueueReport(False, None, wants_workload=True)
    if isinstance(infos, str):
        message = f"MXJob {name} is admitted by Kueue in {where}, but {infos}."
        return QueueReport(True, ("True", REASON_QUEUED, message), wants_workload=True)
    message = f"MXJob {name} is admitted by Kueue in {where}."
    return QueueReport(False, ("False", REASON_ADMITTED, message), True, infos)


def _waiting(
    name: str, where: str, why: str, before: Condition | None, wants_workload: bool
) -> QueueReport:
    again = (REASON_EVICTED, REASON_REQUEUED)
    if before and before.get("status") == "True" and before.get("reason") in again:
        # Re-queued after an eviction or an edit: the condition keeps saying why, until
        # admitted.
        return QueueReport(
            True, ("True", str(before["reason"]), before.get("message", "")), wants_workload
        )
    message = f"MXJob {name} is queued in {where}, waiting for Kueue to admit it"
    message += f": {why}" if why else "."
    return QueueReport(True, ("True", REASON_QUEUED, message), wants_workload)


def _held(name: str) -> QueueReport:
    """A job that names no queue, in a namespace that holds such jobs."""
    message = (
        f"MXJob {name} names no LocalQueue and its namespace runs no job outside Kueue: it "
        f"is held. Suspend it, add the {QUEUE_LABEL} label, and resume it."
    )
    return QueueReport(True, ("True", REASON_NO_QUEUE, message), wants_workload=False)
