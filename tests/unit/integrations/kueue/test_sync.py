"""Kueue's contribution to a sync (app/integrations/kueue/sync.py): the Workload child, the job held
until admitted, the admission's flavors in the pods, the priority class, label edits, a
Workload deleted by hand (docs/kueue.md). Eviction, deactivation and release: in
test_sync_eviction.py."""

import copy
from typing import Any

import pytest

from app.integrations import kueue
from tests.support.hooked import sync
from tests.support.jobs import (
    created,
    later,
    mxjob,
    observed,
    pods_of,
    request,
    running_children,
    services_of,
    train_spec,
)
from tests.support.kueue_jobs import (
    ADMITTED,
    FLAVORS,
    PENDING,
    QUEUE,
    TOLERATION,
    admitted_run,
    kreq,
    labelled,
    priority_class,
    queued,
    related,
    state,
    synced,
    workloads_of,
)


def test_a_queued_job_gets_a_workload_and_no_pods() -> None:
    response = synced(kreq(labelled(train_spec())))
    assert pods_of(response) == []
    assert services_of(response) == []
    (wl,) = workloads_of(response)
    assert wl["metadata"]["name"].startswith("mxjob-mnist-")
    assert len(wl["metadata"]["name"]) == len("mxjob-mnist-") + kueue.HASH_LENGTH
    assert wl["spec"]["queueName"] == "team-a"
    sets = [(p["name"], p["count"]) for p in wl["spec"]["podSets"]]
    assert sets == [("scheduler", 1), ("server", 2), ("worker", 2)]
    template = wl["spec"]["podSets"][2]["template"]
    assert template["spec"]["containers"][0]["image"] == "mxjob/mxnet:1.9.1"
    assert "name" not in template["metadata"]
    assert state(response) == "Queued"
    assert queued(response)["reason"] == "MXJobQueued"
    assert "LocalQueue team-a" in queued(response)["message"]
    assert "startTime" not in response["status"]
    assert [c["kind"] for c in response["children"]] == ["Workload"]


def test_kueues_message_says_why_it_waits() -> None:
    job = labelled(train_spec())
    wl = workloads_of(synced(kreq(job)))[0]
    response = synced(kreq(job, workloads=[observed(wl, **PENDING)]))
    assert pods_of(response) == []
    message = queued(response)["message"]
    assert message.endswith("couldn't assign flavors to pod set worker: too big")
    assert state(response) == "Queued"


def test_admitted_pods_carry_their_flavors() -> None:
    _, _, response = admitted_run()
    pods = pods_of(response)
    assert len(pods) == 5
    for pod in pods:
        rtype = pod["metadata"]["labels"]["training.kubeflow.org/replica-type"]
        want = {"pool": "a"} if rtype == "worker" else {"pool": "b"}
        assert pod["spec"]["nodeSelector"] == want, pod["metadata"]["name"]
        assert pod["spec"].get("tolerations", []) == ([TOLERATION] if rtype == "worker" else [])
    assert queued(response)["status"] == "False"
    assert queued(response)["reason"] == "MXJobAdmitted"
    assert "ClusterQueue cq" in queued(response)["message"]
    assert response["status"]["startTime"] == "2026-11-22T12:00:10Z"
    assert len(workloads_of(response)) == 1


def test_template_node_selector_and_tolerations_are_kept() -> None:
    spec = train_spec()
    spec["mxReplicaSpecs"]["Worker"]["template"]["spec"] |= {
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [TOLERATION, {"key": "x", "operator": "Exists"}],
    }
    job = labelled(spec)
    wl = workloads_of(synced(kreq(job)))[0]
    response = synced(kreq(job, workloads=[observed(wl, **ADMITTED)]))
    worker = next(p for p in pods_of(response) if p["metadata"]["name"] == "mnist-worker-0")
    assert worker["spec"]["nodeSelector"] == {"disk": "ssd", "pool": "a"}
    assert worker["spec"]["tolerations"] == [TOLERATION, {"key": "x", "operator": "Exists"}]


@pytest.mark.parametrize(
    ("template_extra", "rel", "expected"),
    [
        pytest.param(
            {"nodeSelector": {"pool": "z"}},
            None,
            "but the admission of pod set worker sets nodeSelector pool=a, which the pod "
            "template sets to z",
            id="node-selector-clash",
        ),
        pytest.param(
            {}, {}, "but ResourceFlavor on-b assigned to pod set scheduler is not", id="no-flavor"
        ),
    ],
)
def test_an_admission_that_cannot_be_applied_keeps_the_job_waiting(
    template_extra: dict[str, Any], rel: dict[str, Any] | None, expected: str
) -> None:
    spec = train_spec()
    spec["mxReplicaSpecs"]["Worker"]["template"]["spec"] |= template_extra
    job = labelled(spec)
    wl = workloads_of(synced(kreq(job, rel=rel)))[0]
    response = synced(kreq(job, workloads=[observed(wl, **ADMITTED)], rel=rel))
    assert pods_of(response) == []
    assert expected in queued(response)["message"]
    assert state(response) == "Queued"


