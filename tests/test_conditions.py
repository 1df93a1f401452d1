"""Condition rules: timestamps kept, updates move to the end, exclusions, finished is final."""

from app import conditions as c

T0, T1 = "2026-11-22T12:00:00Z", "2026-11-22T12:05:00Z"


def cond(ctype: str, status: str, reason: str, at: str = T0, message: str = "m") -> c.Condition:
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
    assert c.set_condition(before, "Created", "True", "MXJobCreated", "other", T1) == before


def test_changed_condition_moves_to_the_end() -> None:
    before = [cond("Suspended", "True", "MXJobSuspended"), cond("Created", "True", "MXJobCreated")]
    after = c.set_condition(before, "Suspended", "False", "MXJobResumed", "resumed", T1)
    assert after == [
        cond("Created", "True", "MXJobCreated"),
        cond("Suspended", "False", "MXJobResumed", T1, "resumed"),
    ]


def test_new_reason_with_same_status_keeps_transition_time() -> None:
    before = [cond("Running", "False", "MXJobSuspended")]
    after = c.set_condition(before, "Running", "False", "MXJobFailed", "failed", T1)
    assert after == [
        cond("Running", "False", "MXJobFailed", T1, "failed") | {"lastTransitionTime": T0}
    ]


def test_running_and_restarting_exclude_each_other() -> None:
    running = [cond("Created", "True", "MXJobCreated"), cond("Running", "True", "MXJobRunning")]
    restarting = c.set_condition(running, "Restarting", "True", "MXJobRestarting", "r", T1)
    assert [x["type"] for x in restarting] == ["Created", "Restarting"]
    back = c.set_condition(restarting, "Running", "True", "MXJobRunning", "m", T1)
    assert [x["type"] for x in back] == ["Created", "Running"]


def test_finishing_turns_running_false() -> None:
    running = [cond("Created", "True", "MXJobCreated"), cond("Running", "True", "MXJobRunning")]
    after = c.set_condition(running, "Succeeded", "True", "MXJobSucceeded", "done", T1)
    assert after == [
        cond("Created", "True", "MXJobCreated"),
        cond("Running", "False", "MXJobSucceeded", T1, "done"),
        cond("Succeeded", "True", "MXJobSucceeded", T1, "done"),
    ]
    assert c.finished(after)


def test_parse_keeps_well_formed_conditions_only() -> None:
    raw = [
        cond("Created", "True", "MXJobCreated"),
        {"type": "Bogus", "status": "True"},
        "junk",
        {"type": "Running", "status": 1},
        {"type": "Suspended", "status": "False", "reason": 7},
    ]
    assert c.parse(raw) == [
        cond("Created", "True", "MXJobCreated"),
        {"type": "Suspended", "status": "False"},
    ]
    assert c.parse("junk") == []
