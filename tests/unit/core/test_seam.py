"""The seam (app/core/model/seam.py): the integrations the service hands a sync contribute to it,
the report of every one that reports before the decision counts, and the core keeps the
conditions each one declares, naming none of them."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.core.model.seam import (
    ContributionDefaults,
    Integration,
    PodUpdate,
    Reports,
    SyncInputs,
    reports_of,
)
from app.core.model.spec import ReplicaType
from app.core.reconcile import sync
from tests.support import jobs as s


@dataclass(frozen=True)
class Update:
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GuestReport:
    """What a guest reports before the decision (seam.Report)."""

    condition_type: str
    condition: tuple[str, str, str] | None = None
    wait: bool = False
    pod_sets: Mapping[ReplicaType, PodUpdate] = field(default_factory=dict)


@dataclass(frozen=True)
class Reporting(ContributionDefaults):
    report: GuestReport | None


def guest(name: str, report: GuestReport | None) -> Integration:
    """An integration that contributes to every sync and reports `report`, declaring its
    condition type."""

    def contribute(_: SyncInputs) -> Reporting:
        return Reporting(report)

    return Integration(name, contribute, (report.condition_type,) if report else ())


HOLDS = GuestReport("Held", ("True", "GuestHolds", "held by a guest"), wait=True)
LABELS = GuestReport("Labelled", ("True", "GuestLabels", "labelled"), pod_sets={
    ReplicaType.WORKER: Update(labels={"team": "a"})
})  # fmt: skip


@pytest.mark.parametrize(
    ("reports", "wait", "worker_updates"),
    [
        pytest.param([], False, 0, id="nobody-reports"),
        pytest.param([None, LABELS], False, 1, id="one-of-two-reports"),
        pytest.param([LABELS, HOLDS], True, 1, id="either-may-hold-the-job"),
        pytest.param([LABELS, LABELS], False, 2, id="each-adds-to-the-pods"),
    ],
)
def test_every_integration_that_reports_counts(
    reports: list[GuestReport | None], wait: bool, worker_updates: int
) -> None:
    everything = reports_of([Reporting(report) for report in reports])
    assert everything == Reports(tuple(report for report in reports if report is not None))
    assert everything.wait is wait
    assert len(everything.pod_updates(ReplicaType.WORKER)) == worker_updates
    assert everything.pod_updates(ReplicaType.SERVER) == []


def test_two_integrations_each_set_their_own_condition() -> None:
    guests = (guest("labels", LABELS), guest("holds", HOLDS))
    request = s.after_first(s.request(s.mxjob(s.train_spec())))
    answer = sync(request, s.NOW, guests)
    conditions = {c["type"]: c["reason"] for c in answer["status"]["conditions"]}
    assert conditions == {
        "Created": "MXJobCreated",
        "Labelled": "GuestLabels",
        "Held": "GuestHolds",
    }
    assert answer["children"] == []


def test_a_condition_no_integration_declares_is_not_read_back() -> None:
    request = s.after_first(s.request(s.mxjob(s.train_spec())))
    labelled = sync(request, s.NOW, (guest("labels", LABELS),))["status"]
    request["parent"]["status"] = labelled
    types = [c["type"] for c in sync(request, s.NOW, ())["status"]["conditions"]]
    assert "Labelled" not in types
    kept = [
        c["type"] for c in sync(request, s.NOW, (guest("other", None),))["status"]["conditions"]
    ]
    assert "Labelled" not in kept


def test_the_pods_get_what_each_integration_adds() -> None:
    guests = (guest("labels", LABELS), guest("more", GuestReport("More", None, pod_sets={
        ReplicaType.WORKER: Update(annotations={"more": "yes"})
    })))  # fmt: skip
    answer = sync(s.after_first(s.request(s.mxjob(s.train_spec()))), s.NOW, guests)
    workers = [p for p in s.pods_of(answer) if "worker" in p["metadata"]["name"]]
    assert workers
    for pod in workers:
        assert pod["metadata"]["labels"]["team"] == "a"
        assert pod["metadata"]["annotations"]["more"] == "yes"
