"""The Workload-status writer's decisions (app/controllers/kueuestatus/changes.py), as Kueue's jobframework
makes them: PodsReady from the job's pods, and an evicted Workload's reservation cleared once
its job has stopped (docs/kueue.md)."""

from typing import Any

import pytest

from app.controllers.kueuestatus import changes
from app.controllers.kueuestatus.watch import Cache, job_key, owned_by_mxjob

NOW = "2026-11-27T09:00:00Z"
THEN = "2026-11-27T08:00:00Z"
RESERVED = ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq")
ADMITTED = ("Admitted", "True", "Admitted", "The workload is admitted")
TIMED_OUT = ("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/mxjob-j")
PREEMPTED = ("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: u1)")
LIMIT_EXCEEDED = (
    "Evicted",
    "True",
    "DeactivatedDueToRequeuingLimitExceeded",
    "The workload is deactivated due to exceeding the maximum number of re-queuing retries",
)
WAITING = ("PodsReady", "False", "WaitForStart", changes.NOT_READY)
STARTED = ("PodsReady", "True", "Started", changes.READY)
RECOVERING = ("PodsReady", "False", "WaitForRecovery", changes.RECOVERING)
LABELS = {"training.kubeflow.org/operator-name": "mxjob-controller",
          "training.kubeflow.org/job-name": "j"}  # fmt: skip


def cond(ctype: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": THEN}  # fmt: skip


def workload(*conds: tuple[str, str, str, str], count: int = 2) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [cond(*c) for c in conds]}
    if any(c[:2] == ("QuotaReserved", "True") for c in conds):
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": []}
    return {
        "metadata": {"name": "mxjob-j", "namespace": "ns", "generation": 1,
                     "resourceVersion": "42", "labels": LABELS,
                     "ownerReferences": [{"kind": "MXJob", "name": "j", "controller": True}]},
        "spec": {"podSets": [{"name": "worker", "count": count}]},
        "status": status,
    }  # fmt: skip


def pod(phase: str, leaving: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "labels": LABELS}
    if leaving:
        meta["deletionTimestamp"] = NOW
    return {"metadata": meta, "status": {"phase": phase}}


