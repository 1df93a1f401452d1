"""The contract's validation (docs/behaviour.md#validation): an invalid spec fails a job the hook
never accepted, and is not terminal for a job that an edit broke (its children are kept
exactly until the spec is valid again)."""

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import jobs as s
from tests.support.hooked import sync

RUNNING = s.pod_status("Running")
INVALID = "MXJobInvalidSpec"
KEPT = "Its pods and Services are kept as they are until the spec is valid again."


def _break(parent: dict[str, Any]) -> dict[str, Any]:
    broken = copy.deepcopy(parent)
    broken["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = -1
    return broken


def _true(answer: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["reason"] for c in answer["status"]["conditions"] if c["status"] == "True"}


def _running() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(parent, last request, last answer) of a train job whose pods all run."""
    parent = s.mxjob(s.train_spec(1, 2))
    first = s.created(s.request(parent))
    phases = {p["metadata"]["name"]: RUNNING for p in s.pods_of(first)}
    _, answer = s.step(parent, first, phases, s.later(30))
    request, answer = s.step(parent, answer, phases, s.later(40))
    return parent, request, answer


def _replay(request: dict[str, Any], parent: dict[str, Any], at: int) -> dict[str, Any]:
    """The same observed children under another parent spec."""
    again = copy.deepcopy(request)
    again["parent"]["spec"] = copy.deepcopy(parent["spec"])
    return sync(again, s.later(at))


def _suspended() -> tuple[dict[str, Any], dict[str, Any]]:
    parent = s.mxjob(s.train_spec(1, 2) | {"runPolicy": {"suspend": True}})
    answer = sync(s.request(parent), s.NOW)
    return parent, answer


def _succeeded() -> tuple[dict[str, Any], dict[str, Any]]:
    parent = s.mxjob(s.train_spec(0, 1) | {"runPolicy": {"cleanPodPolicy": "None"}})
    parent["spec"]["mxReplicaSpecs"].pop("Scheduler")
    first = s.created(s.request(parent))
    done = {"mnist-worker-0": s.pod_status("Succeeded", exit_code=0)}
    _, answer = s.step(parent, first, done, s.later(30))
    return parent, s.step(parent, answer, done, s.later(60))[1]


def test_a_new_invalid_job_fails_for_good() -> None:
    parent = _break(s.mxjob(s.train_spec(1, 2)))
    answer = sync(s.request(parent), s.NOW)

    assert (_true(answer), answer["children"]) == ({"Failed": INVALID}, [])
    fixed = s.mxjob(s.train_spec(1, 2), status=answer["status"])
    again = sync(s.request(fixed), s.later(60))
    assert (_true(again), again["children"]) == ({"Failed": INVALID}, [])


def test_a_bad_edit_keeps_every_child_and_the_fix_deletes_nothing() -> None:
    parent, request, answer = _running()
    broken = _replay(request, _break(parent), 60)

    assert _true(broken) == {
        "Created": "MXJobCreated",
        "Running": "MXJobRunning",
        "InvalidSpec": INVALID,
    }
    assert broken["status"]["conditions"][-1]["type"] == "InvalidSpec"  # kubectl get's STATE
    assert KEPT in broken["status"]["conditions"][-1]["message"]
    assert s.names(broken["children"]) == s.names(answer["children"])
    assert broken["status"]["replicaStatuses"] == answer["status"]["replicaStatuses"]

    request["parent"]["status"] = broken["status"]
    fixed = _replay(request, parent, 90)
    assert fixed["children"] == answer["children"]
    assert fixed["status"] == answer["status"]


def test_the_invalid_spec_condition_is_a_fixed_point() -> None:
    parent, request, _ = _running()
    broken = _replay(request, _break(parent), 60)
    request["parent"]["status"] = broken["status"]

    assert _replay(request, _break(parent), 600)["status"] == broken["status"]


Setup = Callable[[], tuple[dict[str, Any], dict[str, Any]]]


@pytest.mark.parametrize(
    ("setup", "before", "after"),
    [
        pytest.param(
            _suspended,
            {"Created": "MXJobCreated", "Suspended": "MXJobSuspended"},
            {"Created": "MXJobCreated", "Suspended": "MXJobSuspended", "InvalidSpec": INVALID},
            id="suspended-job-without-children",
        ),
        pytest.param(
            _succeeded,
            {"Created": "MXJobCreated", "Succeeded": "MXJobSucceeded"},
            {"Created": "MXJobCreated", "Succeeded": "MXJobSucceeded", "InvalidSpec": INVALID},
            id="finished-job-keeps-its-pods-and-its-state",
        ),
    ],
)
def test_a_job_accepted_before_is_not_failed_by_an_edit(
    setup: Setup, before: dict[str, str], after: dict[str, str]
) -> None:
    parent, answer = setup()
    assert _true(answer) == before
    observed = [s.observed(c) for c in answer["children"]]
    pods = [p for p in observed if p["kind"] == "Pod"]
    services = [c for c in observed if c["kind"] == "Service"]
    request = s.request(_break(parent) | {"status": answer["status"]}, pods, services)

    broken = sync(request, s.later(600))

    assert _true(broken) == after
    assert s.names(broken["children"]) == s.names(answer["children"])
    request["parent"] = parent | {"status": broken["status"]}
    assert _true(sync(request, s.later(900))) == before


def _fail_as_the_earlier_version_did(request: dict[str, Any]) -> None:
    """Add the terminal Failed/MXJobInvalidSpec the previous version wrote on a bad edit."""
    failed = {"type": "Failed", "status": "True", "reason": INVALID, "message": "bad"}
    stamps = {
        "lastUpdateTime": "2026-11-22T12:00:40Z",
        "lastTransitionTime": "2026-11-22T12:00:40Z",
    }
    status = request["parent"]["status"]
    status["conditions"] = [*status["conditions"], failed | stamps]


def test_an_earlier_versions_failure_without_children_stays() -> None:
    """Failed/MXJobInvalidSpec is dropped only while the job still has children: a job whose
    pods are gone is not started again behind its user's back."""
    _, request, _ = _running()
    _fail_as_the_earlier_version_did(request)

    without_children = sync(s.request(request["parent"]), s.later(60))
    with_children = sync(request, s.later(60))

    assert _true(without_children)["Failed"] == INVALID
    assert without_children["children"] == []
    assert "Failed" not in _true(with_children)


def test_while_the_spec_is_invalid_a_failed_pod_is_not_replaced_and_no_timer_runs() -> None:
    parent, request, answer = _running()
    parent["spec"]["runPolicy"] = {"activeDeadlineSeconds": 3600}
    broken = _break(parent)
    pods = request["children"]["Pod.v1"]
    pods["default/mnist-worker-1"]["status"] = s.pod_status("Failed", exit_code=137)

    edited = _replay(request, broken, 60)
    fixed = _replay(request, parent, 90)

    assert (s.names(edited["children"]), edited["resyncAfterSeconds"]) == (
        s.names(answer["children"]),
        0,
    )
    assert "Failed" not in _true(edited)
    assert "Failed" in _true(fixed)  # restartPolicy Never: decided once the spec is valid


def test_events_alone_do_not_revive_an_earlier_versions_failure() -> None:
    """The job's Events are children too, but not its pods: a failed job whose pods are gone
    stays failed though its story is still there."""
    _, request, _ = _running()
    _fail_as_the_earlier_version_did(request)
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "mnist.failed", "namespace": "default"},
        "reason": INVALID,
    }

    answer = sync(s.request(request["parent"], others={"Event.v1": [event]}), s.later(60))

    assert _true(answer)["Failed"] == INVALID
    assert s.pods_of(answer) == []


