"""No pod outside Kueue's admission, in a sync: pod sets edited under a queued or an
admitted Workload, the default LocalQueue, and namespaces that hold jobs without a queue
(docs/kueue.md)."""

import copy
from collections.abc import Callable
from typing import Any

import pytest

from app.integrations import kueue
from tests.support.jobs import (
    container,
    later,
    mxjob,
    observed,
    pod_status,
    pods_of,
    running_children,
    services_of,
    train_spec,
)
from tests.support.kueue_jobs import (
    ADMITTED,
    FLAVORS,
    HOLD,
    PENDING,
    admitted_run,
    kreq,
    labelled,
    local_queue,
    namespace,
    queued,
    related,
    synced,
    workloads_of,
)

Edit = Callable[[dict[str, Any]], None]


def _workers(n: int) -> Edit:
    def edit(spec: dict[str, Any]) -> None:
        spec["mxReplicaSpecs"]["Worker"]["replicas"] = n

    return edit


def _worker_container(**extra: Any) -> Edit:
    def edit(spec: dict[str, Any]) -> None:
        spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = [container(**extra)]

    return edit


def _worker_template(key: str, value: Any) -> Edit:
    def edit(spec: dict[str, Any]) -> None:
        template = spec["mxReplicaSpecs"]["Worker"]["template"]
        template.setdefault("metadata", {})
        template[key if key == "metadata" else "spec"].update(value)

    return edit


def _run_policy(**policy: Any) -> Edit:
    def edit(spec: dict[str, Any]) -> None:
        spec["runPolicy"] = policy

    return edit


CPU2 = {"resources": {"requests": {"cpu": "2"}}}
# Edits of what Kueue compares (its EquivalentToWorkload): each makes a new Workload.
DRIFTS = [
    pytest.param(_workers(3), id="workers-up"),
    pytest.param(_workers(1), id="workers-down"),
    pytest.param(_worker_container(**CPU2), id="requests"),
    pytest.param(_worker_container(image="mxjob/mxnet:2"), id="image"),
    pytest.param(_worker_template("spec", {"tolerations": [{"operator": "Exists"}]}), id="tol"),
]


def _workload_name(spec: dict[str, Any]) -> str:
    (wl,) = workloads_of(synced(kreq(labelled(spec))))
    return str(wl["metadata"]["name"])


@pytest.mark.parametrize("edit", DRIFTS)
def test_an_edit_kueue_compares_names_a_new_workload(edit: Edit) -> None:
    spec = train_spec()
    before = _workload_name(spec)
    edit(spec)
    assert _workload_name(spec) != before


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(_worker_template("metadata", {"labels": {"team": "x"}}), id="pod-label"),
        pytest.param(_run_policy(backoffLimit=3), id="run-policy"),
        pytest.param(_worker_template("spec", {"nodeSelector": {"z": "1"}}), id="node-selector"),
    ],
)
def test_an_edit_kueue_does_not_compare_keeps_the_workload(edit: Edit) -> None:
    spec = train_spec()
    before = _workload_name(spec)
    edit(spec)
    assert _workload_name(spec) == before


@pytest.mark.parametrize("edit", DRIFTS)
def test_a_queued_job_edited_gets_a_new_workload_in_one_sync(edit: Edit) -> None:
    job = labelled(train_spec())
    first = synced(kreq(job))
    (old,) = workloads_of(first)
    job["status"] = first["status"]
    edit(job["spec"])
    response = synced(kreq(job, workloads=[observed(old, **PENDING)]), later(5))
    (new,) = workloads_of(response)
    assert new["metadata"]["name"] != old["metadata"]["name"]
    assert pods_of(response) == []
    assert queued(response)["reason"] == "MXJobQueued"


def running_admitted() -> tuple[dict[str, Any], dict[str, Any], list[Any], list[Any]]:
    """An admitted job whose pods run, synced once more with them: the job (its status
    recording that), its admitted Workload, its observed pods and Services."""
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    pods, services = running_children(running)
    job["status"] = synced(kreq(job, pods, services, [admitted]), later(15))["status"]
    return job, admitted, pods, services


