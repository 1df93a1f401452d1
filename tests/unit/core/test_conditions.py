"""Condition rules: timestamps kept, updates move to the end, exclusions, finished is final."""

import pytest

from app.core.model import conditions
from tests.support.jobs import condition

T0, T1 = "2026-11-22T12:00:00Z", "2026-11-22T12:05:00Z"


def cond(
    ctype: str, status: str, reason: str, at: str = T0, message: str = "m"
) -> conditions.Condition:
    return condition(ctype, status, reason, at, message)


CREATED = cond("Created", "True", "MXJobCreated")
RUNNING = cond("Running", "True", "MXJobRunning")
RESUMED = [cond("Suspended", "False", "MXJobResumed", T1, "resumed"), CREATED]
RESTARTING = [CREATED, cond("Restarting", "True", "MXJobRestarting", T1, "r")]


SUCCEEDED = cond("Succeeded", "True", "MXJobSucceeded", T1, "done")
RUNNING_DONE = cond("Running", "False", "MXJobSucceeded", T1, "done")
FAILED_OVER = cond("Running", "False", "MXJobFailed", T1, "failed") | {"lastTransitionTime": T0}


# Each rule a case: the conditions before, the one set at T1 (type, status, reason, message)
# and the whole list after.
@pytest.mark.parametrize(
    ("before", "setting", "after"),
    [
        pytest.param([CREATED, RUNNING], ("Created", "True", "MXJobCreated", "other"),
                     [CREATED, RUNNING], id="same-status-and-reason-keeps-everything"),
        pytest.param([cond("Suspended", "True", "MXJobSuspended"), CREATED],
                     ("Suspended", "False", "MXJobResumed", "resumed"), RESUMED,
                     id="changed-condition-moves-to-the-end-of-its-kind"),
        pytest.param(RESUMED, ("Running", "True", "MXJobRunning", "running"),
                     [*RESUMED, cond("Running", "True", "MXJobRunning", T1, "running")],
                     id="new-condition-goes-last"),
        pytest.param([cond("Running", "False", "MXJobSuspended")],
                     ("Running", "False", "MXJobFailed", "failed"), [FAILED_OVER],
                     id="new-reason-with-same-status-keeps-transition-time"),
        pytest.param([CREATED, RUNNING], ("Restarting", "True", "MXJobRestarting", "r"),
                     RESTARTING, id="restarting-excludes-running"),
        pytest.param(RESTARTING, ("Running", "True", "MXJobRunning", "m"),
                     [CREATED, cond("Running", "True", "MXJobRunning", T1)],
                     id="running-excludes-restarting"),
        pytest.param([CREATED, RUNNING], ("Succeeded", "True", "MXJobSucceeded", "done"),
                     [RUNNING_DONE, CREATED, SUCCEEDED], id="finishing-turns-running-false"),
    ],
)  # fmt: skip
def test_set_condition(
    before: list[conditions.Condition],
    setting: tuple[str, str, str, str],
    after: list[conditions.Condition],
) -> None:
    assert conditions.set_condition(before, *setting, T1) == after


def test_last_condition_is_the_newest_true_one() -> None:
    conds: list[conditions.Condition] = []
    for ctype, status, reason in [
        ("Created", "True", "MXJobCreated"),
        ("Running", "True", "MXJobRunning"),
        ("Running", "False", "MXJobSuspended"),
        ("Suspended", "True", "MXJobSuspended"),
        ("Suspended", "False", "MXJobResumed"),
    ]:
        conds = conditions.set_condition(conds, ctype, status, reason, "m", T1)
        newest_true = [x for x in conds if x["status"] == "True"][-1]
        assert conds[-1] == newest_true


@pytest.mark.parametrize(
    ("conds", "finished"),
    [
        pytest.param([CREATED, RUNNING], False, id="running"),
        pytest.param([CREATED, cond("Succeeded", "True", "MXJobSucceeded")], True, id="succeeded"),
        pytest.param([CREATED, cond("Failed", "True", "MXJobFailed")], True, id="failed"),
        pytest.param([cond("Failed", "False", "MXJobFailed")], False, id="failed-false"),
    ],
)
def test_finished_is_a_true_succeeded_or_failed(
    conds: list[conditions.Condition], finished: bool
) -> None:
    assert conditions.finished(conds) is finished


def test_parse_keeps_well_formed_conditions_only() -> None:
    raw = [
        cond("Created", "True", "MXJobCreated"),
        {"type": "Bogus", "status": "True"},
        "junk",
        {"type": "Running", "status": 1},
        {"type": "Suspended", "status": "False", "reason": 7},
    ]
    assert conditions.well_formed(raw) == [
        cond("Created", "True", "MXJobCreated"),
        {"type": "Suspended", "status": "False"},
    ]
    assert conditions.well_formed("junk") == []
