"""An observed Workload's admission: admitted or evicted, where, why, and what it adds to pods."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.integrations.kueue.api import PODS_READY, dicts, strings


@dataclass(frozen=True)
class PodSetInfo:
    """What an admission adds to the pods of one pod set (Kueue's podset.PodSetInfo)."""

    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Admission:
    """An observed Workload's state, read from its status conditions."""

    admitted: bool
    evicted: bool
    cluster_queue: str | None
    # Kueue's own words: why it is not admitted, or why it was evicted.
    message: str
    reason: str
    # Per pod set: the flavor assigned to each resource.
    flavors: dict[str, list[str]]
    updates: dict[str, PodSetInfo]
    # Whether a Workload-status writer tends it (it alone writes PodsReady on our Workloads):
    # then an eviction keeps the Workload and the writer clears its reservation.
    kept_on_eviction: bool = False
    # False once Kueue (past its requeuing limit) or an admin deactivates it: Kueue does not
    # queue it again until `spec.active` is true again.
    active: bool = True


def admission(workload: Mapping[str, Any]) -> Admission:
    """The state of an observed Workload; anything malformed reads as not admitted."""
    status = workload.get("status")
    status = status if isinstance(status, dict) else {}
    conds = {
        cond["type"]: cond
        for cond in status.get("conditions") or []
        if isinstance(cond, dict) and isinstance(cond.get("type"), str)
    }

    def true(ctype: str) -> bool:
        return conds.get(ctype, {}).get("status") == "True"

    def text(ctype: str, key: str) -> str:
        value = conds.get(ctype, {}).get(key)
        return value if isinstance(value, str) else ""

    admission_ = status.get("admission")
    admission_ = admission_ if isinstance(admission_, dict) else {}
    queue = admission_.get("clusterQueue")
    evicted = true("Evicted")
    if evicted:
        message, reason = text("Evicted", "message"), text("Evicted", "reason")
    else:
        message, reason = text("QuotaReserved", "message"), text("QuotaReserved", "reason")
        if true("QuotaReserved") and not true("Admitted"):
            message = text("Admitted", "message") or "waiting for admission checks"
    return Admission(
        admitted=true("Admitted") and not evicted,
        evicted=evicted,
        cluster_queue=queue if isinstance(queue, str) and queue else None,
        message=message,
        reason=reason,
        flavors=_assigned_flavors(admission_.get("podSetAssignments")),
        updates=_pod_set_updates(status.get("admissionChecks")),
        kept_on_eviction=PODS_READY in conds,
        active=_active(workload),
    )


def _active(workload: Mapping[str, Any]) -> bool:
    spec = workload.get("spec")
    return not (isinstance(spec, dict) and spec.get("active") is False)


def _assigned_flavors(assignments: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in assignments if isinstance(assignments, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        flavors = item.get("flavors")
        flavors = flavors if isinstance(flavors, dict) else {}
        # Each flavor once, in the order of the resources it was assigned for.
        unique = dict.fromkeys(f for _, f in sorted(flavors.items()) if isinstance(f, str))
        out[item["name"]] = list(unique)
    return out


def _pod_set_updates(checks: Any) -> dict[str, PodSetInfo]:
    """What admission checks ask of each pod set (`podSetUpdates`), merged in check order."""
    out: dict[str, PodSetInfo] = {}
    for check in checks if isinstance(checks, list) else ():
        updates = check.get("podSetUpdates") if isinstance(check, dict) else None
        for update in updates if isinstance(updates, list) else ():
            if not isinstance(update, dict) or not isinstance(update.get("name"), str):
                continue
            info = PodSetInfo(
                node_selector=strings(update.get("nodeSelector")),
                tolerations=dicts(update.get("tolerations")),
                labels=strings(update.get("labels")),
                annotations=strings(update.get("annotations")),
            )
            name = update["name"]
            out[name] = merged(out[name], info) if name in out else info
    return out


def merged(base: PodSetInfo, other: PodSetInfo) -> PodSetInfo:
    tolerations = base.tolerations + [t for t in other.tolerations if t not in base.tolerations]
    return PodSetInfo(
        base.node_selector | other.node_selector,
        tolerations,
        base.labels | other.labels,
        base.annotations | other.annotations,
    )
