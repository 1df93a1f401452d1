"""The job's Events (app/integrations/events.py) and the sync answers that carry them."""

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.core.model.envelope import ObjectMeta
from app.integrations.events import CHILD_TYPE, MAX_AGE_SECONDS, MAX_EVENTS, desired, expiry_in
from tests.support import REPO
from tests.support.hooked import sync
from tests.support.jobs import UID, condition, created, mxjob, request, train_spec
from tests.support.kustomize import documents

JOB = ObjectMeta(name="mnist", namespace="default", uid=UID)
T0 = "2026-11-22T12:00:00Z"
T1 = "2026-11-22T12:00:10Z"
T2 = "2026-11-22T12:05:00Z"
EPOCH = {
    T0: "6b02d940",
    T1: "6b02d94a",
    T1[:-3] + "20Z": "6b02d954",
    T2: "6b02da6c",
}  # seconds since 1970, in hex


def cond(ctype: str, status: str, reason: str, at: str, message: str = "") -> dict[str, str]:
    return condition(ctype, status, reason, at, message or f"MXJob mnist is {ctype.lower()}.")


def event(ctype: str, reason: str, at: str, kind: str = "Normal") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"mnist.{ctype.lower()}-{EPOCH[at]}",
            "labels": {
                "training.kubeflow.org/operator-name": "mxjob-controller",
                "training.kubeflow.org/job-name": "mnist",
            },
        },
        "involvedObject": {
            "apiVersion": "kubeflow.org/v1",
            "kind": "MXJob",
            "name": "mnist",
            "namespace": "default",
            "uid": UID,
        },
        "reportingComponent": "mxjob-controller",
        "type": kind,
        "reason": reason,
        "message": f"MXJob mnist is {ctype.lower()}.",
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
        "source": {"component": "mxjob-controller"},
    }


def as_observed(child: dict[str, Any]) -> dict[str, Any]:
    """An Event as the API server returns it: with what Metacontroller and the server add."""
    meta = child["metadata"] | {
        "namespace": "default",
        "uid": "e-" + child["metadata"]["name"],
        "resourceVersion": "7",
        "ownerReferences": [{"kind": "MXJob", "name": "mnist", "uid": UID, "controller": True}],
    }
    meta["labels"] = meta["labels"] | {"controller-uid": UID}
    return child | {"metadata": meta, "eventTime": None}


CREATED = cond("Created", "True", "MXJobCreated", T0)
RUNNING = cond("Running", "True", "MXJobRunning", T1)
STOPPED = cond("Running", "False", "MXJobSucceeded", T2)
CREATED_EVENT = event("Created", "MXJobCreated", T0)
RUNNING_EVENT = event("Running", "MXJobRunning", T1)
RESTARTING_EVENT = event("Restarting", "MXJobRestarting", T1[:-3] + "20Z", "Warning")
AT = datetime.fromisoformat(T2)
# The job's conditions, the Events observed and the time: the Events the sync wants.
STORY = [
    pytest.param([], [], AT, [], id="no-condition-no-event"),
    pytest.param(
        [CREATED, RUNNING],
        [],
        AT,
        [CREATED_EVENT, event("Running", "MXJobRunning", T1)],
        id="one-event-per-true-condition-oldest-first",
    ),
    pytest.param(
        [CREATED, cond("Running", "False", "MXJobRestarting", T2)],
        [],
        AT,
        [CREATED_EVENT],
        id="false-condition-tells-nothing-new",
    ),
    pytest.param(
        [CREATED, cond("Restarting", "True", "MXJobRestarting", T2)],
        [],
        AT,
        [
            CREATED_EVENT,
            event("Restarting", "MXJobRestarting", T2, "Warning"),
        ],
        id="restarting-is-a-warning",
    ),
    pytest.param(
        [CREATED, STOPPED, cond("Succeeded", "True", "MXJobSucceeded", T2)],
        [as_observed(CREATED_EVENT), as_observed(RUNNING_EVENT)],
        AT,
        [
            CREATED_EVENT,
            event("Running", "MXJobRunning", T1),
            event("Succeeded", "MXJobSucceeded", T2),
        ],
        id="earlier-transitions-stay-as-they-were-written",
    ),
    pytest.param(
        [cond("Created", "True", "MXJobCreated", T1)],
        [as_observed(CREATED_EVENT)],
        AT,
        [event("Created", "MXJobCreated", T1)],
        id="a-transition-stamped-twice-is-one-event-the-status-one",
    ),
    pytest.param(
        [cond("Created", "True", "MXJobCreated", T0)],
        [as_observed(event("Created", "MXJobCreated", T1))],
        AT,
        [CREATED_EVENT],
        id="the-status-one-also-when-older",
    ),
    pytest.param(
        [CREATED, cond("Running", "True", "MXJobRunning", T2)],
        [as_observed(RUNNING_EVENT), as_observed(RESTARTING_EVENT)],
        AT,
        [
            CREATED_EVENT,
            RUNNING_EVENT,
            RESTARTING_EVENT,
            event("Running", "MXJobRunning", T2),
        ],
        id="running-again-after-a-restart-is-a-new-event",
    ),
    pytest.param(
        [CREATED, RUNNING],
        [],
        datetime.fromisoformat(T1) + timedelta(seconds=MAX_AGE_SECONDS - 1),
        [event("Running", "MXJobRunning", T1)],
        id="older-than-the-limit-no-longer-wanted",
    ),
    pytest.param(
        [CREATED],
        [as_observed(event("Running", "MXJobRunning", T1))],
        datetime.fromisoformat(T1) + timedelta(seconds=MAX_AGE_SECONDS),
        [],
        id="observed-event-ages-out-too",
    ),
    pytest.param(
        [CREATED],
        [
            as_observed(CREATED_EVENT) | {"metadata": {"name": "other.created-1"}},
            {"metadata": {"name": "mnist.running-2"}},
        ],
        AT,
        [CREATED_EVENT],
        id="observed-of-another-job-or-without-time-not-kept",
    ),
]


