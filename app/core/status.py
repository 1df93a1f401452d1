"""The job's status: the previous one read once, this sync's decision about the job, and the
whole status assembled from them, for a valid spec and for an invalid one."""

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from app.core import conditions as c
from app.core.conditions import Condition
from app.core.decision import Decision
from app.core.pods import Attempt, describe_exit
from app.core.replicas import Replica, Verdict
from app.core.spec import CleanPodPolicy, MXJobSpec, ReplicaType
from app.core.times import format_time, parse_time, seconds_until
from app.integrations.kueue import Gate

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

Counts = dict[str, dict[str, int]]


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
        conds = c.without(self.conditions, ctype)
        return replace(self, conditions=conds, finished=c.finished(conds))


def read_previous(status: dict[str, Any] | None, has_children: bool) -> Previous:
    """The previous status, read once. An edit that broke the spec of a job that still has
    children made earlier versions fail it for good (MXJobInvalidSpec): that Failed condition is
    dropped, and the job goes on as an edited one (docs/behaviour.md#validation)."""
    status = status or {}
    conds = c.well_formed(status.get("conditions"))
    failed = c.find(conds, c.FAILED)
    if has_children and failed and failed.get("reason") == REASON_INVALID:
        conds = c.without(conds, c.FAILED)
    start = status.get("startTime")
    start_time = start if parse_time(start) else None
    restarts = status.get("restartCount")
    restart_count = restarts if type(restarts) is int and restarts >= 0 else None
    return Previous(
        conds, start_time, status.get("replicaStatuses"), c.finished(conds), restart_count
    )


def deciders(spec: MXJobSpec) -> tuple[ReplicaType, ...]:
    """The replica types whose state makes the job Running or Succeeded."""
    if spec.jobMode == "MXTune":
        return (ReplicaType.TUNER,)
    if spec.replicas(ReplicaType.SCHEDULER) > 0:
        return (ReplicaType.SCHEDULER,)
    return (ReplicaType.WORKER,)


def decide(
    name: str,
    spec: MXJobSpec,
    replicas: list[Replica],
    previous: Previous,
    now: datetime,
    queue: Gate | None = None,
) -> Decision:
    """Conditions, start time and resync delay for a valid job; `queue`: Kueue's say, if it
    has one."""
    if previous.finished:
        # A finished job keeps the count it finished with, after clean-up too.
        recorded = previous.restart_count
        restarts = sum(r.restarts for r in replicas) if recorded is None else recorded
        return _finished(spec, previous.conditions, previous.start_time, 0, restarts, False)
    at = format_time(now)
    conds = previous.conditions
    conds = c.set_condition(
        conds, c.CREATED, "True", REASON_CREATED, f"MXJob {name} is created.", at
    )
    if spec.runPolicy.suspend:
        return Decision(_suspend(name, conds, at), None, 0, 0)
    if queue is not None and queue.condition is not None:
        conds = c.set_condition(conds, c.QUEUED, *queue.condition, at, new_message=True)
    if queue is not None and queue.wait:
        # Like suspend: no pods, a Running job is no longer, and no start time until admitted.
        _, reason, message = queue.condition or ("", "", "")
        if c.is_true(conds, c.RUNNING) or c.is_true(conds, c.RESTARTING):
            conds = c.set_condition(conds, c.RUNNING, "False", reason, message, at)
        return Decision(conds, None, 0, 0)
    if c.is_true(conds, c.SUSPENDED):
        resumed = f"MXJob {name} is resumed."
        conds = c.set_condition(conds, c.SUSPENDED, "False", REASON_RESUMED, resumed, at)
    start = previous.start_time or at
    restarts = sum(r.restarts for r in replicas)
    failure = _failure(name, spec, replicas, restarts, start, now)
    if failure:
        conds = c.set_condition(conds, c.FAILED, "True", *failure, at)
        return _finished(spec, conds, start, 0, restarts, True)
    conds = _progress(name, spec, replicas, conds, at)
    resync = _deadline_in(spec, start, now)
    if c.finished(conds):
        return _finished(spec, conds, start, resync, restarts, True)
    return Decision(conds, start, resync, restarts)


