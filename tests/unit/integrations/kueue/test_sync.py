"""Kueue's turn in a sync (app/integrations/kueue/sync.py): the Workload child, the job held
until admitted, the admission's flavors in the pods, eviction, release on finish, label edits
(docs/kueue.md)."""

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
    pod_status,
    pods_of,
    request,
    running_children,
    services_of,
    train_spec,
)
from tests.support.kueue_jobs import (
    ADMITTED,
    ASSIGN,
    EVICTED,
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
    wl_status,
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


def test_eviction_stops_the_job_and_requeues_it_uncharged() -> None:
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    pods, services = running_children(running)
    now_running = synced(kreq(job, pods, services, [admitted]), later(20))
    assert state(now_running) == "Running"
    job["status"] = now_running["status"]
    evicted = observed(workloads_of(running)[0], **EVICTED)
    response = synced(kreq(job, pods, services, [evicted]), later(30))
    # Pods and Services go; the evicted Workload stays until the status records the eviction.
    assert [c["kind"] for c in response["children"]] == ["Workload"]
    assert state(response) == "Queued"
    cond = queued(response)
    assert cond["reason"] == "MXJobEvicted"
    assert "Preempted" in cond["message"]
    assert "queued again in LocalQueue team-a" in cond["message"]
    running_cond = next(c for c in response["status"]["conditions"] if c["type"] == "Running")
    assert (running_cond["status"], running_cond["reason"]) == ("False", "MXJobEvicted")
    assert "startTime" not in response["status"]
    # Recorded: the evicted Workload goes (its deletion releases the quota).
    job["status"] = response["status"]
    recorded = synced(kreq(job, workloads=[evicted]), later(30))
    assert recorded["children"] == []
    assert recorded["status"]["conditions"] == response["status"]["conditions"]
    # The next sync, the Workload gone: a new one, and the job says it was evicted.
    again = synced(kreq(job), later(31))
    assert len(workloads_of(again)) == 1
    assert pods_of(again) == []
    assert queued(again) == cond
    # Pending again, then admitted: fresh pods, no restart counted, a new start time.
    wl = workloads_of(again)[0]
    job["status"] = again["status"]
    pending = synced(kreq(job, workloads=[observed(wl, **PENDING)]), later(32))
    assert queued(pending) == cond
    job["status"] = pending["status"]
    back = synced(kreq(job, workloads=[observed(wl, **ADMITTED)]), later(60))
    names = sorted(p["metadata"]["name"] for p in pods_of(back))
    assert names == sorted(p["metadata"]["name"] for p in pods_of(running))
    for child in pods_of(back) + services_of(back):
        assert "training.kubeflow.org/restarts-before" not in child["metadata"].get(
            "annotations", {}
        )
    assert back["status"]["startTime"] == "2026-11-22T12:01:00Z"
    assert queued(back)["reason"] == "MXJobAdmitted"


def test_with_the_status_writer_an_evicted_workload_is_kept() -> None:
    """A Workload the writer tends (it carries PodsReady) survives the eviction with its
    requeueState; the writer clears its reservation, Kueue admits it again, the pods return."""
    job, _, running = admitted_run()
    job["status"] = running["status"]
    ready = (
        "PodsReady",
        "True",
        "Started",
        "All pods reached readiness and the workload is running",
    )
    evicted = observed(workloads_of(running)[0], **wl_status(
        ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
        ("Admitted", "True", "Admitted", "The workload is admitted"),
        ("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w"),
        ready, queue="cq", assign=ASSIGN,
    ))  # fmt: skip
    first = synced(kreq(job, workloads=[evicted]), later(30))
    assert [c["kind"] for c in first["children"]] == ["Workload"]
    cond = queued(first)
    assert (cond["reason"], "PodsReadyTimeout" in cond["message"]) == ("MXJobEvicted", True)
    job["status"] = first["status"]
    recorded = synced(kreq(job, workloads=[evicted]), later(31))
    assert [c["kind"] for c in recorded["children"]] == ["Workload"]
    assert queued(recorded) == cond
    cleared = observed(workloads_of(running)[0], **wl_status(
        ("QuotaReserved", "False", "Pending", "Exceeded the PodsReady timeout ns/w"),
        ("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w"),
        ("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded"),
    ))  # fmt: skip
    waiting = synced(kreq(job, workloads=[cleared]), later(32))
    assert ([c["kind"] for c in waiting["children"]], queued(waiting)) == (["Workload"], cond)
    back = synced(kreq(job, workloads=[observed(workloads_of(running)[0], **ADMITTED)]), later(40))
    assert len(pods_of(back)) == len(pods_of(running))
    assert queued(back)["reason"] == "MXJobAdmitted"


def test_a_deactivated_workload_is_kept_and_the_job_waits_for_its_reactivation() -> None:
    """Past Kueue's requeuing limit (or deactivated by hand) the Workload is inactive: the job
    stops, says so and how to go on, and keeps that Workload; active again, it is queued."""
    job, _, running = admitted_run()
    job["status"] = running["status"]
    deactivated = observed(workloads_of(running)[0], **wl_status(
        ("QuotaReserved", "False", "Pending", "The workload is deactivated"),
        ("Evicted", "True", "DeactivatedDueToRequeuingLimitExceeded",
         "The workload is deactivated due to exceeding the maximum number of re-queuing retries"),
        ("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded"),
    ))  # fmt: skip
    deactivated["spec"]["active"] = False
    name = deactivated["metadata"]["name"]
    stopped = synced(kreq(job, workloads=[deactivated]), later(30))
    assert [c["kind"] for c in stopped["children"]] == ["Workload"]
    assert "active" not in workloads_of(stopped)[0]["spec"], "Kueue's to set, never ours"
    cond = queued(stopped)
    assert cond["reason"] == "MXJobDeactivated"
    assert "DeactivatedDueToRequeuingLimitExceeded" in cond["message"]
    assert f"until its Workload {name} is active again" in cond["message"]
    assert "it is queued again" not in cond["message"]
    job["status"] = stopped["status"]
    later_on = synced(kreq(job, workloads=[deactivated]), later(300))
    assert [c["kind"] for c in later_on["children"]] == ["Workload"]
    assert queued(later_on) == cond
    # Active again: Kueue clears the eviction and the job is queued (then admitted).
    reactivated = observed(workloads_of(running)[0], **PENDING)
    waiting = synced(kreq(job, workloads=[reactivated]), later(301))
    assert queued(waiting)["reason"] == "MXJobQueued"
    back = synced(kreq(job, workloads=[observed(workloads_of(running)[0], **ADMITTED)]), later(302))
    assert len(pods_of(back)) == len(pods_of(running))


def test_a_finished_job_keeps_its_workload_until_no_pod_may_still_run() -> None:
    """The quota of the pods `cleanPodPolicy` stops is not handed to another job before they
    are gone: the Workload stays, as it is, until every pod is gone, Succeeded or Failed."""
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    done = {
        p["metadata"]["name"]: pod_status("Succeeded", 0)
        for p in pods_of(running)
        if "scheduler" in p["metadata"]["name"]
    }
    pods = [
        observed(p, **done.get(p["metadata"]["name"], pod_status("Running")))
        for p in pods_of(running)
    ]
    services = [observed(s) for s in services_of(running)]
    kept = [(admitted["metadata"]["name"], admitted["spec"])]

    def workloads(response: dict[str, Any]) -> list[tuple[str, Any]]:
        return [(w["metadata"]["name"], w["spec"]) for w in workloads_of(response)]

    deciding = synced(kreq(job, pods, services, [admitted]))
    assert state(deciding) == "Succeeded"
    assert len(pods_of(deciding)) == 5  # the deciding sync removes no pod
    assert workloads(deciding) == kept  # as it is
    job["status"] = deciding["status"]
    stopping = synced(kreq(job, pods, services, [admitted]), later(1))
    assert workloads(stopping) == kept
    still_running = [p for p in pods if p["metadata"]["name"] not in done]
    assert len(pods_of(stopping)) < len(pods), "cleanPodPolicy Running stops the running pods"
    # Being deleted and still running: they hold the quota.
    for pod in still_running:
        pod["metadata"]["deletionTimestamp"] = "2026-11-22T12:00:05Z"
    terminating = synced(kreq(job, pods, services, [admitted]), later(2))
    assert workloads(terminating) == kept
    # Gone (or all Succeeded or Failed): the Workload goes, its quota returns.
    finished = [p for p in pods if p["metadata"]["name"] in done]
    released = synced(kreq(job, finished, services, [admitted]), later(3))
    assert workloads_of(released) == []
    assert state(released) == "Succeeded"
    failed = [observed(p, **pod_status("Failed", 1)) for p in still_running]
    ended = synced(kreq(job, [*finished, *failed], services, [admitted]), later(3))
    assert workloads_of(ended) == []


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


def test_a_suspended_queued_job_releases_its_workload() -> None:
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    job["spec"]["runPolicy"] = {"suspend": True}
    response = synced(kreq(job, workloads=[admitted]), later(20))
    assert response["children"] == []
    assert state(response) == "Suspended"


def test_a_flavor_gone_from_under_a_running_job_does_not_stop_it() -> None:
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    pods, services = running_children(running)
    response = synced(kreq(job, pods, services, [admitted], rel={}), later(20))
    assert len(pods_of(response)) == 5
    assert queued(response)["reason"] == "MXJobAdmitted"
