"""`status.restartCount`: the restarts charged against backoffLimit in the current run, read from
the children alone, kept once the job is finished or its spec invalid, and a fixed point."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import jobs as s
from tests.support.hooked import sync

Life = tuple[dict[str, Any], dict[str, Any], dict[str, dict[str, Any]], int]
KILLED = s.pod_status("Failed", exit_code=137)
RUNNING = s.pod_status("Running")


def _job(policy: str = "ExitCode", **run_policy: Any) -> Life:
    """A one-worker job after its first sync: (parent, answer, pod statuses, seconds)."""
    parent = s.mxjob({"mxReplicaSpecs": {"Worker": s.replica(1, policy)}, "runPolicy": run_policy})
    return parent, s.created(s.request(parent)), {}, 0


def _then(life: Life, status: dict[str, Any] | None = None) -> Life:
    """One more sync 30 s later; `status` is what the newest pod reports (else Pending or what
    it reported before)."""
    parent, answer, phases, at = life
    phases = dict(phases)
    if status is not None:
        phases[s.pods_of(answer)[-1]["metadata"]["name"]] = status
    _, answer = s.step(parent, answer, phases, s.later(at + 30))
    return parent, answer, phases, at + 30


def _request(life: Life) -> tuple[dict[str, Any], int]:
    """The request that observes the last answer's children, and its time."""
    parent, answer, phases, at = life
    request, _ = s.step(parent, answer, phases, s.later(at))
    return request, at


def _killed_twice() -> Life:
    life = _then(_then(_job(backoffLimit=1), RUNNING), KILLED)
    return _then(_then(life, RUNNING), KILLED)


def _cleaned_up(life: Life) -> tuple[dict[str, Any], int]:
    """A finished job's request once every child is gone."""
    parent, answer, _, at = life
    return s.request(parent | {"status": answer["status"]}), at + 60


def _previous(life: Life, **status: Any) -> tuple[dict[str, Any], int]:
    request, at = _request(life)
    request["parent"]["status"] |= status
    return request, at


def _edited(life: Life, **run_policy: Any) -> tuple[dict[str, Any], int]:
    request, at = _request(life)
    request["parent"]["spec"]["runPolicy"] |= run_policy
    return request, at


def _broken(life: Life) -> tuple[dict[str, Any], int]:
    request, at = _request(life)
    request["parent"]["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = -1
    return request, at


def _invalid_from_creation() -> tuple[dict[str, Any], int]:
    parent = s.mxjob({"mxReplicaSpecs": {"Worker": s.replica(-1)}})
    return s.request(parent), 0


CASES: list[Any] = [
    pytest.param(lambda: _request(_job()), 0, id="new-job"),
    pytest.param(lambda: _request(_then(_job(), RUNNING)), 0, id="running"),
    pytest.param(
        lambda: _request(_then(_then(_job(), RUNNING), KILLED)), 1, id="replacement-asked"
    ),
    pytest.param(
        lambda: _request(_then(_then(_then(_job(), RUNNING), KILLED), RUNNING)),
        1,
        id="replacement-running",
    ),
    pytest.param(
        lambda: _request(_then(_job("OnFailure"), s.pod_status("Running", restarts=2))),
        2,
        id="containers-restarted-in-place",
    ),
    pytest.param(lambda: _request(_killed_twice()), 2, id="backoff-limit-exceeded"),
    pytest.param(lambda: _cleaned_up(_killed_twice()), 2, id="finished-after-clean-up"),
    pytest.param(
        lambda: _previous(_killed_twice(), restartCount=-1),
        2,
        id="finished-malformed-count-computed",
    ),
    pytest.param(
        lambda: _previous(_then(_then(_job(), RUNNING), KILLED), restartCount=7),
        1,
        id="unfinished-ignores-previous",
    ),
    pytest.param(
        lambda: _broken(_then(_then(_then(_job(), RUNNING), KILLED), RUNNING)),
        1,
        id="invalid-edit-keeps-count",
    ),
    pytest.param(
        lambda: _previous_broken("2"),
        None,
        id="invalid-edit-malformed-count-omitted",
    ),
    pytest.param(_invalid_from_creation, None, id="invalid-from-creation"),
    pytest.param(
        lambda: _edited(_then(_then(_then(_job(), RUNNING), KILLED), RUNNING), suspend=True),
        0,
        id="suspended",
    ),
]


def _previous_broken(count: Any) -> tuple[dict[str, Any], int]:
    request, at = _broken(_then(_then(_then(_job(), RUNNING), KILLED), RUNNING))
    request["parent"]["status"]["restartCount"] = count
    return request, at


@pytest.mark.parametrize(("make", "expected"), CASES)
def test_restart_count_and_fixed_point(
    make: Callable[[], tuple[dict[str, Any], int]], expected: int | None
) -> None:
    request, at = make()
    first = sync(copy.deepcopy(request), s.later(at))
    assert first["status"].get("restartCount") == expected
    request["parent"]["status"] = first["status"]
    assert sync(copy.deepcopy(request), s.later(at))["status"] == first["status"]
