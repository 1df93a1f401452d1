"""Job conditions, their reasons in Kubeflow's words, and the rules for changing them
(Kubeflow's, kept as a fixed point)."""

from typing import Any

Condition = dict[str, str]

CREATED = "Created"
RUNNING = "Running"
RESTARTING = "Restarting"
SUSPENDED = "Suspended"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
# Not terminal: an edit of a job that has children broke its spec; those children are kept
# as they are until the spec is valid again, and the condition then goes away.
INVALID_SPEC = "InvalidSpec"
# The core's condition types; an integration names its own (`seam.Integration`).
TYPES = (CREATED, RUNNING, RESTARTING, SUSPENDED, SUCCEEDED, FAILED, INVALID_SPEC)

REASON_CREATED = "MXJobCreated"
REASON_RUNNING = "MXJobRunning"
REASON_RESTARTING = "MXJobRestarting"
REASON_SUSPENDED = "MXJobSuspended"
REASON_RESUMED = "MXJobResumed"
REASON_SUCCEEDED = "MXJobSucceeded"
REASON_FAILED = "MXJobFailed"
REASON_DEADLINE = "DeadlineExceeded"
REASON_BACKOFF = "BackoffLimitExceeded"
REASON_INVALID = "MXJobInvalidSpec"
# Reasons that stop a job against its will: its running pods go, whatever cleanPodPolicy says.
REASONS_STOPPED = (REASON_DEADLINE, REASON_BACKOFF)

_EXCLUSIVE = {RUNNING: RESTARTING, RESTARTING: RUNNING}
_STATUSES = ("True", "False", "Unknown")
_FIELDS = ("type", "status", "reason", "message", "lastUpdateTime", "lastTransitionTime")


def well_formed(raw: Any, types: tuple[str, ...] = TYPES) -> list[Condition]:
    """The well-formed conditions of an observed status of these `types`, one per type, in
    order."""
    if not isinstance(raw, list):
        return []
    out: dict[str, Condition] = {}
    for item in raw:
        if isinstance(item, dict) and item.get("type") in types and item.get("status") in _STATUSES:
            out.pop(item["type"], None)
            out[item["type"]] = {k: item[k] for k in _FIELDS if isinstance(item.get(k), str)}
    return list(out.values())


def find(conditions: list[Condition], ctype: str) -> Condition | None:
    return next((c for c in conditions if c.get("type") == ctype), None)


def is_true(conditions: list[Condition], ctype: str) -> bool:
    found = find(conditions, ctype)
    return found is not None and found.get("status") == "True"


def finished(conditions: list[Condition]) -> bool:
    return is_true(conditions, SUCCEEDED) or is_true(conditions, FAILED)


def set_condition(
    conditions: list[Condition],
    ctype: str,
    status: str,
    reason: str,
    message: str,
    at: str,
    *,
    new_message: bool = False,
) -> list[Condition]:
    """`conditions` with one set at `at` (the sync's time as written): one that keeps its
    status and reason (and, with `new_message`, its message) is left alone; a changed one goes
    last of its kind, True ones last, so the last is the job's state (`kubectl get mxj`)."""
    old = find(conditions, ctype) or {}
    unchanged = old.get("status") == status and old.get("reason") == reason
    if unchanged and (not new_message or old.get("message") == message):
        return conditions
    kept_transition = old and old.get("status") == status and old.get("lastTransitionTime")
    new = {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": at,
        "lastTransitionTime": kept_transition or at,
    }
    rest = [c for c in conditions if c.get("type") not in (ctype, _EXCLUSIVE.get(ctype))]
    if ctype in (SUCCEEDED, FAILED) and status == "True":
        rest = [_stopped(c, reason, message, at) for c in rest]
    ordered = [*rest, new]
    return [c for c in ordered if c.get("status") != "True"] + [
        c for c in ordered if c.get("status") == "True"
    ]


def without(conditions: list[Condition], ctype: str) -> list[Condition]:
    return [c for c in conditions if c.get("type") != ctype]


def _stopped(condition: Condition, reason: str, message: str, at: str) -> Condition:
    """A finished job is neither running nor restarting."""
    if condition.get("type") not in (RUNNING, RESTARTING) or condition.get("status") != "True":
        return condition
    return condition | {
        "status": "False",
        "reason": reason,
        "message": message,
        "lastUpdateTime": at,
        "lastTransitionTime": at,
    }


def completion_time(conds: list[Condition]) -> str | None:
    """When the job finished: the transition of its True Succeeded or Failed condition."""
    for ctype in (SUCCEEDED, FAILED):
        found = find(conds, ctype)
        if found and found.get("status") == "True":
            return found.get("lastTransitionTime")
    return None
