"""Queueing under Kueue: the Workload child, the job held until admitted, the admission's
flavors in the pods, eviction, release on finish, label edits (docs/kueue.md)."""

import copy
from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from app.core.reconcile import sync
from app.core.spec import MXJobSpec
from app.integrations import kueue
from app.service import admission, web
from app.service.settings import Settings
from tests.support.jobs import (
    NOW,
    after_first,
    created,
    later,
    mxjob,
    observed,
    pod_status,
    pods_of,
    request,
    services_of,
    train_spec,
)
from tests.support.jobs import (
    replica as replica_spec,
)
from tests.support.servers import asgi_client
from tests.support.simcluster import SimCluster

WL = kueue.WORKLOAD_TYPE
QUEUE = {kueue.QUEUE_LABEL: "team-a"}
TOLERATION = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}


def labelled(
    spec: dict[str, Any], labels: dict[str, str] | None = None, **kw: Any
) -> dict[str, Any]:
    job = mxjob(spec, **kw)
    job["metadata"]["labels"] = dict(QUEUE if labels is None else labels)
    return job


def flavor(name: str, labels: dict[str, str], tolerations: Sequence[Any] = ()) -> dict[str, Any]:
    return {
        "apiVersion": kueue.API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": labels, "tolerations": list(tolerations)},
    }


def priority_class(name: str, value: int, kind: str = "PriorityClass") -> dict[str, Any]:
    api = "scheduling.k8s.io/v1" if kind == "PriorityClass" else kueue.API_VERSION
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, "value": value}


FLAVORS = [flavor("on-a", {"pool": "a"}, [TOLERATION]), flavor("on-b", {"pool": "b"})]