@pytest.mark.parametrize(("conds", "observed", "now", "expected"), STORY)
def test_story(
    conds: list[dict[str, str]],
    observed: list[dict[str, Any]],
    now: datetime,
    expected: list[dict[str, Any]],
) -> None:
    assert desired(JOB, conds, observed, now) == expected


def test_the_newest_events_are_kept() -> None:
    """A job that keeps restarting: Running and Restarting in turn, 30 of them."""
    flapping = [
        as_observed(event("Created", "MXJobCreated", T0))
        | {
            "metadata": {"name": f"mnist.flap-{n:x}"},
            "reason": ("MXJobRunning", "MXJobRestarting")[n % 2],
            "firstTimestamp": f"{T1[:-3]}{n:02d}Z",
        }
        for n in range(30)
    ]
    kept = desired(JOB, [CREATED], flapping, AT)
    assert [e["metadata"]["name"] for e in kept] == [
        f"mnist.flap-{n:x}" for n in range(30 - MAX_EVENTS, 30)
    ]


@pytest.mark.parametrize(
    ("events", "now", "expected"),
    [
        pytest.param([], AT, 0, id="no-event-no-wait"),
        pytest.param([event("Created", "MXJobCreated", T0)], AT, MAX_AGE_SECONDS - 300, id="one"),
        pytest.param(
            [event("Running", "MXJobRunning", T2), event("Created", "MXJobCreated", T0)],
            AT,
            MAX_AGE_SECONDS - 300,
            id="the-oldest-first",
        ),
        pytest.param(
            [event("Created", "MXJobCreated", T0)],
            AT + timedelta(milliseconds=500),
            MAX_AGE_SECONDS - 300,
            id="rounded-up-to-the-second",
        ),
    ],
)
def test_expiry_in(events: list[dict[str, Any]], now: datetime, expected: int) -> None:
    assert expiry_in(events, now) == expected


def test_a_job_at_rest_with_events_asks_for_the_sync_that_drops_the_oldest() -> None:
    """No periodic resync is counted on: the answer's resyncAfterSeconds brings the sync at
    which the oldest Event stops being wanted, and that sync no longer wants it."""
    created = as_observed(event("Created", "MXJobCreated", T0))
    status = {"conditions": [cond("Created", "True", "MXJobCreated", T0)]}
    body = request(mxjob(train_spec(), status=status), others={CHILD_TYPE: [created]})
    answer = sync(body, AT)
    assert created["metadata"]["name"] in [c["metadata"]["name"] for c in answer["children"]]
    wait = answer["resyncAfterSeconds"]
    assert wait == MAX_AGE_SECONDS - 300
    later = sync(body, AT + timedelta(seconds=wait))
    assert created["metadata"]["name"] not in [c["metadata"]["name"] for c in later["children"]]


@pytest.mark.parametrize(
    ("declared", "events"),
    [
        pytest.param({}, [], id="not-declared-no-event"),
        pytest.param({CHILD_TYPE: []}, ["mnist.created-6b02d940"], id="declared-created-event"),
    ],
)
def test_sync_returns_events_only_when_declared(
    declared: dict[str, list[dict[str, Any]]], events: list[str]
) -> None:
    answer = created(request(mxjob(train_spec()), others=declared))
    found = [c["metadata"]["name"] for c in answer["children"] if c["kind"] == "Event"]
    assert found == events
    assert len(answer["children"]) == 10 + len(events)
    assert answer["status"] == created(request(mxjob(train_spec())))["status"]


def test_an_invalid_spec_keeps_the_observed_events_and_adds_none() -> None:
    kept = as_observed(event("Created", "MXJobCreated", T0))
    answer = sync(request(mxjob({"mxReplicaSpecs": {}}), others={CHILD_TYPE: [kept]}), AT)
    assert answer["status"]["conditions"][-1]["reason"] == "MXJobInvalidSpec"
    assert [(c["kind"], c["metadata"]["name"]) for c in answer["children"]] == [
        ("Event", kept["metadata"]["name"])
    ]


def test_the_component_declares_events_children(tmp_path: Path) -> None:
    """manifests/components/events on the standalone install, built by kubectl kustomize: the
    CompositeController gains the events child type after the shipped ones, never updated in
    place."""
    overlay = os.path.relpath(REPO / "manifests" / "overlays" / "standalone", tmp_path)
    component = os.path.relpath(REPO / "manifests" / "components" / "events", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": [overlay], "components": [component]})
    )
    (controller,) = (d for d in documents(tmp_path) if d["kind"] == "CompositeController")
    shipped = yaml.safe_load((REPO / "metacontroller" / "compositecontroller.yaml").read_text())
    assert controller["spec"]["childResources"] == [
        *shipped["spec"]["childResources"],
        {"apiVersion": "v1", "resource": "events", "updateStrategy": {"method": "OnDelete"}},
    ]
