"""The TTL controller's timing decision: when a finished job may be deleted, read from the job's
own status and spec, never earlier than completionTime + ttlSecondsAfterFinished."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.controllers.ttl.expiry import due_at, seconds_left

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
DONE = "2026-11-22T12:00:00Z"


def condition(ctype: str, status: str = "True") -> dict[str, str]:
    return {"type": ctype, "status": status, "reason": f"MXJob{ctype}"}


SUCCEEDED = [condition("Created"), condition("Running", "False"), condition("Succeeded")]
FAILED = [condition("Created"), condition("Running", "False"), condition("Failed")]
RUNNING = [condition("Created"), condition("Running")]


def job(
    conditions: Any = SUCCEEDED,
    completion: Any = DONE,
    run_policy: Any = None,
    **spec: Any,
) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": conditions}
    if completion is not None:
        status["completionTime"] = completion
    policy = {"ttlSecondsAfterFinished": 5} if run_policy is None else run_policy
    return {"spec": {"runPolicy": policy, **spec}, "status": status}


@pytest.mark.parametrize(
    ("observed", "expected"),
    [
        pytest.param(job(), NOW + timedelta(seconds=5), id="succeeded"),
        pytest.param(job(FAILED), NOW + timedelta(seconds=5), id="failed"),
        pytest.param(job(run_policy={"ttlSecondsAfterFinished": 0}), NOW, id="ttl-zero"),
        pytest.param(
            job(completion="2026-11-22T13:00:00+01:00"), NOW + timedelta(seconds=5), id="offset"
        ),
        pytest.param(job(RUNNING), None, id="running"),
        pytest.param(job([], completion=None), None, id="new"),
        pytest.param(
            job([*SUCCEEDED[:2], condition("Succeeded", "False")]), None, id="succeeded-false"
        ),
        pytest.param(job(run_policy={}), None, id="no-ttl"),
        pytest.param(job(completion=None), None, id="no-completion-time"),
        pytest.param(job(completion="2026-11-22T12:00:00"), None, id="completion-without-zone"),
        pytest.param(job(completion="soon"), None, id="completion-not-a-time"),
        pytest.param(job([*SUCCEEDED, condition("InvalidSpec")]), None, id="spec-under-repair"),
        pytest.param(job(run_policy={"ttlSecondsAfterFinished": -1}), None, id="negative"),
        pytest.param(job(run_policy={"ttlSecondsAfterFinished": "5"}), None, id="a-string"),
        pytest.param(job(run_policy={"ttlSecondsAfterFinished": True}), None, id="a-bool"),
        pytest.param(job(run_policy={"ttlSecondsAfterFinished": 5.0}), None, id="a-float"),
        pytest.param(job(run_policy={"ttlSecondsAfterFinished": 2**63}), None, id="past-year-9999"),
        pytest.param(
            job(run_policy={}, ttlSecondsAfterFinished=7),
            NOW + timedelta(seconds=7),
            id="mxnet-operator-legacy-field",
        ),
        pytest.param(
            job(ttlSecondsAfterFinished=7),
            NOW + timedelta(seconds=5),
            id="run-policy-wins-over-legacy",
        ),
        pytest.param(job(run_policy="x"), None, id="run-policy-not-an-object"),
        pytest.param({"spec": None, "status": {"completionTime": DONE}}, None, id="no-spec"),
        pytest.param({"spec": {}, "status": "done"}, None, id="status-not-an-object"),
        pytest.param({}, None, id="empty"),
    ],
)
def test_due_at(observed: dict[str, Any], expected: datetime | None) -> None:
    assert due_at(observed) == expected


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        pytest.param(NOW - timedelta(seconds=2.5), 2.5, id="ahead"),
        pytest.param(NOW, 0.0, id="due"),
        pytest.param(NOW + timedelta(hours=1), 0.0, id="long-past"),
    ],
)
def test_seconds_left_is_never_negative(now: datetime, expected: float) -> None:
    assert seconds_left(NOW, now) == expected
