"""The status the job had, read once at the start of a sync, as far as it is well-formed."""

from dataclasses import dataclass, replace
from typing import Any

from app.core.model import conditions
from app.core.model.conditions import REASON_INVALID, Condition
from app.core.model.values import parse_time


@dataclass(frozen=True)
class Previous:
    """The status the job had, as far as it is well-formed: read once per sync."""

    conditions: list[Condition]
    # Only a time that parses.
    start_time: str | None
    # As observed: read only when the job is finished, or its spec invalid.
    replica_statuses: Any
    finished: bool
    # Only a count that is an integer >= 0.
    restart_count: int | None

    def without(self, ctype: str) -> "Previous":
        conds = conditions.without(self.conditions, ctype)
        return replace(self, conditions=conds, finished=conditions.finished(conds))


def read_previous(
    status: dict[str, Any] | None, has_children: bool, guest_types: tuple[str, ...] = ()
) -> Previous:
    """The previous status, read once. An edit that broke the spec of a job that still has
    children made earlier versions fail it for good (MXJobInvalidSpec): that Failed condition is
    dropped, and the job goes on as an edited one (docs/behaviour.md#validation). `guest_types`:
    the condition types the integrations set, kept beside the core's."""
    status = status or {}
    conds = conditions.well_formed(status.get("conditions"), conditions.TYPES + guest_types)
    failed = conditions.find(conds, conditions.FAILED)
    if has_children and failed and failed.get("reason") == REASON_INVALID:
        conds = conditions.without(conds, conditions.FAILED)
    start = status.get("startTime")
    start_time = start if parse_time(start) else None
    restarts = status.get("restartCount")
    restart_count = restarts if type(restarts) is int and restarts >= 0 else None
    return Previous(
        conds, start_time, status.get("replicaStatuses"), conditions.finished(conds), restart_count
    )
