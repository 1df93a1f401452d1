"""The sync request as Metacontroller sends it (app/core/model/envelope.py): what is one and what is
refused with a message, its children read by name whatever the hook version keys them by, and
what a request that may not be one says of its job."""

import re
from typing import Any

import pytest

from app.core.model import envelope, kinds
from app.core.model.errors import BadRequest
from tests.support import jobs as s


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param([], "a sync request is a JSON object with a `parent`", id="not-an-object"),
        pytest.param({}, "parent: Field required", id="no-parent"),
        pytest.param(
            {"parent": {"metadata": {"name": ""}}},
            "parent.metadata.name: String should have at least 1 character",
            id="empty-name",
        ),
        pytest.param(
            {"parent": {"kind": "Pod", "metadata": {"name": "a"}}},
            "parent.kind: Input should be 'MXJob'",
            id="not-an-mxjob",
        ),
        pytest.param(
            {"parent": {"metadata": {"name": "a"}}, "children": {"Pod.v1": []}},
            "children.Pod.v1: Input should be a valid dictionary",
            id="children-not-a-map",
        ),
    ],
)
def test_what_is_not_a_sync_request_is_refused_with_what_is_wrong(body: Any, message: str) -> None:
    with pytest.raises(BadRequest, match=re.escape(message)):
        envelope.read_request(body)


def test_a_refusal_names_five_problems_at_most() -> None:
    six = {"controller": 1, "parent": {"kind": "Pod", "metadata": {}}, "children": 1}
    with pytest.raises(BadRequest) as refused:
        envelope.read_request(six | {"related": 1, "finalizing": [], "extra": "allowed"})
    summary = str(refused.value).removeprefix("not a valid sync request: ")
    assert [problem.split(":")[0] for problem in summary.split("; ")] == [
        "controller",
        "parent.kind",
        "parent.metadata.name",
        "children",
        "related",
    ]


def _keyed_by_name(request: dict[str, Any]) -> dict[str, Any]:
    """The request as hook version v1 keys its children: by name alone."""
    return request | {
        "children": {
            kind: {child["metadata"]["name"]: child for child in group.values()}
            for kind, group in request["children"].items()
        }
    }


def test_children_are_read_by_their_names_whatever_their_keys() -> None:
    job = s.mxjob(s.train_spec(servers=0, workers=2))
    pods = [s.observed(p) for p in reversed(s.pods_of(s.created(s.request(job))))]
    v2 = s.request(job, pods, others={"ConfigMap.v1": []})
    for body in (v2, _keyed_by_name(v2)):
        read = envelope.read_request(body)
        names = [envelope.name_of(p) for p in read.observed(kinds.POD_TYPE)]
        assert names == ["mnist-scheduler-0", "mnist-worker-0", "mnist-worker-1"]
        assert read.observed(kinds.SERVICE_TYPE) == []
        assert read.observed("PodGroup.scheduling.volcano.sh/v1beta1") == []


@pytest.mark.parametrize(
    ("others", "pods", "declares_config_map", "has_pods_or_services"),
    [
        pytest.param(None, [], False, False, id="pods-and-services-declared"),
        pytest.param({kinds.CONFIG_MAP_TYPE: []}, [], True, False, id="config-maps-declared"),
        pytest.param(None, [s.observed(s.pods_of(s.created(s.request(s.mxjob(s.train_spec()))))[0])],
                     False, True, id="a-pod"),
    ],
)  # fmt: skip
def test_what_the_controller_declares_and_the_job_has(
    others: dict[str, list[Any]] | None,
    pods: list[dict[str, Any]],
    declares_config_map: bool,
    has_pods_or_services: bool,
) -> None:
    read = envelope.read_request(s.request(s.mxjob(s.train_spec()), pods, others=others))
    assert read.declares(kinds.POD_TYPE)
    assert read.declares(kinds.CONFIG_MAP_TYPE) is declares_config_map
    assert read.has_pods_or_services() is has_pods_or_services


@pytest.mark.parametrize(
    ("child", "name"),
    [
        pytest.param({"metadata": {"name": "a"}}, "a", id="named"),
        pytest.param({"metadata": {}}, None, id="no-name"),
        pytest.param({"metadata": "a"}, None, id="metadata-not-an-object"),
        pytest.param({}, None, id="no-metadata"),
    ],
)
def test_name_of_a_child(child: dict[str, Any], name: str | None) -> None:
    assert envelope.name_of(child) == name


# For the logs of a refused or failed sync: read from any body, never raising.
@pytest.mark.parametrize(
    ("body", "job"),
    [
        pytest.param(s.request(s.mxjob(s.train_spec())), ("default", "mnist"), id="a-request"),
        pytest.param({"parent": {"metadata": {"name": "a", "namespace": 7}}}, (None, "a"),
                     id="namespace-not-text"),
        pytest.param({"parent": {"metadata": None}}, (None, None), id="no-metadata"),
        pytest.param({"parent": []}, (None, None), id="parent-not-an-object"),
        pytest.param("junk", (None, None), id="not-an-object"),
    ],
)  # fmt: skip
def test_which_job_a_body_is_about(body: Any, job: envelope.JobId) -> None:
    assert envelope.job_of(body) == job


def _replicas(*counts: Any) -> dict[str, Any]:
    """A body whose replica types ask for these counts (an Ellipsis leaves the count out)."""
    types = ("Scheduler", "Server", "Worker")
    specs = {t: {} if n is ... else {"replicas": n} for t, n in zip(types, counts, strict=False)}
    return {"parent": {"spec": {"mxReplicaSpecs": specs}}}


# Read before the request is: an absent count is one replica, as the spec's defaults say.
@pytest.mark.parametrize(
    ("body", "total"),
    [
        pytest.param(_replicas(1, 2, 3), 6, id="counted"),
        pytest.param(_replicas(..., 2, 0), 3, id="absent-is-one"),
        pytest.param(_replicas(1, -1), None, id="negative"),
        pytest.param(_replicas(1, True), None, id="boolean"),
        pytest.param(_replicas(1, "2"), None, id="text"),
        pytest.param({"parent": {"spec": {"mxReplicaSpecs": {"Worker": 3}}}}, None, id="odd"),
        pytest.param({"parent": {"spec": {}}}, None, id="no-replica-specs"),
        pytest.param({"parent": {}}, None, id="no-spec"),
        pytest.param([], None, id="not-an-object"),
    ],
)
def test_how_many_replicas_a_body_asks_for(body: Any, total: int | None) -> None:
    assert envelope.declared_replicas(body) == total
