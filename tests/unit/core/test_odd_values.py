"""Odd values the fuzz found or could find, pinned down as table cases against the core."""

import copy
from datetime import timedelta
from typing import Any

import pytest

from app.core.model import conditions
from app.core.model.conditions import REASON_INVALID
from tests.support import jobs as s
from tests.support.hooked import sync

RUNNING = s.pod_status("Running")
FAR_FUTURE = "9999-12-31T23:59:59Z"


def _running(run_policy: dict[str, Any], start: str | None = None) -> dict[str, Any]:
    """A running job whose run policy is changed to `run_policy` afterwards."""
    parent = s.mxjob(s.train_spec(1, 1))
    first = s.created(s.request(parent))
    phases = {p["metadata"]["name"]: RUNNING for p in s.pods_of(first)}
    request = s.step(parent, first, phases)[0]
    request["parent"]["spec"]["runPolicy"] = run_policy
    if start:
        request["parent"]["status"]["startTime"] = start
    return request


def _finished(run_policy: dict[str, Any], completed: str | None = None) -> dict[str, Any]:
    """A job that succeeded a sync ago, whose run policy is changed to `run_policy`."""
    parent = s.mxjob(s.train_spec(1, 1) | {"runPolicy": {"cleanPodPolicy": "None"}})
    first = s.created(s.request(parent))
    phases = {p["metadata"]["name"]: RUNNING for p in s.pods_of(first)}
    phases["mnist-scheduler-0"] = s.pod_status("Succeeded", exit_code=0)
    _, answer = s.step(parent, first, phases)
    request = s.step(parent, answer, phases, s.later(30))[0]
    request["parent"]["spec"]["runPolicy"] |= run_policy
    if completed:
        status = request["parent"]["status"]
        status["completionTime"] = completed
        for cond in status["conditions"]:
            if cond["type"] == "Succeeded":
                cond["lastTransitionTime"] = completed
    return request


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(_running({"activeDeadlineSeconds": 2**63 - 1}), id="huge-deadline"),
        pytest.param(_running({"activeDeadlineSeconds": 60}, FAR_FUTURE), id="start-in-year-9999"),
        pytest.param(_finished({"ttlSecondsAfterFinished": 2**63 - 1}), id="huge-ttl"),
        pytest.param(
            _finished({"ttlSecondsAfterFinished": 60}, FAR_FUTURE), id="completed-in-year-9999"
        ),
    ],
)
def test_far_timers_keep_the_pods_and_a_resync_metacontroller_can_hold(
    request_: dict[str, Any],
) -> None:
    answer = sync(copy.deepcopy(request_), s.NOW + timedelta(seconds=60))
    observed = {p["metadata"]["name"] for p in request_["children"]["Pod.v1"].values()}
    assert {p["metadata"]["name"] for p in s.pods_of(answer)} == observed
    # Metacontroller turns resyncAfterSeconds into a Go time.Duration (at most ~292 years).
    assert 0 < answer["resyncAfterSeconds"] < 9_000_000_000


@pytest.mark.parametrize("replicas", [10**5, 2**31, 2**63 - 1])
def test_a_huge_replica_count_is_an_invalid_spec_not_a_memory_bomb(replicas: int) -> None:
    spec = s.train_spec(1, 1)
    spec["mxReplicaSpecs"]["Worker"]["replicas"] = replicas
    answer = s.created(s.request(s.mxjob(spec)))
    failed = conditions.find(answer["status"]["conditions"], conditions.FAILED)
    assert failed is not None
    assert failed["reason"] == REASON_INVALID
    assert "spec.mxReplicaSpecs" in failed["message"]
    assert answer["children"] == []
