"""One sync (app/core/reconcile.py): the staged first answer (a job with no condition and no
child gets its status alone, and the sync its status write brings asks for every child), and
what the core tells the web layer about a sync beside the answer."""

from typing import Any

import pytest

from app.integrations.events import CHILD_TYPE
from tests.support import jobs as s
from tests.support.hooked import sync, sync_result

CREATED = {"type": "Created", "status": "True", "reason": "MXJobCreated"}


def conditions(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["reason"]) for c in answer["status"]["conditions"]]


def kinds(answer: dict[str, Any]) -> list[str]:
    return sorted({c["kind"] for c in answer["children"]})


@pytest.mark.parametrize(
    ("parent", "others", "expected"),
    [
        pytest.param(s.mxjob(s.train_spec()), None, [("Created", "MXJobCreated")], id="new-job"),
        pytest.param(
            s.mxjob(s.train_spec()),
            {CHILD_TYPE: [], "ConfigMap.v1": []},
            [("Created", "MXJobCreated")],
            id="new-job-more-child-types-declared",
        ),
        pytest.param(
            s.mxjob(s.train_spec() | {"runPolicy": {"suspend": True}}),
            None,
            [("Created", "MXJobCreated"), ("Suspended", "MXJobSuspended")],
            id="new-job-suspended",
        ),
    ],
)
def test_a_new_job_gets_its_status_alone(
    parent: dict[str, Any], others: dict[str, list[dict[str, Any]]] | None, expected: Any
) -> None:
    answer = sync(s.request(parent, others=others), s.NOW)
    assert (conditions(answer), answer["children"]) == (expected, [])


def test_the_sync_after_the_first_answer_asks_for_every_child() -> None:
    """What Metacontroller's own status write brings: the parent with that status, still no
    child. Its answer is what an unstaged first answer was: same status, every child."""
    parent = s.mxjob(s.train_spec())
    first = sync(s.request(parent), s.NOW)
    second = sync(s.request(parent | {"status": first["status"]}), s.later(1))
    assert second["status"] == first["status"]
    assert kinds(second) == ["Pod", "Service"]
    assert len(second["children"]) == 10


@pytest.mark.parametrize(
    ("status", "with_pod"),
    [
        pytest.param(None, True, id="children-but-no-condition"),
        pytest.param({"conditions": [CREATED]}, False, id="a-condition-but-no-children"),
    ],
)
def test_only_a_job_with_neither_condition_nor_child_is_staged(
    status: dict[str, Any] | None, with_pod: bool
) -> None:
    parent = s.mxjob(s.train_spec(), status=status)
    full = sync(s.request(parent | {"status": {"conditions": [CREATED]}}), s.NOW)
    pods = [s.observed(c) for c in s.pods_of(full)][:1] if with_pod else []
    answer = sync(s.request(parent, pods), s.NOW)
    assert kinds(answer) == ["Pod", "Service"]


def test_an_invalid_new_job_is_answered_as_before() -> None:
    """Not staged: an invalid job gets no child either way, and its Failed status at once."""
    answer = sync(s.request(s.mxjob({"mxReplicaSpecs": {}})), s.NOW)
    assert answer["children"] == []
    assert conditions(answer)[-1] == ("Failed", "MXJobInvalidSpec")


# What the web layer logs and counts: the job, its replica count, whether its spec is invalid.
BROKEN = {"mxReplicaSpecs": {"Worker": {"replicas": -1, "template": {}}}}


@pytest.mark.parametrize(
    ("parent", "replicas", "invalid"),
    [
        pytest.param(s.mxjob(s.train_spec(2, 3)), 6, False, id="valid"),
        pytest.param(s.mxjob(BROKEN), 0, True, id="invalid-spec"),
    ],
)
def test_the_result_names_the_job_its_replicas_and_outcome(
    parent: dict[str, Any], replicas: int, invalid: bool
) -> None:
    request = s.request(parent)
    result = sync_result(request, s.NOW)
    assert (result.namespace, result.name) == ("default", "mnist")
    assert (result.replicas, result.invalid_spec) == (replicas, invalid)
    assert result.answer == sync(request, s.NOW)