def test_an_echoed_child_takes_its_kind_from_the_type_it_was_observed_under() -> None:
    """Metacontroller needs apiVersion and kind on every child it is given back."""
    parent, request, _ = _running()
    pod = request["children"]["Pod.v1"]["default/mnist-worker-0"]
    del pod["kind"], pod["apiVersion"]

    broken = _replay(request, _break(parent), 60)

    echoed = [c for c in broken["children"] if c["metadata"]["name"] == "mnist-worker-0"]
    assert sorted((c["apiVersion"], c["kind"]) for c in echoed) == [
        ("v1", "Pod"),
        ("v1", "Service"),
    ]


LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"


def _other_name(applied: dict[str, Any]) -> str:
    return json.dumps(applied | {"metadata": applied["metadata"] | {"name": "someone-else"}})


@pytest.mark.parametrize(
    ("annotation", "answered"),
    [
        pytest.param(json.dumps, "applied", id="what-metacontroller-last-applied"),
        pytest.param(lambda applied: "{not json", "observed", id="not-json"),
        pytest.param(lambda applied: "[]", "observed", id="not-an-object"),
        pytest.param(lambda applied: json.dumps({"kind": "Service"}), "observed", id="no-metadata"),
        pytest.param(_other_name, "observed", id="another-object"),
    ],
)
def test_a_bad_edit_answers_a_child_with_what_metacontroller_last_applied(
    annotation: Callable[[dict[str, Any]], str], answered: str
) -> None:
    """So that Metacontroller's three-way merge changes nothing; without a readable annotation
    of this child, the observed child (identity, labels, spec)."""
    parent, request, answer = _running()
    name = "mnist-worker-0"
    (desired,) = [
        c for c in answer["children"] if (c["kind"], c["metadata"]["name"]) == ("Service", name)
    ]
    services = request["children"]["Service.v1"]
    key = next(k for k, c in services.items() if c["metadata"]["name"] == name)
    plain = _replay(request, _break(parent), 50)
    annotated = copy.deepcopy(request)
    service = annotated["children"]["Service.v1"][key]
    service["metadata"].setdefault("annotations", {})[LAST_APPLIED] = annotation(desired)

    again = copy.deepcopy(annotated)
    again["parent"]["spec"] = _break(parent)["spec"]
    children = {(c["kind"], c["metadata"]["name"]): c for c in sync(again, s.later(50))["children"]}

    expected = {(c["kind"], c["metadata"]["name"]): c for c in plain["children"]}
    if answered == "applied":
        expected[("Service", name)] = desired
    assert children == expected
