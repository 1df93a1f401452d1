"""The job's status, computed from the spec, the observed attempts and the previous status."""

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app import conditions as c
from app.conditions import Condition
from app.pods import Attempt, describe_exit
from app.replicas import Replica, Verdict
from app.spec import MXJobSpec, ReplicaType

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


def stamp(now: datetime) -> str:
    """RFC 3339 in UTC, to the second, as Kubernetes writes times."""
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


@dataclass(frozen=True)
class Outcome:
    """What this sync decided about the job as a whole."""

    conditions: list[Condition]
    start_time: str | None
    resync_after: int


def deciders(spec: MXJobSpec) -> tuple[ReplicaType, ...]:
    """The replica types whose state makes the job Running or Succeeded."""
    if spec.jobMode == "MXTune":
        return (ReplicaType.TUNER,)
    if spec.replicas(ReplicaType.SCHEDULER) > 0:
        return (ReplicaType.SCHEDULER,)
    return (ReplicaType.WORKER,)


def decide(
    name: str, spec: MXJobSpec, replicas: list[Replica], previous: dict[str, Any], now: datetime
) -> Outcome:
    """Conditions, start time and resync delay for a valid job."""
    at = stamp(now)
    conds = c.parse(previous.get("conditions"))
    old_start = previous.get("startTime") if parse_time(previous.get("startTime")) else None
    if c.finished(conds):
        return Outcome(conds, old_start, 0)
    conds = c.set_condition(
        conds, c.CREATED, "True", REASON_CREATED, f"MXJob {name} is created.", at
    )
    if spec.runPolicy.suspend:
        return Outcome(_suspend(name, conds, at), None, 0)
    if c.is_true(conds, c.SUSPENDED):
        resumed = f"MXJob {name} is resumed."
        conds = c.set_condition(conds, c.SUSPENDED, "False", REASON_RESUMED, resumed, at)
    start = old_start or at
    failure = _failure(name, spec, replicas, start, now)
    if failure:
        return Outcome(c.set_condition(conds, c.FAILED, "True", *failure, at), start, 0)
    return Outcome(
        _progress(name, spec, replicas, conds, at), start, _deadline_in(spec, start, now)
    )


def _suspend(name: str, conds: list[Condition], at: str) -> list[Condition]:
    message = f"MXJob {name} is suspended."
    if c.find(conds, c.RUNNING):
        conds = c.set_condition(conds, c.RUNNING, "False", REASON_SUSPENDED, message, at)
    return c.set_condition(conds, c.SUSPENDED, "True", REASON_SUSPENDED, message, at)


def _failure(
    name: str, spec: MXJobSpec, replicas: list[Replica], start: str, now: datetime
) -> tuple[str, str] | None:
    """(reason, message) when the job has failed, else None."""
    for replica in replicas:
        if replica.verdict is Verdict.PERMANENT:
            return REASON_FAILED, f"MXJob {name} has failed because {_exited(replica)}."
    restarts = sum(r.restarts for r in replicas)
    limit = spec.runPolicy.backoffLimit
    if limit is not None and restarts > limit:
        return REASON_BACKOFF, (
            f"MXJob {name} has failed because it has reached the specified backoff limit: "
            f"{restarts} restarts > backoffLimit {limit}."
        )
    deadline = spec.runPolicy.activeDeadlineSeconds
    if deadline is not None and _deadline_in(spec, start, now) == 0:
        return REASON_DEADLINE, (
            f"MXJob {name} has failed because it was active longer than its "
            f"activeDeadlineSeconds ({deadline}s)."
        )
    return None


def _exited(replica: Replica) -> str:
    current = replica.current
    assert current is not None
    what = f"{replica.rtype.value} replica {replica.index} (pod {current.name})"
    if current.reason and current.exit_code is None:
        return f"{what} failed: {current.reason} (restartPolicy {replica.policy.value})"
    policy = replica.policy.value
    return f"{what} failed with {describe_exit(current.exit_code)} (restartPolicy {policy})"


def _deadline_in(spec: MXJobSpec, start: str, now: datetime) -> int:
    """Seconds until activeDeadlineSeconds runs out (0 once it has); 0 without a deadline."""
    deadline = spec.runPolicy.activeDeadlineSeconds
    started = parse_time(start)
    if deadline is None or started is None:
        return 0
    return seconds_until(started, deadline, now)


# The longest wait the hook asks for. Metacontroller holds resyncAfterSeconds in a Go
# time.Duration (at most ~292 years), and a datetime ends in year 9999: whole-second
# arithmetic capped here overflows neither, whatever a spec or a status says.
MAX_WAIT_SECONDS = 2**31 - 1


def seconds_until(since: datetime, seconds: int, now: datetime) -> int:
    """Whole seconds from `now` until `seconds` after `since`: 0 once past, capped."""
    left = math.ceil((since - now).total_seconds()) + seconds
    return min(max(left, 0), MAX_WAIT_SECONDS)


def _progress(
    name: str, spec: MXJobSpec, replicas: list[Replica], conds: list[Condition], at: str
) -> list[Condition]:
    decide_by = deciders(spec)
    mine = [r for r in replicas if r.rtype in decide_by]
    if mine and all(r.verdict is Verdict.SUCCEEDED for r in mine):
        message = f"MXJob {name} successfully completed."
        return c.set_condition(conds, c.SUCCEEDED, "True", REASON_SUCCEEDED, message, at)
    restarting = [r for r in replicas if _restarting(r)]
    if restarting:
        first = restarting[0]
        message = f"MXJob {name} is restarting because {_exited_or_replaced(first)}."
        return c.set_condition(conds, c.RESTARTING, "True", REASON_RESTARTING, message, at)
    if mine and all(r.verdict is Verdict.RUNNING for r in mine):
        message = f"MXJob {name} is running."
        return c.set_condition(conds, c.RUNNING, "True", REASON_RUNNING, message, at)
    return conds


def _restarting(replica: Replica) -> bool:
    """A failed attempt is being replaced: asked for this sync, or pending."""
    if replica.verdict is Verdict.RETRY:
        return True
    return replica.verdict is Verdict.PENDING and _replaced(replica) is not None


def _replaced(replica: Replica) -> Attempt | None:
    previous = replica.attempts[-2] if len(replica.attempts) > 1 else None
    return previous if previous and previous.phase == "Failed" else None


def _exited_or_replaced(replica: Replica) -> str:
    failed = replica.current if replica.verdict is Verdict.RETRY else _replaced(replica)
    assert failed is not None
    return _exited(Replica(replica.rtype, replica.index, replica.policy, (failed,)))


def replica_statuses(spec: MXJobSpec, replicas: list[Replica]) -> dict[str, dict[str, int]]:
    """Counts of the current attempts, by replica type."""
    out = {t.value: {"active": 0, "succeeded": 0, "failed": 0} for t in spec.types()}
    field = {"Running": "active", "Succeeded": "succeeded", "Failed": "failed"}
    for replica in replicas:
        current = replica.current
        if current and current.phase in field:
            out[replica.rtype.value][field[current.phase]] += 1
    return out
