"""This sync's decision about a valid job: its conditions, start time, restarts and resync
delay, from the previous status and the replicas as observed."""

from datetime import datetime

from app.core.model import conditions
from app.core.model.conditions import (
    REASON_BACKOFF,
    REASON_CREATED,
    REASON_DEADLINE,
    REASON_FAILED,
    REASON_RESTARTING,
    REASON_RESUMED,
    REASON_RUNNING,
    REASON_SUCCEEDED,
    REASON_SUSPENDED,
    REASONS_STOPPED,
    Condition,
    completion_time,
)
from app.core.model.seam import NO_REPORTS, Decision, Report, Reports
from app.core.model.spec import CleanPodPolicy, MXJobSpec, ReplicaType, SuccessPolicy
from app.core.model.values import format_time, parse_time, seconds_until
from app.core.observe.pods import Attempt, describe_exit
from app.core.observe.previous import Previous
from app.core.observe.replicas import Replica, ReplicaState

_RUNNING = frozenset({ReplicaState.RUNNING})
_RUNNING_OR_DONE = frozenset({ReplicaState.RUNNING, ReplicaState.SUCCEEDED})


def deciders(spec: MXJobSpec) -> tuple[ReplicaType, ...]:
    """The replica types whose state makes the job Running (and Succeeded, unless
    `succeeders` names others)."""
    if spec.jobMode == "MXTune":
        return (ReplicaType.TUNER,)
    if spec.replicas(ReplicaType.SCHEDULER) > 0:
        return (ReplicaType.SCHEDULER,)
    return (ReplicaType.WORKER,)


def succeeders(spec: MXJobSpec) -> tuple[ReplicaType, ...]:
    """The replica types whose success makes the job Succeeded: under successPolicy AllWorkers
    the Workers of a train job, not its Scheduler (mxnet-operator v1beta1's rule); else the
    `deciders`. A job without Workers (a tune job) has none to wait for: its deciders decide."""
    all_workers = spec.successPolicy is SuccessPolicy.ALL_WORKERS
    if all_workers and spec.jobMode == "MXTrain" and spec.replicas(ReplicaType.WORKER) > 0:
        return (ReplicaType.WORKER,)
    return deciders(spec)


def decide(
    name: str,
    spec: MXJobSpec,
    replicas: list[Replica],
    previous: Previous,
    now: datetime,
    reports: Reports = NO_REPORTS,
) -> Decision:
    """Conditions, start time and resync delay for a valid job; `reports`: what the
    integrations report before the decision."""
    if previous.finished:
        # A finished job keeps the count it finished with, after clean-up too.
        recorded = previous.restart_count
        restarts = sum(r.restarts for r in replicas) if recorded is None else recorded
        return _finished(spec, previous.conditions, previous.start_time, 0, restarts, False)
    at = format_time(now)
    conds = previous.conditions
    conds = conditions.set_condition(
        conds, conditions.CREATED, "True", REASON_CREATED, f"MXJob {name} is created.", at
    )
    if spec.runPolicy.suspend:
        return Decision(_suspend(name, conds, at), None, 0, 0)
    for report in reports.reports:
        conds = _apply_report(report, conds, at)
    if reports.wait:
        return Decision(conds, None, 0, 0)
    if conditions.is_true(conds, conditions.SUSPENDED):
        resumed = f"MXJob {name} is resumed."
        conds = conditions.set_condition(
            conds, conditions.SUSPENDED, "False", REASON_RESUMED, resumed, at
        )
    start = previous.start_time or at
    restarts = sum(r.restarts for r in replicas)
    failure = _failure(name, spec, replicas, restarts, start, now)
    if failure:
        conds = conditions.set_condition(conds, conditions.FAILED, "True", *failure, at)
        return _finished(spec, conds, start, 0, restarts, True)
    conds = _progress(name, spec, replicas, conds, at)
    resync = _deadline_in(spec, start, now)
    if conditions.finished(conds):
        return _finished(spec, conds, start, resync, restarts, True)
    return Decision(conds, start, resync, restarts)


def _apply_report(report: Report, conds: list[Condition], at: str) -> list[Condition]:
    """The conditions after an integration's report: its own condition, and while the job
    waits, like suspend, no pods, a Running job is no longer, and no start time until it may
    run."""
    if report.condition is not None:
        conds = conditions.set_condition(
            conds, report.condition_type, *report.condition, at, new_message=True
        )
    if not report.wait:
        return conds
    _, reason, message = report.condition or ("", "", "")
    running = conditions.is_true(conds, conditions.RUNNING)
    if running or conditions.is_true(conds, conditions.RESTARTING):
        conds = conditions.set_condition(conds, conditions.RUNNING, "False", reason, message, at)
    return conds


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
    failed = conditions.find(conds, conditions.FAILED)
    if failed and failed.get("reason") in REASONS_STOPPED and cleanup is CleanPodPolicy.NONE:
        cleanup = CleanPodPolicy.RUNNING
    completed = completion_time(conds)
    return Decision(conds, start, resync, restarts, True, finishing, completed, cleanup)


def _suspend(name: str, conds: list[Condition], at: str) -> list[Condition]:
    message = f"MXJob {name} is suspended."
    # Running False also ends a Restarting one (they exclude each other): no pod is replaced.
    if conditions.find(conds, conditions.RUNNING) or conditions.is_true(
        conds, conditions.RESTARTING
    ):
        conds = conditions.set_condition(
            conds, conditions.RUNNING, "False", REASON_SUSPENDED, message, at
        )
    return conditions.set_condition(
        conds, conditions.SUSPENDED, "True", REASON_SUSPENDED, message, at
    )


def _failure(
    name: str, spec: MXJobSpec, replicas: list[Replica], restarts: int, start: str, now: datetime
) -> tuple[str, str] | None:
    """(reason, message) when the job has failed, else None; `restarts`: the job's restarts."""
    for replica in replicas:
        if replica.state is ReplicaState.PERMANENT:
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
    decide_by, succeed_by = deciders(spec), succeeders(spec)
    done = [r for r in replicas if r.rtype in succeed_by]
    if done and all(r.state is ReplicaState.SUCCEEDED for r in done):
        message = f"MXJob {name} successfully completed."
        return conditions.set_condition(
            conds, conditions.SUCCEEDED, "True", REASON_SUCCEEDED, message, at
        )
    for replica in replicas:
        if replica.restarting:
            failed = replica.last_failed
            assert failed is not None
            message = f"MXJob {name} is restarting because {_exited(replica, failed)}."
            return conditions.set_condition(
                conds, conditions.RESTARTING, "True", REASON_RESTARTING, message, at
            )
    # A decider whose success does not end the job (a Scheduler under AllWorkers) counts as
    # running once it has succeeded, as mxnet-operator v1beta1 had it: the Workers go on.
    running = _RUNNING if decide_by == succeed_by else _RUNNING_OR_DONE
    mine = [r for r in replicas if r.rtype in decide_by]
    if mine and all(r.state in running for r in mine):
        message = f"MXJob {name} is running."
        return conditions.set_condition(
            conds, conditions.RUNNING, "True", REASON_RUNNING, message, at
        )
    return conds
