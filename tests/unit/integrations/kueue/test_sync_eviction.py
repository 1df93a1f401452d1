"""Kueue's contribution to a sync when the Workload is taken back: eviction stops the job and requeues
it, a deactivated Workload is kept, a finished or suspended job releases its Workload only once
no pod may still run (docs/kueue.md)."""

from typing import Any

from tests.support.jobs import (
    later,
    observed,
    pod_status,
    pods_of,
    running_children,
    services_of,
)
from tests.support.kueue_jobs import (
    ADMITTED,
    ASSIGN,
    EVICTED,
    PENDING,
    admitted_run,
    kreq,
    queued,
    state,
    synced,
    wl_status,
    workloads_of,
)


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


def test_a_suspended_queued_job_releases_its_workload() -> None:
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    job["spec"]["runPolicy"] = {"suspend": True}
    response = synced(kreq(job, workloads=[admitted]), later(20))
    assert response["children"] == []
    assert state(response) == "Suspended"