def summary(patch: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a patch says: each condition's (status, reason, moved?) and the admission."""
    if patch is None:
        return None
    out: dict[str, Any] = {
        c["type"]: (c["status"], c["reason"], c["lastTransitionTime"] == NOW)
        for c in patch["status"]["conditions"]
    }
    if "admission" in patch["status"]:
        out["admission"] = patch["status"]["admission"]
    assert patch["metadata"] == {"resourceVersion": "42"}
    return out


RUN = [pod("Running"), pod("Running")]


# The reservation and admission a patch leaves as they were (not their time), and the two it
# clears when the Workload is evicted.
KEPT = {"QuotaReserved": ("True", "QuotaReserved", False), "Admitted": ("True", "Admitted", False)}
CLEARED = {
    "QuotaReserved": ("False", "Pending", True),
    "Admitted": ("False", "NoReservation", True),
}
# A Workload and its pods, and the patch's conditions in summary (None: no patch).
STATUS_PATCHES = [
    pytest.param(workload(), [], {"PodsReady": ("False", "WaitForStart", True)},
                 id="pending-gets-wait-for-start"),
    pytest.param(workload(WAITING), [], None, id="pending-already-says-so"),
    pytest.param(workload(RESERVED, ADMITTED, WAITING), [pod("Running"), pod("Pending")],
                 None, id="admitted-one-pod-of-two-runs"),
    pytest.param(workload(RESERVED, ADMITTED, WAITING), RUN,
                 KEPT | {"PodsReady": ("True", "Started", True)}, id="admitted-all-run"),
    pytest.param(workload(RESERVED, ADMITTED, WAITING), [pod("Running"), pod("Running", True)],
                 None, id="a-pod-being-deleted-is-not-ready"),
    pytest.param(workload(RESERVED, ADMITTED, WAITING), [pod("Succeeded"), pod("Running")],
                 KEPT | {"PodsReady": ("True", "Started", True)}, id="succeeded-counts-as-ready"),
    pytest.param(workload(RESERVED, ADMITTED, STARTED), [pod("Running"), pod("Failed")],
                 KEPT | {"PodsReady": ("False", "WaitForRecovery", True)}, id="a-pod-lost"),
    pytest.param(workload(RESERVED, ADMITTED, RECOVERING), RUN,
                 KEPT | {"PodsReady": ("True", "Recovered", True)}, id="recovered"),
    pytest.param(workload(RESERVED, ADMITTED, TIMED_OUT, WAITING), [pod("Pending")], None,
                 id="evicted-pods-still-there-reservation-kept"),
    pytest.param(workload(RESERVED, ADMITTED, TIMED_OUT, WAITING), [pod("Pending", True)],
                 None, id="evicted-pod-being-deleted-reservation-kept"),
    pytest.param(workload(RESERVED, ADMITTED, TIMED_OUT, WAITING), [pod("Failed")],
                 CLEARED | {"Evicted": ("True", "PodsReadyTimeout", False),
                            "PodsReady": ("False", "WaitForStart", False),
                            "Requeued": ("False", "PodsReadyTimeout", True), "admission": None},
                 id="evicted-by-timeout-stopped-requeued-after-backoff"),
    pytest.param(workload(RESERVED, ADMITTED, PREEMPTED, STARTED), [],
                 CLEARED | {"Evicted": ("True", "Preempted", False),
                            "PodsReady": ("False", "WaitForStart", True),
                            "Requeued": ("True", "Preempted", True), "admission": None},
                 id="preempted-stopped-requeued-at-once"),
    pytest.param(workload(RESERVED, ADMITTED, LIMIT_EXCEEDED, WAITING), [],
                 CLEARED | {"Evicted": ("True", "DeactivatedDueToRequeuingLimitExceeded", False),
                            "PodsReady": ("False", "WaitForStart", False),
                            "Requeued": ("False", "Deactivated", True), "admission": None},
                 id="deactivated-stopped-requeued-once-reactivated"),
    pytest.param(workload(("QuotaReserved", "False", "Pending", "m"), TIMED_OUT, WAITING), [],
                 None, id="already-cleared"),
]  # fmt: skip


@pytest.mark.parametrize(("wl", "pods", "expected"), STATUS_PATCHES)
def test_status_patch(
    wl: dict[str, Any], pods: list[dict[str, Any]], expected: dict[str, Any] | None
) -> None:
    assert summary(changes.status_patch(wl, pods, NOW)) == expected


def test_a_cleared_condition_keeps_kueues_message_and_generation() -> None:
    patch = changes.status_patch(workload(RESERVED, ADMITTED, TIMED_OUT), [], NOW)
    assert patch is not None
    reserved = changes.find(patch["status"]["conditions"], "QuotaReserved")
    assert reserved == {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                        "message": TIMED_OUT[3], "lastTransitionTime": NOW,
                        "observedGeneration": 1}  # fmt: skip


def test_the_cache_follows_a_jobs_workload_and_pods() -> None:
    cache = Cache()
    wl, running = workload(), pod("Running")
    assert cache.update("Workload", "ADDED", wl) == {("ns", "j")}
    assert cache.update("Pod", "ADDED", running) == {("ns", "j")}
    assert cache.job(("ns", "j")) == (wl, [running])
    cache.update("Pod", "DELETED", running)
    assert cache.job(("ns", "j")) == (wl, [])
    # A fresh list forgets what it does not hold, and names the jobs to look at again.
    assert cache.replace("Workload", []) == {("ns", "j")}
    assert cache.job(("ns", "j")) == (None, [])
    assert cache.update("Pod", "ADDED", {"metadata": {"name": "x", "namespace": "ns"}}) == set()


@pytest.mark.parametrize(
    ("refs", "owned"),
    [
        pytest.param([{"kind": "MXJob", "name": "j", "controller": True}], True, id="mxjob"),
        pytest.param([{"kind": "Job", "name": "j", "controller": True}], False, id="batch-job"),
        pytest.param([{"kind": "MXJob", "name": "j"}], False, id="not-controller"),
        pytest.param([], False, id="no-owner"),
    ],
)
def test_only_workloads_of_mxjobs_are_written(refs: list[dict[str, Any]], owned: bool) -> None:
    wl = workload()
    wl["metadata"]["ownerReferences"] = refs
    assert owned_by_mxjob(wl) is owned
    assert job_key(wl) == ("ns", "j")