def _finished(
    spec: MXJobSpec,
    conds: list[Condition],
    start: str | None,
    resync: int,
    restarts: int,
    finishing: bool,
) -> Decision:
    """The decision about a finished job: what goes of its pods, and when it finished."""
    cleanup = spec.runPolicy.cleanPodPolicy
    failed = c.find(conds, c.FAILED)
    if failed and failed.get("reason") in REASONS_STOPPED and cleanup is CleanPodPolicy.NONE:
        cleanup = CleanPodPolicy.RUNNING
    completed = completion_time(conds)
    return Decision(conds, start, resync, restarts, True, finishing, completed, cleanup)


def _suspend(name: str, conds: list[Condition], at: str) -> list[Condition]:
    message = f"MXJob {name} is suspended."
    # Running False also ends a Restarting one (they exclude each other): no pod is replaced.
    if c.find(conds, c.RUNNING) or c.is_true(conds, c.RESTARTING):
        conds = c.set_condition(conds, c.RUNNING, "False", REASON_SUSPENDED, message, at)
    return c.set_condition(conds, c.SUSPENDED, "True", REASON_SUSPENDED, message, at)


def _failure(
    name: str, spec: MXJobSpec, replicas: list[Replica], restarts: int, start: str, now: datetime
) -> tuple[str, str] | None:
    """(reason, message) when the job has failed, else None; `restarts`: the job's restarts."""
    for replica in replicas:
        if replica.verdict is Verdict.PERMANENT:
            assert replica.current is not None
            because = _exited(replica, replica.current)
            return REASON_FAILED, f"MXJob {name} has failed because {because}."
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


def _exited(replica: Replica, failed: Attempt) -> str:
    """How the failed attempt of `replica` ended, for a condition's message."""
    what = f"{replica.rtype.value} replica {replica.index} (pod {failed.name})"
    policy = replica.policy.value
    if failed.reason and failed.exit_code is None:
        return f"{what} failed: {failed.reason} (restartPolicy {policy})"
    return f"{what} failed with {describe_exit(failed.exit_code)} (restartPolicy {policy})"


def _deadline_in(spec: MXJobSpec, start: str, now: datetime) -> int:
    """Seconds until activeDeadlineSeconds runs out (0 once it has); 0 without a deadline."""
    deadline = spec.runPolicy.activeDeadlineSeconds
    started = parse_time(start)
    if deadline is None or started is None:
        return 0
    return seconds_until(started, deadline, now)


def _progress(
    name: str, spec: MXJobSpec, replicas: list[Replica], conds: list[Condition], at: str
) -> list[Condition]:
    decide_by = deciders(spec)
    mine = [r for r in replicas if r.rtype in decide_by]
    if mine and all(r.verdict is Verdict.SUCCEEDED for r in mine):
        message = f"MXJob {name} successfully completed."
        return c.set_condition(conds, c.SUCCEEDED, "True", REASON_SUCCEEDED, message, at)
    for replica in replicas:
        if replica.restarting:
            failed = replica.last_failed
            assert failed is not None
            message = f"MXJob {name} is restarting because {_exited(replica, failed)}."
            return c.set_condition(conds, c.RESTARTING, "True", REASON_RESTARTING, message, at)
    if mine and all(r.verdict is Verdict.RUNNING for r in mine):
        message = f"MXJob {name} is running."
        return c.set_condition(conds, c.RUNNING, "True", REASON_RUNNING, message, at)
    return conds


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
    if has_children or c.is_true(conds, c.CREATED):
        message += " Its pods and Services are kept as they are until the spec is valid again."
        conds = c.set_condition(
            conds, c.INVALID_SPEC, "True", REASON_INVALID, message, format_time(now),
            new_message=True,
        )  # fmt: skip
        counts = _recorded_counts(previous.replica_statuses)
    elif not previous.finished:
        conds = c.set_condition(conds, c.FAILED, "True", REASON_INVALID, message, format_time(now))
    return _assembled(conds, counts, previous.start_time, previous.restart_count)


def says_invalid(status: dict[str, Any]) -> bool:
    """Whether a status names an invalid spec (what the hook's metrics count as such)."""
    return any(cond.get("reason") == REASON_INVALID for cond in status["conditions"])


def completion_time(conds: list[Condition]) -> str | None:
    for ctype in (c.SUCCEEDED, c.FAILED):
        found = c.find(conds, ctype)
        if found and found.get("status") == "True":
            return found.get("lastTransitionTime")
    return None


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