def test_the_priority_class_goes_into_the_workload() -> None:
    spec = train_spec()
    spec["runPolicy"] = {"schedulingPolicy": {"priorityClass": "high"}}
    rel = related(*FLAVORS, priority_class("high", 1000))
    (wl,) = workloads_of(synced(kreq(labelled(spec), rel=rel)))
    assert wl["spec"]["priority"] == 1000
    ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}
    assert wl["spec"]["priorityClassRef"] == ref
    # A class that does not exist: neither (the Workload CRD wants a priority with a ref).
    (unknown,) = workloads_of(synced(kreq(labelled(spec), rel=related(*FLAVORS))))
    assert "priority" not in unknown["spec"]
    assert "priorityClassRef" not in unknown["spec"]


def test_without_the_label_or_the_child_type_nothing_changes() -> None:
    plain = created(request(mxjob(train_spec())))
    # Declared, no label.
    assert created(kreq(mxjob(train_spec()))) == plain
    # Labelled, not declared.
    assert created(request(labelled(train_spec()))) == plain


def test_a_label_added_to_a_running_job_changes_nothing() -> None:
    first = created(request(mxjob(train_spec())))
    job = mxjob(train_spec(), status=first["status"])
    pods, services = running_children(first)
    unlabelled = sync(kreq(copy.deepcopy(job), pods, services), later(5))
    job["metadata"]["labels"] = dict(QUEUE)
    assert sync(kreq(job, pods, services), later(5)) == unlabelled


def test_a_label_removed_from_a_waiting_job_keeps_it_in_its_queue() -> None:
    """The admission policy refuses the edit; a job it did not check waits on."""
    job = labelled(train_spec())
    first = synced(kreq(job))
    job["status"] = first["status"]
    job["metadata"]["labels"] = {}
    wl = observed(workloads_of(first)[0], **PENDING)
    response = synced(kreq(job, workloads=[wl]), later(5))
    assert [w["metadata"]["name"] for w in workloads_of(response)] == [wl["metadata"]["name"]]
    assert pods_of(response) == []
    assert queued(response)["reason"] == "MXJobQueued"


def test_a_label_removed_from_a_suspended_job_lets_it_run_unqueued_on_resume() -> None:
    """Its Workload gone (suspended, then resumed without the label where no default queue
    exists, as the admission policies allow): it runs outside Kueue."""
    job = labelled(train_spec())
    first = synced(kreq(job))
    job["status"] = first["status"]
    job["metadata"]["labels"] = {}
    response = synced(kreq(job), later(5))
    assert workloads_of(response) == []
    assert len(pods_of(response)) == 5
    cond = queued(response)
    assert (cond["status"], cond["reason"]) == ("False", "MXJobUnqueued")


def test_a_label_removed_from_an_admitted_job_keeps_its_workload() -> None:
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    job["metadata"]["labels"] = {}
    pods, services = running_children(running)
    response = synced(kreq(job, pods, services, [admitted]), later(20))
    names = [w["metadata"]["name"] for w in workloads_of(response)]
    assert names == [admitted["metadata"]["name"]]
    assert sorted(p["metadata"]["name"] for p in pods_of(response)) == sorted(
        p["metadata"]["name"] for p in pods
    )


def test_a_workload_deleted_by_hand_is_recreated_and_running_pods_stay() -> None:
    job, _, running = admitted_run()
    job["status"] = running["status"]
    pods, services = running_children(running)
    response = synced(kreq(job, pods, services), later(20))
    assert len(workloads_of(response)) == 1
    assert len(pods_of(response)) == 5
    assert queued(response)["reason"] == "MXJobAdmitted"
    # Recreated and pending: the pods still stay.
    job["status"] = response["status"]
    wl = observed(workloads_of(response)[0], **PENDING)
    response = synced(kreq(job, pods, services, [wl]), later(21))
    assert len(pods_of(response)) == 5


def test_a_flavor_gone_from_under_a_running_job_does_not_stop_it() -> None:
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    pods, services = running_children(running)
    response = synced(kreq(job, pods, services, [admitted], rel={}), later(20))
    assert len(pods_of(response)) == 5
    assert queued(response)["reason"] == "MXJobAdmitted"
