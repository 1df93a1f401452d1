"""Gang scheduling (app/integrations/gang.py): which scheduler's PodGroup the controller
declares, the job's PodGroup under each, and its pods put into the group
(docs/behaviour.md#gang-scheduling)."""

from typing import Any

import pytest

from app.core.model import envelope
from app.core.model.seam import SyncInputs
from app.core.model.spec import MXJobSpec
from app.integrations import gang
from tests.support import jobs as s
from tests.support.jobs import train_spec

POLICY = {
    "minResources": {"cpu": "4"},
    "queue": "q",
    "priorityClass": "high",
    "scheduleTimeoutSeconds": 60,
}


@pytest.mark.parametrize(
    ("declared", "scheduler"),
    [
        pytest.param([], None, id="none"),
        pytest.param([gang.SCHEDULER_PLUGINS.child_type], gang.SCHEDULER_PLUGINS, id="plugins"),
        pytest.param(
            [gang.SCHEDULER_PLUGINS.child_type, gang.VOLCANO.child_type],
            gang.VOLCANO,
            id="volcano-first",
        ),
    ],
)
def test_the_scheduler_whose_pod_group_is_declared(
    declared: list[str], scheduler: gang.GangScheduler | None
) -> None:
    assert gang.declared(declared.__contains__) is scheduler


@pytest.mark.parametrize(
    ("scheduler", "policy", "group"),
    [
        pytest.param(gang.VOLCANO, None, {"minMember": 5}, id="all-replicas"),
        pytest.param(gang.VOLCANO, {"minAvailable": 3}, {"minMember": 3}, id="min-available"),
        pytest.param(
            gang.VOLCANO,
            POLICY,
            {"minMember": 5, "minResources": {"cpu": "4"}, "queue": "q",
             "priorityClassName": "high"},
            id="volcano",
        ),
        pytest.param(
            gang.SCHEDULER_PLUGINS,
            POLICY,
            {"minMember": 5, "minResources": {"cpu": "4"}, "scheduleTimeoutSeconds": 60},
            id="scheduler-plugins",
        ),
    ],
)  # fmt: skip
def test_the_pod_group_under_each_scheduler(
    scheduler: gang.GangScheduler, policy: dict[str, Any] | None, group: dict[str, Any]
) -> None:
    raw = train_spec() | ({"runPolicy": {"schedulingPolicy": policy}} if policy else {})
    made = gang.pod_group(scheduler, "mnist", "team", MXJobSpec.model_validate(raw))
    assert made == {
        "apiVersion": scheduler.api_version,
        "kind": "PodGroup",
        "metadata": {
            "name": "mnist",
            "namespace": "team",
            "labels": {
                "training.kubeflow.org/operator-name": "mxjob-controller",
                "training.kubeflow.org/job-name": "mnist",
            },
        },
        "spec": group,
    }


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "mnist-worker-0", "labels": {"a": "b"}}, "spec": spec}


@pytest.mark.parametrize(
    ("scheduler", "before", "after"),
    [
        pytest.param(
            gang.VOLCANO,
            pod(),
            {"metadata": {"name": "mnist-worker-0", "labels": {"a": "b"},
                          "annotations": {"scheduling.k8s.io/group-name": "mnist"}},
             "spec": {"schedulerName": "volcano"}},
            id="volcano",
        ),
        pytest.param(
            gang.SCHEDULER_PLUGINS,
            pod(),
            {"metadata": {"name": "mnist-worker-0",
                          "labels": {"a": "b", "scheduling.x-k8s.io/pod-group": "mnist"}},
             "spec": {"schedulerName": "scheduler-plugins-scheduler"}},
            id="scheduler-plugins",
        ),
        pytest.param(
            gang.VOLCANO,
            pod(schedulerName="my-volcano"),
            {"metadata": {"name": "mnist-worker-0", "labels": {"a": "b"},
                          "annotations": {"scheduling.k8s.io/group-name": "mnist"}},
             "spec": {"schedulerName": "my-volcano"}},
            id="the-templates-scheduler-kept",
        ),
    ],
)  # fmt: skip
def test_a_pod_joins_the_group(
    scheduler: gang.GangScheduler, before: dict[str, Any], after: dict[str, Any]
) -> None:
    gang.put_in_group(scheduler, before, "mnist")
    assert before == after


@pytest.mark.parametrize("scheduler", [None, gang.VOLCANO, gang.SCHEDULER_PLUGINS])
def test_a_contribution_where_the_controller_declares_a_pod_group(
    scheduler: gang.GangScheduler | None,
) -> None:
    """At the seam: the PodGroup ahead of the pods, each pod put into the group."""
    others: dict[str, list[Any]] = {scheduler.child_type: []} if scheduler else {}
    request = envelope.read_request(s.request(s.mxjob(train_spec()), others=others))
    spec = MXJobSpec.model_validate(train_spec())
    contribution = gang.contribute(SyncInputs(request, spec, [], False, lambda rtype: {}))
    if scheduler is None:
        assert contribution is None
        return
    assert contribution is not None
    assert contribution.job_children() == [gang.pod_group(scheduler, "mnist", "default", spec)]
    built = pod()
    contribution.fit_pod(built)
    assert built["spec"]["schedulerName"] == scheduler.scheduler_name
