"""What the writer changes on a Workload's status, from the Workload and its job's pods, as
Kueue's jobframework reconciler does for its own integrations (pure: no I/O, no clock)."""

from collections.abc import Iterable, Mapping
from typing import Any

PODS_READY = "PodsReady"
EVICTED = "Evicted"
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
REQUEUED = "Requeued"
# The PodsReady reasons and messages of Kueue's generatePodsReadyCondition.
WAIT_FOR_START = "WaitForStart"
WAIT_FOR_RECOVERY = "WaitForRecovery"
STARTED = "Started"
RECOVERED = "Recovered"
NOT_READY = "Not all pods are ready or succeeded"
RECOVERING = "At least one pod has failed, waiting for recovery"
READY = "All pods reached readiness and the workload is running"
# Evictions after which Kueue's jobframework marks the Workload Requeued at once; after any
# other (a PodsReady timeout, say) Kueue's Workload controller does, once its backoff ends.
REQUEUED_AT_ONCE = ("Preempted", "NodeFailures")
# Kueue's Workload controller queues a reactivated Workload again only when its Requeued
# condition says `Deactivated`; the eviction's reason may carry a cause after it
# (`DeactivatedDueToRequeuingLimitExceeded`).
DEACTIVATED = "Deactivated"
_DONE = ("Succeeded", "Failed")


def conditions(workload: Mapping[str, Any]) -> list[dict[str, Any]]:
    status = workload.get("status")
    found = status.get("conditions") if isinstance(status, dict) else None
    return [dict(c) for c in found or [] if isinstance(c, dict) and isinstance(c.get("type"), str)]


def find(conds: Iterable[Mapping[str, Any]], ctype: str) -> Mapping[str, Any] | None:
    return next((c for c in conds if c.get("type") == ctype), None)


def is_true(conds: Iterable[Mapping[str, Any]], ctype: str) -> bool:
    found = find(conds, ctype)
    return found is not None and found.get("status") == "True"


def set_condition(conds: list[dict[str, Any]], new: dict[str, Any], now: str) -> None:
    """apimeta.SetStatusCondition: the transition time moves only when the status does."""
    old = find(conds, new["type"])
    if old is None:
        conds.append(new | {"lastTransitionTime": now})
        return
    index = conds.index(old)  # type: ignore[arg-type]
    when = old.get("lastTransitionTime") if old.get("status") == new["status"] else now
    conds[index] = dict(old) | new | {"lastTransitionTime": when or now}


def job_active(pods: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any of the job's pods may still run (being deleted counts: it still holds its
    node's resources until it is gone)."""
    return any(_phase(p) not in _DONE for p in pods)


def pods_ready(workload: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> bool:
    """All the pods the Workload admitted run (or have succeeded), none of them being deleted."""
    spec = workload.get("spec")
    pod_sets = spec.get("podSets") if isinstance(spec, dict) else None
    wanted = sum(int(s.get("count", 0)) for s in pod_sets or [] if isinstance(s, dict))
    running = [
        p
        for p in pods
        if _phase(p) in ("Running", "Succeeded")
        and not p.get("metadata", {}).get("deletionTimestamp")
    ]
    return wanted > 0 and len(running) >= wanted


def _phase(pod: Mapping[str, Any]) -> str:
    status = pod.get("status")
    phase = status.get("phase") if isinstance(status, dict) else None
    return phase if isinstance(phase, str) else "Pending"


def pods_ready_condition(conds: list[dict[str, Any]], ready: bool) -> dict[str, Any]:
    """Kueue's generatePodsReadyCondition for a Workload with these conditions."""
    if not is_true(conds, ADMITTED):
        return _ready_cond("False", WAIT_FOR_START, NOT_READY)
    old = find(conds, PODS_READY)
    if ready:
        recovering = old is not None and old.get("reason") in (WAIT_FOR_RECOVERY, RECOVERED)
        return _ready_cond("True", RECOVERED if recovering else STARTED, READY)
    if old is not None and (old.get("status") == "True" or old.get("reason") == WAIT_FOR_RECOVERY):
        return _ready_cond("False", WAIT_FOR_RECOVERY, RECOVERING)
    return _ready_cond("False", WAIT_FOR_START, NOT_READY)


def _ready_cond(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": PODS_READY, "status": status, "reason": reason, "message": message}


def clear_reservation(conds: list[dict[str, Any]], generation: Any, now: str) -> None:
    """The reservation of an evicted Workload whose job has stopped, undone as Kueue's
    jobframework does: Requeued, QuotaReserved False (Pending), Admitted False."""
    evicted = find(conds, EVICTED) or {}
    reason, message = str(evicted.get("reason", "")), str(evicted.get("message", ""))
    gen = {"observedGeneration": generation} if isinstance(generation, int) else {}
    requeued = "True" if reason in REQUEUED_AT_ONCE else "False"
    cause = DEACTIVATED if reason.startswith(DEACTIVATED) else reason
    set_condition(conds, {"type": REQUEUED, "status": requeued, "reason": cause,
                          "message": message} | gen, now)  # fmt: skip
    set_condition(conds, {"type": QUOTA_RESERVED, "status": "False", "reason": "Pending",
                          "message": message} | gen, now)  # fmt: skip
    if find(conds, ADMITTED) is not None:
        set_condition(conds, {"type": ADMITTED, "status": "False", "reason": "NoReservation",
                              "message": "The workload has no reservation"} | gen, now)  # fmt: skip


def status_patch(
    workload: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], now: str
) -> dict[str, Any] | None:
    """The merge patch of the Workload's status (conditional on its resourceVersion), or None
    when it already says what it should."""
    pods = list(pods)
    meta = workload.get("metadata") or {}
    conds = conditions(workload)
    before = [dict(c) for c in conds]
    status: dict[str, Any] = {}
    clearing = is_true(conds, EVICTED) and is_true(conds, QUOTA_RESERVED) and not job_active(pods)
    if clearing:
        clear_reservation(conds, meta.get("generation"), now)
        status["admission"] = None
    ready = pods_ready_condition(conds, pods_ready(workload, pods))
    if isinstance(meta.get("generation"), int):
        ready["observedGeneration"] = meta["generation"]
    old = find(conds, PODS_READY)
    if old is None or (old.get("status"), old.get("reason")) != (ready["status"], ready["reason"]):
        set_condition(conds, ready, now)
    if conds == before and not clearing:
        return None
    status["conditions"] = conds
    return {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": status}
