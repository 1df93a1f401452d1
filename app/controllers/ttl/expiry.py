"""When a finished MXJob is due for deletion: its completionTime plus ttlSecondsAfterFinished."""

from datetime import datetime, timedelta
from typing import Any

from app.core.model import conditions
from app.core.model.values import parse_time


def due_at(job: dict[str, Any]) -> datetime | None:
    """When the job may be deleted, from its own status and spec alone; None while it may not:
    not finished, no TTL, a spec under repair (the hook's timers wait too) or no completionTime."""
    status = job.get("status")
    if not isinstance(status, dict):
        return None
    conds = conditions.well_formed(status.get("conditions"))
    if not conditions.finished(conds) or conditions.is_true(conds, conditions.INVALID_SPEC):
        return None
    completed = parse_time(status.get("completionTime"))
    ttl = ttl_seconds(job.get("spec"))
    if completed is None or ttl is None:
        return None
    try:
        return completed + timedelta(seconds=ttl)
    except OverflowError:  # past year 9999: never
        return None


def ttl_seconds(spec: Any) -> int | None:
    """spec.runPolicy.ttlSecondsAfterFinished, or mxnet-operator's spec.ttlSecondsAfterFinished
    (runPolicy wins, as in app/core/validate/validation.py); None unless an integer >= 0."""
    if not isinstance(spec, dict):
        return None
    run_policy = spec.get("runPolicy")
    ttl = spec.get("ttlSecondsAfterFinished")
    if isinstance(run_policy, dict) and "ttlSecondsAfterFinished" in run_policy:
        ttl = run_policy["ttlSecondsAfterFinished"]
    return ttl if type(ttl) is int and ttl >= 0 else None


def seconds_left(due: datetime, now: datetime) -> float:
    """Seconds from `now` until `due`; 0 once it has come: never negative."""
    return max((due - now).total_seconds(), 0.0)
