"""Condition rules: timestamps kept, updates move to the end, exclusions, finished is final."""

from app.core import conditions

T0, T1 = "2026-11-22T12:00:00Z", "2026-11-22T12:05:00Z"


def cond(
    ctype: str, status: str, reason: str, at: str = T0, message: str = "m"
) -> conditions.Condition:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": at,
        "lastTransitionTime": at,
    }


def test_same_status_and_reason_keeps_everything() -> None:
    before = [cond("Created", "True", "MXJobCreated"), cond("Running", "True", "MXJobRunning")]
    assert (
        conditions.set_condition(before, "Created", "True", "MXJobCreated", "other", T1) == before
    )


# Each rule a test of its own (before, set_condition, the expected list), for readable failures.
def test_changed_condition_moves_to_the_end_of_its_kind() -> None:
    before = [cond("Suspended", "True", "MXJobSuspended"), cond("Created", "True", "MXJobCreated")]
    resumed = conditions.set_condition(before, "Suspended", "False", "MXJobResumed", "resumed", T1)
    assert resumed == [
        cond("Suspended", "False", "MXJobResumed", T1, "resumed"),
        cond("Created", "True", "MXJobCreated"),
    ]
    running = conditions.set_condition(resumed, "Running", "True", "MXJobRunning", "running", T1)
    assert running == [*resumed, cond("Running", "True", "MXJobRunning", T1, "running")]


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


def test_new_reason_with_same_status_keeps_transition_time() -> None:
    before = [cond("Running", "False", "MXJobSuspended")]
    after = conditions.set_condition(before, "Running", "False", "MXJobFailed", "failed", T1)
    assert after == [
        cond("Running", "False", "MXJobFailed", T1, "failed") | {"lastTransitionTime": T0}
    ]


def test_running_and_restarting_exclude_each_other() -> None:
    running = [cond("Created", "True", "MXJobCreated"), cond("Running", "True", "MXJobRunning")]
    restarting = conditions.set_condition(running, "Restarting", "True", "MXJobRestarting", "r", T1)
    assert [x["type"] for x in restarting] == ["Created", "Restarting"]
    back = conditions.set_condition(restarting, "Running", "True", "MXJobRunning", "m", T1)
    assert [x["type"] for x in back] == ["Created", "Running"]


def test_finishing_turns_running_false() -> None:
    running = [cond("Created", "True", "MXJobCreated"), cond("Running", "True", "MXJobRunning")]
    after = conditions.set_condition(running, "Succeeded", "True", "MXJobSucceeded", "done", T1)
    assert after == [
        cond("Running", "False", "MXJobSucceeded", T1, "done"),
        cond("Created", "True", "MXJobCreated"),
        cond("Succeeded", "True", "MXJobSucceeded", T1, "done"),
    ]
    assert conditions.finished(after)


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
