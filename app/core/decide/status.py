"""The job's status, assembled whole from this sync's decision for a valid spec, and from the
previous status for an invalid one."""

from datetime import datetime
from typing import Any

from app.core.model import conditions
from app.core.model.conditions import REASON_INVALID, Condition, completion_time
from app.core.model.seam import Decision
from app.core.model.spec import MXJobSpec, ReplicaType
from app.core.model.values import format_time, parse_time
from app.core.observe.previous import Previous
from app.core.observe.replicas import Replica

Counts = dict[str, dict[str, int]]


def replica_statuses(spec: MXJobSpec, replicas: list[Replica]) -> Counts:
    """Counts of the current attempts, by replica type."""
    out = {t.value: {"active": 0, "succeeded": 0, "failed": 0} for t in spec.types()}
    # By the enum member itself, not its slower `.value`.
    # (docs/performance.md#fourth-pass-sync-for-the-typical-job-again)
    of_type = {t: out[t.value] for t in spec.types()}
    field = {"Running": "active", "Succeeded": "succeeded", "Failed": "failed"}
    for replica in replicas:
        current = replica.current
        if current and current.phase in field:
            of_type[replica.rtype][field[current.phase]] += 1
    return out


def of_valid_job(
    decision: Decision, spec: MXJobSpec, replicas: list[Replica], previous: Previous
) -> dict[str, Any]:
    """The status of a job whose spec is valid."""
    counts = replica_statuses(spec, replicas)
    if decision.finished and not decision.finishing:
        # A finished job keeps the counts it finished with, after clean-up too.
        counts = _recorded_or(previous.replica_statuses, counts)
    return _assembled(decision.conditions, counts, decision.start_time, decision.restarts)


def of_invalid_job(
    name: str, problem: str, previous: Previous, has_children: bool, now: datetime
) -> dict[str, Any]:
    """The status of a job whose spec is invalid: a job never accepted fails for good; one an
    edit broke (it has children, or was Created) gets InvalidSpec, and the next valid sync
    carries on from its status (docs/behaviour.md#validation)."""
    conds = previous.conditions
    message = f"MXJob {name} has an invalid spec: {problem}."
    counts: Counts = {}
    if has_children or conditions.is_true(conds, conditions.CREATED):
        message += " Its pods and Services are kept as they are until the spec is valid again."
        conds = conditions.set_condition(
            conds, conditions.INVALID_SPEC, "True", REASON_INVALID, message, format_time(now),
            new_message=True,
        )  # fmt: skip
        counts = _recorded_counts(previous.replica_statuses)
    elif not previous.finished:
        conds = conditions.set_condition(
            conds, conditions.FAILED, "True", REASON_INVALID, message, format_time(now)
        )
    return _assembled(conds, counts, previous.start_time, previous.restart_count)


def says_invalid(status: dict[str, Any]) -> bool:
    """Whether a status names an invalid spec (what the hook's metrics count as such)."""
    return bool(invalid_spec_messages(status))


def invalid_spec_messages(status: dict[str, Any]) -> list[str]:
    """The messages of the status's conditions that hold because the spec is invalid."""
    return [
        str(cond.get("message"))
        for cond in status["conditions"]
        if cond.get("reason") == REASON_INVALID and cond.get("status") == "True"
    ]


def _assembled(
    conds: list[Condition], counts: Counts, start: str | None, restarts: int | None
) -> dict[str, Any]:
    """The whole status: Metacontroller replaces `.status` with it, so nothing is left out."""
    status: dict[str, Any] = {"conditions": conds, "replicaStatuses": counts}
    if restarts is not None:
        status["restartCount"] = restarts
    if parse_time(start):
        status["startTime"] = start
    completed = completion_time(conds)
    if completed:
        status["completionTime"] = completed
    return status


def _recorded_or(recorded: Any, counts: Counts) -> Counts:
    """The counts a previous status recorded, where they are of the same types, else `counts`."""
    if not isinstance(recorded, dict) or set(recorded) != set(counts):
        return counts
    return {t: _well_formed_counts(recorded[t], counts[t]) for t in counts}


def _recorded_counts(recorded: Any) -> Counts:
    """The replica counts a previous status recorded, well-formed, for replica types only."""
    if not isinstance(recorded, dict):
        return {}
    empty = {"active": 0, "succeeded": 0, "failed": 0}
    return {
        t.value: _well_formed_counts(recorded[t.value], empty)
        for t in ReplicaType
        if t.value in recorded
    }


def _well_formed_counts(recorded: Any, fallback: dict[str, int]) -> dict[str, int]:
    if not isinstance(recorded, dict):
        return fallback
    return {k: _count(recorded.get(k), v) for k, v in fallback.items()}


def _count(value: Any, fallback: int) -> int:
    return value if type(value) is int and value >= 0 else fallback
