"""The job's status (app/core/decide/status.py): the previous one read once, as far as it is
well-formed, and the whole status assembled from a decision, for a valid spec and an invalid
one (docs/behaviour.md#status, #validation)."""

from dataclasses import replace
from typing import Any

import pytest

from app.core.decide import status
from app.core.model.conditions import completion_time
from app.core.model.seam import Decision
from app.core.model.spec import ReplicaType, RestartPolicy
from app.core.model.values import format_time
from app.core.observe.pods import Attempt
from app.core.observe.previous import read_previous
from app.core.observe.replicas import Replica
from app.core.validate.validation import validated_spec
from tests.support.jobs import NOW, condition, train_spec

T0, T1 = "2026-11-22T11:00:00Z", format_time(NOW)
CREATED = condition("Created", "True", "MXJobCreated", T0, "MXJob mnist is created.")
RUNNING = condition("Running", "True", "MXJobRunning", T0, "MXJob mnist is running.")
SUCCEEDED = condition("Succeeded", "True", "MXJobSucceeded", T1, "MXJob mnist succeeded.")
BROKEN = condition("Failed", "True", "MXJobInvalidSpec", T0, "MXJob mnist has an invalid spec.")
COUNTS = {"Scheduler": {"active": 0, "succeeded": 1, "failed": 0}}


@pytest.mark.parametrize(
    ("raw", "has_children", "conditions"),
    [
        pytest.param(None, False, [], id="none"),
        pytest.param({"conditions": [CREATED, "junk", {"type": "Bogus"}]}, False, [CREATED],
                     id="well-formed-conditions-only"),
        # An edit broke a running job's spec, and an earlier version failed it for good.
        pytest.param({"conditions": [CREATED, BROKEN]}, True, [CREATED],
                     id="invalid-spec-failure-of-a-job-with-children-dropped"),
        pytest.param({"conditions": [CREATED, BROKEN]}, False, [CREATED, BROKEN],
                     id="invalid-spec-failure-of-a-job-never-accepted-kept"),
    ],
)  # fmt: skip
def test_the_previous_conditions(
    raw: dict[str, Any] | None, has_children: bool, conditions: list[dict[str, str]]
) -> None:
    previous = read_previous(raw, has_children)
    assert (previous.conditions, previous.finished) == (conditions, BROKEN in conditions)


@pytest.mark.parametrize(
    ("raw", "start_time", "restart_count"),
    [
        pytest.param({"startTime": T0, "restartCount": 2}, T0, 2, id="well-formed"),
        pytest.param({"startTime": "yesterday", "restartCount": -1}, None, None, id="bad-values"),
        pytest.param({"startTime": 5, "restartCount": True}, None, None, id="wrong-types"),
        pytest.param({"restartCount": "3"}, None, None, id="count-as-text"),
    ],
)
def test_the_previous_start_time_and_restart_count(
    raw: dict[str, Any], start_time: str | None, restart_count: int | None
) -> None:
    previous = read_previous(raw, has_children=False)
    assert (previous.start_time, previous.restart_count) == (start_time, restart_count)


def test_the_previous_status_without_one_condition_is_finished_no_more() -> None:
    previous = read_previous({"conditions": [CREATED, BROKEN]}, has_children=False)
    assert previous.finished
    assert read_previous(None, False).without("Failed") == read_previous(None, False)
    assert previous.without("Failed") == read_previous({"conditions": [CREATED]}, False)


SPEC = validated_spec("mnist", train_spec(servers=0, workers=3))


def replica(rtype: ReplicaType, index: int, *phases: str) -> Replica:
    attempts = tuple(
        Attempt(f"p{n}", rtype, index, n, 0, phase, 0, None, "") for n, phase in enumerate(phases)
    )
    return Replica(rtype, index, RestartPolicy.NEVER, attempts)


# The current attempts as of this sync: a replaced attempt is not counted.
REPLICAS = [
    replica(ReplicaType.SCHEDULER, 0, "Succeeded"),
    replica(ReplicaType.WORKER, 0, "Failed", "Running"),
    replica(ReplicaType.WORKER, 1, "Failed"),
    replica(ReplicaType.WORKER, 2, "Pending"),
]
NOW_COUNTS = {
    "Scheduler": {"active": 0, "succeeded": 1, "failed": 0},
    "Worker": {"active": 1, "succeeded": 0, "failed": 1},
}


def test_replica_statuses_count_the_current_attempts() -> None:
    assert status.replica_statuses(SPEC, REPLICAS) == NOW_COUNTS
    none = {t: {"active": 0, "succeeded": 0, "failed": 0} for t in ("Scheduler", "Worker")}
    assert status.replica_statuses(SPEC, []) == none


def decision(**kw: Any) -> Decision:
    return replace(Decision([CREATED, RUNNING], start_time=T0, resync_after=0, restarts=0), **kw)


RECORDED = {"Scheduler": {"active": 0, "succeeded": 1, "failed": 0},
            "Worker": {"active": 0, "succeeded": 0, "failed": 3}}  # fmt: skip
DONE = [CREATED, SUCCEEDED]