@pytest.mark.parametrize("edit", DRIFTS)
def test_an_admitted_job_edited_stops_then_queues_again(edit: Edit) -> None:
    """Kueue's "No matching Workload": the pods go while the admitted Workload keeps its
    quota; once they are gone the Workload goes and a new one waits; admitted, the new pods
    follow the new spec."""
    job, admitted, pods, services = running_admitted()
    edit(job["spec"])

    stopping = synced(kreq(job, pods, services, [admitted]), later(20))
    assert pods_of(stopping) == []
    assert services_of(stopping) == []
    kept = [w["metadata"]["name"] for w in workloads_of(stopping)]
    assert kept == [admitted["metadata"]["name"]]
    cond = queued(stopping)
    assert (cond["status"], cond["reason"]) == ("True", "MXJobRequeued")
    assert "no longer matches the pod sets Kueue admitted" in cond["message"]
    running_cond = next(c for c in stopping["status"]["conditions"] if c["type"] == "Running")
    assert (running_cond["status"], running_cond["reason"]) == ("False", "MXJobRequeued")

    # Pods being deleted still hold the old Workload.
    deleting = [copy.deepcopy(p) for p in pods]
    for pod in deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-11-22T12:00:21Z"
    job["status"] = stopping["status"]
    still = synced(kreq(job, deleting, [], [admitted]), later(21))
    assert [w["metadata"]["name"] for w in workloads_of(still)] == kept
    assert pods_of(still) == []

    gone = synced(kreq(job, [], [], [admitted]), later(22))
    (new,) = workloads_of(gone)
    assert new["metadata"]["name"] != admitted["metadata"]["name"]
    assert pods_of(gone) == []
    assert queued(gone)["reason"] == "MXJobRequeued"

    job["status"] = gone["status"]
    again = synced(kreq(job, workloads=[observed(new, **ADMITTED)]), later(30))
    sets = {p["name"]: p["count"] for p in new["spec"]["podSets"]}
    made = [p["metadata"]["labels"]["training.kubeflow.org/replica-type"] for p in pods_of(again)]
    assert {t: made.count(t) for t in set(made)} == sets
    assert queued(again)["reason"] == "MXJobAdmitted"


@pytest.mark.parametrize("edit", DRIFTS)
def test_a_sync_one_status_behind_still_says_requeued(edit: Edit) -> None:
    """Metacontroller may sync with the status before the requeue was written (its status
    update overwrites a newer one): the outgrown Workload, not the status, says why it waits."""
    job, admitted, _, _ = running_admitted()
    edit(job["spec"])
    # The pods are gone, and the status is still the admitted one.
    behind = synced(kreq(job, [], [], [admitted]), later(22))
    assert pods_of(behind) == []
    cond = queued(behind)
    assert (cond["status"], cond["reason"]) == ("True", "MXJobRequeued")
    assert "no longer matches the pod sets Kueue admitted" in cond["message"]


def test_an_admitted_job_whose_pods_finished_is_not_held_by_them() -> None:
    """Succeeded and Failed pods use no quota: they do not keep the old Workload."""
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    pods = [observed(p, **pod_status("Failed")) for p in pods_of(running)]
    _workers(3)(job["spec"])
    response = synced(kreq(job, pods, [], [admitted]), later(20))
    (new,) = workloads_of(response)
    assert new["metadata"]["name"] != admitted["metadata"]["name"]


def test_a_workload_named_as_before_that_covers_the_job_keeps_it_running() -> None:
    """Upgrading from a release that named Workloads `mxjob-<job>` stops no admitted job."""
    job, admitted, running = admitted_run()
    legacy = copy.deepcopy(admitted)
    legacy["metadata"]["name"] = kueue.legacy_workload_name("mnist")
    # As the API server shows it: the Workload CRD's defaults filled in.
    for pod_set in legacy["spec"]["podSets"]:
        pod_set["template"]["spec"]["containers"][0]["ports"] = [
            {"containerPort": 9091, "protocol": "TCP"}
        ]
    job["status"] = running["status"]
    pods, services = running_children(running)
    response = synced(kreq(job, pods, services, [legacy]), later(20))
    assert [w["metadata"]["name"] for w in workloads_of(response)] == ["mxjob-mnist"]
    assert len(pods_of(response)) == 5
    # One that no longer covers it is an outgrown Workload like any other.
    _workers(3)(job["spec"])
    response = synced(kreq(job, pods, services, [legacy]), later(21))
    assert pods_of(response) == []
    assert queued(response)["reason"] == "MXJobRequeued"


def test_a_job_without_the_label_queues_in_the_default_local_queue() -> None:
    response = synced(kreq(mxjob(train_spec()), rel=related(*FLAVORS, local_queue("default"))))
    (wl,) = workloads_of(response)
    assert wl["spec"]["queueName"] == "default"
    assert pods_of(response) == []
    assert "LocalQueue default" in queued(response)["message"]


def test_a_job_without_a_queue_in_a_holding_namespace_is_held() -> None:
    rel = related(*FLAVORS, namespace(HOLD))
    response = synced(kreq(mxjob(train_spec()), rel=rel))
    assert response["children"] == []
    cond = queued(response)
    assert (cond["status"], cond["reason"]) == ("True", "MXJobNoQueue")
    assert f"add the {kueue.QUEUE_LABEL} label" in cond["message"]
    assert response["status"]["conditions"][-1]["type"] == "Queued"


def test_a_job_running_before_its_namespace_held_runs_on() -> None:
    """As under Kueue, whose webhook holds only the jobs created after the setting."""
    plain = synced(kreq(mxjob(train_spec())))
    job = mxjob(train_spec(), status=plain["status"])
    pods = [observed(p, **pod_status("Running")) for p in pods_of(plain)]
    response = synced(kreq(job, pods, rel=related(*FLAVORS, namespace(HOLD))), later(5))
    assert len(pods_of(response)) == 5
    assert not any(c["type"] == "Queued" for c in response["status"]["conditions"])