def related(*objs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for obj in objs:
        out.setdefault(f"{obj['kind']}.{obj['apiVersion']}", {})[obj["metadata"]["name"]] = obj
    return out


def kreq(
    parent: dict[str, Any],
    pods: Sequence[Any] = (),
    services: Sequence[Any] = (),
    workloads: Sequence[Any] = (),
    rel: dict[str, Any] | None = None,
) -> dict[str, Any]:
    req = request(parent, list(pods), list(services), {WL: list(workloads)})
    req["related"] = related(*FLAVORS) if rel is None else rel
    return req


def wl_status(
    *conds: tuple[str, str, str, str], queue: str = "", assign: Any = None
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [
            {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": "x"}
            for t, s, r, m in conds
        ]
    }
    if queue:
        status["admission"] = {"clusterQueue": queue, "podSetAssignments": assign or []}
    return status


PENDING = wl_status(
    ("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set worker: too big")
)
ASSIGN = [
    {"name": "scheduler", "flavors": {"cpu": "on-b"}, "count": 1},
    {"name": "server", "flavors": {"cpu": "on-b"}, "count": 2},
    {"name": "worker", "flavors": {"cpu": "on-a", "memory": "on-a"}, "count": 2},
]
ADMITTED = wl_status(
    ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
    ("Admitted", "True", "Admitted", "The workload is admitted"),
    queue="cq",
    assign=ASSIGN,
)
EVICTED = wl_status(
    ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
    ("Admitted", "True", "Admitted", "The workload is admitted"),
    ("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: u1)"),
    queue="cq",
    assign=ASSIGN,
)


def workloads_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in response["children"] if c["kind"] == "Workload"]


def queued(response: dict[str, Any]) -> dict[str, Any]:
    cond: dict[str, Any] | None = next(
        (c for c in response["status"]["conditions"] if c["type"] == "Queued"), None
    )
    assert cond is not None, "no Queued condition"
    return cond


def state(response: dict[str, Any]) -> str:
    """What `kubectl get mxj` shows: the type of the last condition."""
    return str(response["status"]["conditions"][-1]["type"])


def synced(req: dict[str, Any], now: Any = NOW) -> dict[str, Any]:
    """Sync (a new job past its first answer, the status alone), and check the status is a
    fixed point: fed back, it comes back the same."""
    req = after_first(req, now) if not req["parent"].get("status") else req
    response = sync(copy.deepcopy(req), now)
    again = copy.deepcopy(req)
    again["parent"]["status"] = response["status"]
    assert sync(again, later(7))["status"] == response["status"]
    return response


def admitted_run() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A queued job: created, then admitted (returns the job, the workload, the answer)."""
    job = labelled(train_spec())
    first = synced(kreq(job))
    (wl,) = workloads_of(first)
    job["status"] = first["status"]
    admitted = observed(wl, **ADMITTED)
    return job, admitted, synced(kreq(job, workloads=[admitted]), later(10))


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
    pods = [observed(p, **pod_status("Running")) for p in pods_of(running)]
    services = [observed(s) for s in services_of(running)]
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


def test_a_finished_job_releases_its_workload_at_once() -> None:
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
    response = synced(kreq(job, pods, [observed(s) for s in services_of(running)], [admitted]))
    assert state(response) == "Succeeded"
    assert workloads_of(response) == []
    assert len(pods_of(response)) == 5  # the deciding sync removes no pod


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


@pytest.mark.parametrize(
    ("labels", "policy", "template_class", "expected"),
    [
        pytest.param({}, None, None, None, id="none"),
        pytest.param(
            {kueue.PRIORITY_CLASS_LABEL: "urgent"},
            "high",
            None,
            kueue.Priority("WorkloadPriorityClass", "kueue.x-k8s.io", "urgent", 5000),
            id="workload-priority-class-label-first",
        ),
        pytest.param(
            {},
            None,
            "high",
            kueue.Priority("PriorityClass", "scheduling.k8s.io", "high", 1000),
            id="pod-template",
        ),
        pytest.param(
            {},
            "missing",
            None,
            kueue.Priority("PriorityClass", "scheduling.k8s.io", "missing", None),
            id="unknown-class",
        ),
    ],
)
def test_priority(
    labels: dict[str, str],
    policy: str | None,
    template_class: str | None,
    expected: kueue.Priority | None,
) -> None:
    spec = train_spec()
    if policy:
        spec["runPolicy"] = {"schedulingPolicy": {"priorityClass": policy}}
    if template_class:
        spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = template_class
    rel = related(
        priority_class("high", 1000),
        priority_class("urgent", 5000, kind="WorkloadPriorityClass"),
    )
    assert kueue.priority(labels, MXJobSpec.model_validate(spec), rel) == expected


def test_without_the_label_or_the_child_type_nothing_changes() -> None:
    plain = created(request(mxjob(train_spec())))
    # Declared, no label.
    assert created(kreq(mxjob(train_spec()))) == plain
    # Labelled, not declared.
    assert created(request(labelled(train_spec()))) == plain


def test_a_label_added_to_a_running_job_changes_nothing() -> None:
    first = created(request(mxjob(train_spec())))
    job = mxjob(train_spec(), status=first["status"])
    pods = [observed(p, **pod_status("Running")) for p in pods_of(first)]
    services = [observed(s) for s in services_of(first)]
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
    pods = [observed(p, **pod_status("Running")) for p in pods_of(running)]
    services = [observed(s) for s in services_of(running)]
    response = synced(kreq(job, pods, services, [admitted]), later(20))
    names = [w["metadata"]["name"] for w in workloads_of(response)]
    assert names == [admitted["metadata"]["name"]]
    assert sorted(p["metadata"]["name"] for p in pods_of(response)) == sorted(
        p["metadata"]["name"] for p in pods
    )


def test_a_workload_deleted_by_hand_is_recreated_and_running_pods_stay() -> None:
    job, _, running = admitted_run()
    job["status"] = running["status"]
    pods = [observed(p, **pod_status("Running")) for p in pods_of(running)]
    services = [observed(s) for s in services_of(running)]
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


@pytest.mark.parametrize(
    ("status", "admitted", "evicted", "message"),
    [
        pytest.param({}, False, False, "", id="no-status"),
        pytest.param({"conditions": "x", "admission": 3}, False, False, "", id="malformed"),
        pytest.param(PENDING, False, False, PENDING["conditions"][0]["message"], id="pending"),
        pytest.param(ADMITTED, True, False, "Quota reserved in ClusterQueue cq", id="admitted"),
        pytest.param(EVICTED, False, True, EVICTED["conditions"][2]["message"], id="evicted"),
        pytest.param(
            wl_status(("QuotaReserved", "True", "QuotaReserved", "reserved"), queue="cq"),
            False,
            False,
            "waiting for admission checks",
            id="quota-reserved-checks-pending",
        ),
    ],
)
def test_admission(status: dict[str, Any], admitted: bool, evicted: bool, message: str) -> None:
    state_ = kueue.admission({"status": status})
    assert (state_.admitted, state_.evicted, state_.message) == (admitted, evicted, message)


def test_admission_reads_flavors_and_pod_set_updates() -> None:
    status = copy.deepcopy(ADMITTED)
    status["admissionChecks"] = [
        {
            "name": "check",
            "state": "Ready",
            "podSetUpdates": [
                {"name": "worker", "nodeSelector": {"zone": "z1"}, "labels": {"l": "v"}}
            ],
        }
    ]
    state_ = kueue.admission({"status": status})
    assert state_.flavors == {"scheduler": ["on-b"], "server": ["on-b"], "worker": ["on-a"]}
    assert state_.cluster_queue == "cq"
    spec = MXJobSpec.model_validate(train_spec())
    infos = kueue.pod_set_infos(state_, related(*FLAVORS), spec)
    assert not isinstance(infos, str)
    worker = next(info for t, info in infos.items() if t.lowered == "worker")
    assert worker == kueue.PodSetInfo({"pool": "a", "zone": "z1"}, [TOLERATION], {"l": "v"}, {})


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        pytest.param(
            {"controller": {}, "parent": {"metadata": {"name": "j"}}},
            {"relatedResources": [dict(r) for r in kueue.RELATED_RESOURCES]},
            id="no-namespace",
        ),
        pytest.param(
            {"controller": {}, "parent": {"metadata": {"name": "j", "namespace": "team"}}},
            {
                "relatedResources": [
                    *(dict(r) for r in kueue.RELATED_RESOURCES),
                    {"apiVersion": "v1", "resource": "namespaces", "names": ["team"]},
                    {
                        "apiVersion": "kueue.x-k8s.io/v1beta2",
                        "resource": "localqueues",
                        "namespace": "team",
                        "names": ["default"],
                    },
                ]
            },
            id="namespaced-job",
        ),
        pytest.param({"controller": {}}, None, id="no-parent"),
        pytest.param([], None, id="not-an-object"),
        pytest.param({"parent": "x"}, None, id="parent-not-an-object"),
    ],
)
def test_customize(body: Any, answer: dict[str, Any] | None) -> None:
    assert kueue.customize(body) == answer


CUSTOMIZE = orjson.dumps({"controller": {}, "parent": mxjob(train_spec())})
SECRET = "kueue-test-token"


@pytest.mark.parametrize(
    ("settings", "body", "headers", "status"),
    [
        pytest.param(Settings(), CUSTOMIZE, {}, 200, id="answered"),
        pytest.param(Settings(), b"not json", {}, 422, id="not-json"),
        pytest.param(Settings(), b"[]", {}, 422, id="not-an-object"),
        pytest.param(Settings(), b'{"parent": 1}', {}, 422, id="no-parent"),
        pytest.param(Settings(auth_token=SECRET), CUSTOMIZE, {}, 401, id="no-token"),
        pytest.param(
            Settings(auth_token=SECRET),
            CUSTOMIZE,
            {"Authorization": f"Bearer {SECRET}"},
            200,
            id="token",
        ),
        pytest.param(
            Settings(max_body_bytes=64 * 1024 * 1024),
            CUSTOMIZE,
            {"Content-Length": str(10**12)},
            413,
            id="too-large",
        ),
    ],
)
def test_the_customize_endpoint(
    settings: Settings, body: bytes, headers: dict[str, str], status: int
) -> None:
    """POST /customize is guarded and read like /sync: a 4xx for what is not a request."""
    with asgi_client(web.create_app(settings)) as client:
        reply = client.post("/customize", content=body, headers=headers)
    assert reply.status_code == status, reply.text
    if status == 200:
        rules = [*(dict(r) for r in kueue.RELATED_RESOURCES), *kueue.namespace_rules("default")]
        assert reply.json() == {"relatedResources": rules}
    else:
        assert reply.json()["detail"]


def test_a_large_customize_request_is_answered() -> None:
    """A job whose spec is larger than what is answered on the event loop."""
    spec = train_spec(workers=2)
    spec["mxReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "annotations": {f"a{i}": "x" * 100 for i in range(1000)}
    }
    body = orjson.dumps({"controller": {}, "parent": mxjob(spec)})
    assert len(body) > admission.INLINE_BODY
    with asgi_client(web.create_app(Settings())) as client:
        reply = client.post("/customize", content=body)
    assert reply.status_code == 200


@pytest.mark.parametrize("stale", [False, True], ids=["fresh", "stale-parent"])
def test_a_whole_life_preempted_and_requeued(stale: bool) -> None:
    """Queued, admitted, running, preempted, requeued and admitted again, to Succeeded, with
    every sync also sent on the parent as it was one status write ago (`stale`)."""
    parent = labelled({"jobMode": "MXTrain", "mxReplicaSpecs": {"Worker": replica_spec()}})
    sim = SimCluster(parent, stale=stale, child_types=("Pod.v1", "Service.v1", WL))
    sim.related = related(*FLAVORS)

    def kueue_says(status: dict[str, Any]) -> None:
        (workload,) = sim.children[WL].values()
        workload["status"] = copy.deepcopy(status)

    assign = [{"name": "worker", "flavors": {"cpu": "on-a"}, "count": 1}]
    admitted = wl_status(
        ("QuotaReserved", "True", "QuotaReserved", "reserved"),
        ("Admitted", "True", "Admitted", "admitted"),
        queue="cq",
        assign=assign,
    )
    evicted = copy.deepcopy(admitted)
    evicted["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "preempted"}
    )
    sim.sync()
    assert sim.names() == []
    assert sim.true_conditions() == {"Created": "MXJobCreated", "Queued": "MXJobQueued"}
    (name,) = sim.children[WL]
    kueue_says(admitted)
    sim.sync(1)
    sim.run()
    sim.sync(1)
    assert sim.true_conditions() == {"Created": "MXJobCreated", "Running": "MXJobRunning"}
    assert sim.pods()["mnist-worker-0"]["spec"]["nodeSelector"] == {"pool": "a"}
    kueue_says(evicted)
    for _ in range(3):
        sim.sync(1)
        assert sim.true_conditions() == {"Created": "MXJobCreated", "Queued": "MXJobEvicted"}
        assert sim.names() == []
    # The evicted Workload went once the status recorded it; a new one waits, pending.
    assert f"{WL}/{name}" in sim.deleted
    assert sim.children[WL][name].get("status") is None
    kueue_says(admitted)
    sim.sync(1)
    sim.run()
    sim.sync(1)
    assert sim.names() == ["mnist-worker-0"]
    sim.exit("mnist-worker-0", 0)
    sim.sync(1)
    sim.sync(1)
    assert sim.true_conditions()["Succeeded"] == "MXJobSucceeded"
    assert sim.names(WL) == []
    assert "Restarting" not in {c["type"] for c in sim.answer["status"]["conditions"]}


def test_a_flavor_gone_from_under_a_running_job_does_not_stop_it() -> None:
    job, admitted, running = admitted_run()
    job["status"] = running["status"]
    pods = [observed(p, **pod_status("Running")) for p in pods_of(running)]
    services = [observed(s) for s in services_of(running)]
    response = synced(kreq(job, pods, services, [admitted], rel={}), later(20))
    assert len(pods_of(response)) == 5
    assert queued(response)["reason"] == "MXJobAdmitted"
