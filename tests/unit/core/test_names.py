"""Names and labels of a job's children (app/core/mxnet/names.py): `<job>-<t>-<i>` for a replica's
Service and first pod, a suffixed name for each replacement, the four labels a Service selects
its pods by, and metadata with only what the job has (docs/behaviour.md#children)."""

from typing import Any

import pytest

from app.core.model.spec import ReplicaType
from app.core.mxnet import names

JOB_LABELS = {
    "training.kubeflow.org/operator-name": "mxjob-controller",
    "training.kubeflow.org/job-name": "mnist",
}


@pytest.mark.parametrize(
    ("rtype", "index", "attempt", "name"),
    [
        pytest.param(ReplicaType.SCHEDULER, 0, 0, "mnist-scheduler-0", id="first-attempt"),
        pytest.param(ReplicaType.WORKER, 12, 0, "mnist-worker-12", id="an-index"),
        pytest.param(ReplicaType.WORKER, 1, 3, "mnist-worker-1-r3", id="third-replacement"),
        pytest.param(ReplicaType.TUNER_SERVER, 0, 1, "mnist-tunerserver-0-r1", id="tuner-server"),
    ],
)
def test_a_pods_name_says_its_replica_and_attempt(
    rtype: ReplicaType, index: int, attempt: int, name: str
) -> None:
    assert names.pod_name("mnist", rtype, index, attempt) == name
    assert names.attempt_name(names.child_name("mnist", rtype, index), attempt) == name


def test_a_service_selects_every_attempt_of_its_replica_by_four_labels() -> None:
    assert names.job_labels("mnist") == JOB_LABELS
    assert names.selector("mnist", ReplicaType.WORKER, 1) == JOB_LABELS | {
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1",
    }


@pytest.mark.parametrize(
    ("namespace", "annotations", "meta"),
    [
        pytest.param(None, {}, {"name": "n", "labels": {"a": "b"}}, id="no-namespace"),
        pytest.param(
            "team",
            {"x": "y"},
            {"name": "n", "namespace": "team", "labels": {"a": "b"}, "annotations": {"x": "y"}},
            id="namespace-and-annotations",
        ),
    ],
)
def test_metadata_has_a_namespace_and_annotations_only_where_there_are_some(
    namespace: str | None, annotations: dict[str, str], meta: dict[str, Any]
) -> None:
    assert names.metadata("n", namespace, {"a": "b"}, annotations) == meta