# Metacontroller replaces `.status` with the answer's: every field, every time.
@pytest.mark.parametrize(
    ("made", "recorded", "expected"),
    [
        pytest.param(decision(), RECORDED,
                     {"conditions": [CREATED, RUNNING], "replicaStatuses": NOW_COUNTS,
                      "restartCount": 0, "startTime": T0}, id="running"),
        pytest.param(decision(start_time=None, restarts=2), None,
                     {"conditions": [CREATED, RUNNING], "replicaStatuses": NOW_COUNTS,
                      "restartCount": 2}, id="not-started"),
        pytest.param(decision(conditions=DONE, finished=True, finishing=True), RECORDED,
                     {"conditions": DONE, "replicaStatuses": NOW_COUNTS, "restartCount": 0,
                      "startTime": T0, "completionTime": T1}, id="finishing-counts-now"),
        pytest.param(decision(conditions=DONE, finished=True), RECORDED,
                     {"conditions": DONE, "replicaStatuses": RECORDED, "restartCount": 0,
                      "startTime": T0, "completionTime": T1}, id="finished-keeps-its-counts"),
        pytest.param(decision(conditions=DONE, finished=True), COUNTS,
                     {"conditions": DONE, "replicaStatuses": NOW_COUNTS, "restartCount": 0,
                      "startTime": T0, "completionTime": T1}, id="recorded-of-other-types"),
        pytest.param(decision(conditions=DONE, finished=True),
                     {"Scheduler": {"active": -1, "succeeded": "1"}, "Worker": []},
                     {"conditions": DONE, "restartCount": 0, "startTime": T0, "completionTime": T1,
                      "replicaStatuses": {"Scheduler": {"active": 0, "succeeded": 1, "failed": 0},
                                          "Worker": NOW_COUNTS["Worker"]}},
                     id="recorded-counts-well-formed-only"),
    ],
)  # fmt: skip
def test_the_status_of_a_valid_job(made: Decision, recorded: Any, expected: dict[str, Any]) -> None:
    previous = read_previous({"replicaStatuses": recorded}, has_children=True)
    assert status.of_valid_job(made, SPEC, REPLICAS, previous) == expected


INVALID = "MXJob mnist has an invalid spec: spec.x: wrong."
KEPT = " Its pods and Services are kept as they are until the spec is valid again."


# A job never accepted fails for good; one an edit broke is InvalidSpec until fixed.
@pytest.mark.parametrize(
    ("raw", "has_children", "expected"),
    [
        pytest.param(None, False,
                     {"conditions": [condition("Failed", "True", "MXJobInvalidSpec", T1, INVALID)],
                      "replicaStatuses": {}, "completionTime": T1}, id="new-job-fails"),
        pytest.param({"conditions": [CREATED, RUNNING], "startTime": T0, "restartCount": 1,
                      "replicaStatuses": RECORDED | {"Chief": {}}}, True,
                     {"conditions": [CREATED, RUNNING, condition(
                         "InvalidSpec", "True", "MXJobInvalidSpec", T1, INVALID + KEPT)],
                      "replicaStatuses": RECORDED, "restartCount": 1, "startTime": T0},
                     id="edited-job-keeps-its-children"),
        pytest.param({"conditions": [CREATED]}, False,
                     {"conditions": [CREATED, condition(
                         "InvalidSpec", "True", "MXJobInvalidSpec", T1, INVALID + KEPT)],
                      "replicaStatuses": {}}, id="created-job-without-children"),
        pytest.param({"conditions": [BROKEN]}, False,
                     {"conditions": [BROKEN], "replicaStatuses": {}, "completionTime": T0},
                     id="failed-new-job-stays-as-it-was"),
    ],
)  # fmt: skip
def test_the_status_of_an_invalid_job(
    raw: dict[str, Any] | None, has_children: bool, expected: dict[str, Any]
) -> None:
    previous = read_previous(raw, has_children)
    answer = status.of_invalid_job("mnist", "spec.x: wrong", previous, has_children, NOW)
    assert answer == expected


@pytest.mark.parametrize(
    ("conditions", "messages"),
    [
        pytest.param([CREATED, RUNNING], [], id="valid"),
        pytest.param([CREATED, BROKEN], ["MXJob mnist has an invalid spec."], id="failed"),
        pytest.param([CREATED, BROKEN | {"status": "False"}], [], id="no-longer"),
        pytest.param([BROKEN | {"type": "InvalidSpec", "message": "m"}], ["m"], id="edited"),
    ],
)
def test_which_conditions_say_the_spec_is_invalid(
    conditions: list[dict[str, str]], messages: list[str]
) -> None:
    assert status.invalid_spec_messages({"conditions": conditions}) == messages
    assert status.says_invalid({"conditions": conditions}) is bool(messages)


@pytest.mark.parametrize(
    ("conditions", "completed"),
    [
        pytest.param([CREATED, RUNNING], None, id="running"),
        pytest.param([CREATED, SUCCEEDED], T1, id="succeeded"),
        pytest.param([CREATED, BROKEN], T0, id="failed"),
        pytest.param([CREATED, SUCCEEDED | {"status": "False"}], None, id="not-true"),
    ],
)
def test_the_completion_time_is_when_it_finished(
    conditions: list[dict[str, str]], completed: str | None
) -> None:
    assert completion_time(conditions) == completed
