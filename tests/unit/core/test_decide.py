"""This sync's decision (app/core/decide/decision.py), from docs/behaviour.md#status: who decides
(the Scheduler, else the Worker; the Tuner of a tune job), a permanent failure, the backoff
limit, the deadline, suspend, what an integration reports, and a finished job staying finished."""

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from app.core.decide.decision import decide
from app.core.model.seam import Decision, PodUpdate, Reports
from app.core.model.spec import CleanPodPolicy, ReplicaType, RestartPolicy
from app.core.model.values import format_time
from app.core.observe.pods import Attempt
from app.core.observe.previous import read_previous
from app.core.observe.replicas import Replica
from app.core.validate.validation import validated_spec
from tests.support import jobs as s

AT = format_time(s.NOW)
SCHEDULER, WORKER, TUNER = ReplicaType.SCHEDULER, ReplicaType.WORKER, ReplicaType.TUNER


def replica(rtype: ReplicaType, phase: str | None, policy: str = "Never", **pod: Any) -> Replica:
    """One replica index 0 of `rtype` whose only pod is in `phase` (None: no pod)."""
    name = f"mnist-{rtype.lowered}-0"
    attempts = () if phase is None else (
        Attempt(name, rtype, 0, 0, 0, phase, 0, pod.get("exit_code"), pod.get("reason", "")),
    )  # fmt: skip
    return Replica(rtype, 0, RestartPolicy(policy), attempts)


def train(workers: int = 1, scheduler: bool = True, **run_policy: Any) -> Any:
    spec = s.train_spec(servers=0, workers=workers) | {"runPolicy": run_policy}
    if not scheduler:
        del spec["mxReplicaSpecs"]["Scheduler"]
    return validated_spec("mnist", spec)


def decided(spec: Any, replicas: list[Replica], status: Any = None, **kw: Any) -> Decision:
    return decide("mnist", spec, replicas, read_previous(status, bool(replicas)), s.NOW, **kw)


def states(decision: Decision) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in decision.conditions}


CREATED = {"Created": ("True", "MXJobCreated")}


@pytest.mark.parametrize(
    ("spec", "replicas", "expected"),
    [
        pytest.param(train(), [replica(SCHEDULER, None), replica(WORKER, None)], CREATED, id="new"),
        pytest.param(
            train(), [replica(SCHEDULER, "Running"), replica(WORKER, "Pending")],
            CREATED | {"Running": ("True", "MXJobRunning")}, id="the-scheduler-decides-running",
        ),
        pytest.param(
            train(), [replica(SCHEDULER, "Pending"), replica(WORKER, "Running")],
            CREATED, id="a-worker-alone-does-not-make-it-running",
        ),
        pytest.param(
            train(scheduler=False), [replica(WORKER, "Succeeded")],
            CREATED | {"Succeeded": ("True", "MXJobSucceeded")},
            id="without-a-scheduler-the-worker-decides",
        ),
        pytest.param(
            train(), [replica(SCHEDULER, "Running"), replica(WORKER, "Failed", exit_code=1)],
            CREATED | {"Failed": ("True", "MXJobFailed")},
            id="a-permanent-failure-fails-the-job",
        ),
        pytest.param(
            train(), [replica(SCHEDULER, "Running"), replica(WORKER, "Failed", "OnFailure")],
            CREATED | {"Restarting": ("True", "MXJobRestarting")},
            id="a-retryable-failure-restarts",
        ),
        pytest.param(
            train(backoffLimit=0),
            [replica(SCHEDULER, "Running"), replica(WORKER, "Failed", "OnFailure")],
            CREATED | {"Failed": ("True", "BackoffLimitExceeded")},
            id="past-the-backoff-limit",
        ),
        pytest.param(
            train(suspend=True), [replica(SCHEDULER, "Running"), replica(WORKER, "Running")],
            CREATED | {"Suspended": ("True", "MXJobSuspended")}, id="suspended",
        ),
        pytest.param(
            validated_spec("mnist", {"jobMode": "MXTune", "mxReplicaSpecs": {
                t: s.replica() for t in ("TunerTracker", "TunerServer", "Tuner")}}),
            [replica(TUNER, "Running")],
            CREATED | {"Running": ("True", "MXJobRunning")}, id="the-tuner-decides-a-tune-job",
        ),
    ],
)  # fmt: skip
def test_the_conditions_follow_the_replicas(
    spec: Any, replicas: list[Replica], expected: dict[str, tuple[str, str]]
) -> None:
    assert states(decided(spec, replicas)) == expected


def test_the_deadline_fails_a_job_that_ran_too_long() -> None:
    started = format_time(s.NOW - timedelta(seconds=61))
    created = s.condition("Created", "True", "MXJobCreated", started, "")
    status = {"conditions": [created], "startTime": started}
    made = decided(train(activeDeadlineSeconds=60), [replica(SCHEDULER, "Running")], status)
    assert states(made)["Failed"] == ("True", "DeadlineExceeded")
    assert (made.finished, made.finishing, made.cleanup) == (True, True, CleanPodPolicy.RUNNING)


def test_the_deadline_asks_for_a_sync_when_it_runs_out() -> None:
    made = decided(train(activeDeadlineSeconds=60), [replica(SCHEDULER, "Running")])
    assert (made.start_time, made.resync_after) == (AT, 60)


def test_a_finished_job_stays_finished_with_its_restarts() -> None:
    done = {"conditions": [s.condition("Succeeded", "True", "MXJobSucceeded", AT, "")]}
    made = decided(train(), [replica(SCHEDULER, "Failed")], done | {"restartCount": 3})
    assert (made.finished, made.finishing, made.restarts, made.completion_time) == (
        True, False, 3, AT,
    )  # fmt: skip
    assert states(made) == {"Succeeded": ("True", "MXJobSucceeded")}


@dataclass(frozen=True)
class GuestReport:
    condition_type: str = "Queued"
    condition: tuple[str, str, str] | None = ("True", "Waits", "waits for its turn")
    wait: bool = True
    pod_sets: dict[ReplicaType, PodUpdate] = field(default_factory=dict)


def test_an_integration_that_holds_the_job_stops_it_running() -> None:
    running = {"conditions": [s.condition("Running", "True", "MXJobRunning", AT, "")]}
    made = decided(
        train(), [replica(SCHEDULER, "Running")], running, reports=Reports((GuestReport(),))
    )
    assert states(made) == CREATED | {
        "Running": ("False", "Waits"),
        "Queued": ("True", "Waits"),
    }
    assert (made.start_time, made.resync_after, made.restarts) == (None, 0, 0)


def test_an_integration_that_lets_the_job_run_only_sets_its_condition() -> None:
    report = GuestReport(condition=("False", "Admitted", "admitted"), wait=False)
    made = decided(train(), [replica(SCHEDULER, "Running")], reports=Reports((report,)))
    assert states(made) == CREATED | {
        "Queued": ("False", "Admitted"),
        "Running": ("True", "MXJobRunning"),
    }
