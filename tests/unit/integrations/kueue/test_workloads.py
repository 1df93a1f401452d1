"""The job's Workload child (app/integrations/kueue/workloads.py): a name that changes with what
Kueue compares, one pod set per replica type with replicas, an observed Workload that still
covers the job, and the priority both or neither (docs/kueue.md)."""

from typing import Any

import pytest

from app.core.model.spec import MXJobSpec, ReplicaType
from app.integrations import kueue
from app.integrations.kueue.workloads import covers, pod_sets, workload, workload_name
from tests.support.jobs import container, replica, train_spec

CPU = {"resources": {"requests": {"cpu": "1"}}}


def pod_set(name: str = "worker", count: int = 2, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [container(**CPU)]} | spec}
    return {"name": name, "count": count, "template": template}


@pytest.mark.parametrize(
    ("edited", "renamed"),
    [
        pytest.param(pod_set(count=3), True, id="count"),
        pytest.param(pod_set(containers=[container(image="other")]), True, id="container"),
        pytest.param(pod_set(initContainers=[container()]), True, id="init-container"),
        pytest.param(pod_set(tolerations=[{"operator": "Exists"}]), True, id="tolerations"),
        pytest.param(pod_set(nodeSelector={"pool": "a"}), False, id="node-selector"),
        pytest.param(pod_set(priorityClassName="high"), False, id="priority-class"),
    ],
)
def test_the_name_changes_with_what_kueue_compares(edited: dict[str, Any], renamed: bool) -> None:
    before = workload_name("mnist", [pod_set()])
    assert before.startswith("mxjob-mnist-")
    assert len(before) == len("mxjob-mnist-") + kueue.HASH_LENGTH
    assert (workload_name("mnist", [edited]) != before) is renamed
    assert kueue.legacy_workload_name("mnist") == "mxjob-mnist"


@pytest.mark.parametrize(
    ("observed", "covered"),
    [
        pytest.param({"spec": {"podSets": [pod_set()]}}, True, id="same"),
        pytest.param({"spec": {"podSets": [pod_set(nodeSelector={"a": "b"})]}}, True,
                     id="other-fields-alike"),
        pytest.param({"spec": {"podSets": [pod_set(count=1)]}}, False, id="count"),
        pytest.param({"spec": {"podSets": [pod_set(containers=[container()])]}}, False,
                     id="requests"),
        pytest.param({"spec": {"podSets": [pod_set("server")]}}, False, id="pod-set-name"),
        pytest.param({"spec": {"podSets": [pod_set(), pod_set("server")]}}, False,
                     id="another-pod-set"),
        pytest.param({"spec": {"podSets": "x"}}, False, id="pod-sets-not-a-list"),
        pytest.param({"spec": None}, False, id="no-spec"),
    ],
)  # fmt: skip
def test_an_observed_workload_covers_the_same_counts_and_requests(
    observed: dict[str, Any], covered: bool
) -> None:
    assert covers(observed, [pod_set()]) is covered


def test_one_pod_set_per_replica_type_that_has_replicas() -> None:
    raw = train_spec(servers=0, workers=3)
    raw["mxReplicaSpecs"]["Server"] = replica(0)
    spec = MXJobSpec.model_validate(raw)
    templates = {t: {"spec": {"t": t.lowered}} for t in ReplicaType}
    assert [(p["name"], p["count"], p["template"]) for p in pod_sets(templates, spec)] == [
        ("scheduler", 1, {"spec": {"t": "scheduler"}}),
        ("worker", 3, {"spec": {"t": "worker"}}),
    ]


@pytest.mark.parametrize(
    ("prio", "fields"),
    [
        pytest.param(None, {}, id="none"),
        pytest.param(
            kueue.Priority("PriorityClass", "scheduling.k8s.io", "high", 1000),
            {
                "priority": 1000,
                "priorityClassRef": {
                    "group": "scheduling.k8s.io",
                    "kind": "PriorityClass",
                    "name": "high",
                },
            },
            id="known-class",
        ),
        pytest.param(
            kueue.Priority("PriorityClass", "scheduling.k8s.io", "gone", None), {}, id="unknown"
        ),
    ],
)
def test_the_workload_has_its_priority_both_or_neither(
    prio: kueue.Priority | None, fields: dict[str, Any]
) -> None:
    made = workload("mnist", "team", "q", [pod_set()], prio, "mxjob-mnist-0")
    assert made == {
        "apiVersion": kueue.API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": "mxjob-mnist-0",
            "namespace": "team",
            "labels": {
                "training.kubeflow.org/operator-name": "mxjob-controller",
                "training.kubeflow.org/job-name": "mnist",
            },
        },
        "spec": {"podSets": [pod_set()], "queueName": "q"} | fields,
    }
