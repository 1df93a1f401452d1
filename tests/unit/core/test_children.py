"""The children a job should have (app/core/build/desired.py), following the decision: while it
runs, once it is finished under each cleanPodPolicy and its TTL, while an integration holds it
(docs/behaviour.md#children; docs/lifecycle.md)."""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import pytest

from app.core.children import builders, desired
from app.core.model import kinds
from app.core.model.seam import ContributionDefaults, Decision, PodUpdate
from app.core.model.spec import CleanPodPolicy, ReplicaType
from app.core.model.values import format_time
from app.core.observe import replicas
from app.core.validate.validation import validated_spec
from tests.support import jobs as s

DONE_AT = s.NOW - timedelta(seconds=100)
ALL_PODS = ["mnist-scheduler-0", "mnist-worker-0", "mnist-worker-1"]
# How each pod ends: the one still running is what a finished job's clean-up is about.
ENDED = {"mnist-scheduler-0": "Succeeded", "mnist-worker-0": "Running", "mnist-worker-1": "Failed"}


def job(**run_policy: Any) -> builders.JobContext:
    spec = s.train_spec(servers=0, workers=2) | {"runPolicy": run_policy}
    return builders.job_context("mnist", "default", validated_spec("mnist", spec), config_map=True)


def owned(phases: Mapping[str, str]) -> replicas.ObservedReplicas:
    """The job's pods, observed in these phases, read as a sync reads them."""
    parent = s.mxjob(s.train_spec(servers=0, workers=2))
    answer = s.created(s.request(parent, others={kinds.CONFIG_MAP_TYPE: []}))
    pods = {
        p["metadata"]["name"]: s.observed(p, **s.pod_status(phases[p["metadata"]["name"]]))
        for p in s.pods_of(answer)
        if p["metadata"]["name"] in phases
    }
    spec = validated_spec("mnist", parent["spec"])
    return replicas.owned(replicas.read_pods(pods, "mnist"), list, "mnist", spec)


def decision(**kw: Any) -> Decision:
    return replace(Decision([], start_time=None, resync_after=0, restarts=0), **kw)


def finished(cleanup: CleanPodPolicy, finishing: bool = False) -> Decision:
    when = format_time(DONE_AT)
    return decision(finished=True, finishing=finishing, completion_time=when, cleanup=cleanup)


def kinds_and_names(answer: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(c["kind"], c["metadata"]["name"]) for c in answer]


def test_a_running_job_has_its_config_map_then_every_pod_then_every_service() -> None:
    wanted, resync = desired.desired_children(
        job(), owned(dict.fromkeys(ALL_PODS, "Running")), decision(resync_after=30), s.NOW
    )
    assert kinds_and_names(wanted) == [
        ("ConfigMap", "mnist-mx-config"),
        *(("Pod", name) for name in ALL_PODS),
        *(("Service", name) for name in ALL_PODS),
    ]
    assert resync == 30


def test_a_new_job_gets_every_pod_and_service() -> None:
    wanted, _ = desired.desired_children(job(), owned({}), decision(), s.NOW)
    assert len(wanted) == 1 + 2 * len(ALL_PODS)


class Update(NamedTuple):
    """What an integration adds to a replica type's pods (seam.PodUpdate)."""

    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]]
    labels: dict[str, str]
    annotations: dict[str, str]


@dataclass(frozen=True)
class GuestReport:
    """What an integration reports before the decision (seam.Report)."""

    wait: bool = False
    condition_type: str = "Held"
    condition: tuple[str, str, str] | None = None
    pod_sets: Mapping[ReplicaType, PodUpdate] = field(default_factory=dict)


@dataclass(frozen=True)
class Reporting(ContributionDefaults):
    """An integration's contribution (seam.Contribution) that only reports before the decision."""

    report: GuestReport | None

    def children(self, decision: Decision, now: datetime) -> tuple[list[dict[str, Any]], int]:
        return [], 0


@pytest.mark.parametrize(
    ("made", "report"),
    [
        pytest.param(job(suspend=True), None, id="suspended"),
        pytest.param(job(), GuestReport(wait=True), id="held-by-an-integration"),
    ],
)
def test_a_job_that_waits_has_no_children(
    made: builders.JobContext, report: GuestReport | None
) -> None:
    running = owned(dict.fromkeys(ALL_PODS, "Running"))
    contributions = [Reporting(report)]
    assert desired.desired_children(
        made, running, decision(resync_after=30), s.NOW, contributions
    ) == (
        [],
        0,
    )


def test_an_integration_adds_to_the_pods_of_one_replica_type() -> None:
    pool = Update(node_selector={"pool": "a"}, tolerations=[], labels={"team": "x"}, annotations={})
    report = GuestReport(pod_sets={ReplicaType.WORKER: pool})
    wanted, _ = desired.desired_children(job(), owned({}), decision(), s.NOW, [Reporting(report)])
    pods = {c["metadata"]["name"]: c for c in wanted if c["kind"] == "Pod"}
    assert "nodeSelector" not in pods["mnist-scheduler-0"]["spec"]
    for name in ("mnist-worker-0", "mnist-worker-1"):
        assert pods[name]["spec"]["nodeSelector"] == {"pool": "a"}
        assert pods[name]["metadata"]["labels"]["team"] == "x"


# The clean-up once the status records the job finished; the deciding sync removes nothing.
@pytest.mark.parametrize(
    ("made", "kept"),
    [
        pytest.param(finished(CleanPodPolicy.RUNNING, finishing=True), ALL_PODS, id="finishing"),
        pytest.param(finished(CleanPodPolicy.NONE), ALL_PODS, id="none"),
        pytest.param(
            finished(CleanPodPolicy.RUNNING),
            ["mnist-scheduler-0", "mnist-worker-1"],
            id="running",
        ),
        pytest.param(finished(CleanPodPolicy.ALL), [], id="all"),
    ],
)
def test_a_finished_job_keeps_what_its_clean_up_leaves(made: Decision, kept: list[str]) -> None:
    wanted, resync = desired.desired_children(job(), owned(ENDED), made, s.NOW)
    config_map = [("ConfigMap", "mnist-mx-config")] if kept else []
    pods_then_services = [("Pod", n) for n in kept] + [("Service", n) for n in kept]
    assert (kinds_and_names(wanted), resync) == (config_map + pods_then_services, 0)


@pytest.mark.parametrize(
    ("ttl", "expected"),
    [
        pytest.param(160, (5, 60), id="sixty-seconds-left"),
        pytest.param(100, (0, 0), id="expired"),
        pytest.param(40, (0, 0), id="long-expired"),
    ],
)
def test_a_finished_job_asks_back_when_its_ttl_ends_then_has_no_children(
    ttl: int, expected: tuple[int, int]
) -> None:
    wanted, resync = desired.desired_children(
        job(ttlSecondsAfterFinished=ttl), owned(ENDED), finished(CleanPodPolicy.RUNNING), s.NOW
    )
    assert (len(wanted), resync) == expected
