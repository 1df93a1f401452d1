"""Builders of Kueue's side of a sync for the tests: a queued job, its ResourceFlavors and priority
classes, a Workload's status as Kueue writes it, and a sync checked to be a fixed point."""

import copy
from collections.abc import Sequence
from typing import Any

from app.integrations import kueue
from tests.support.hooked import sync
from tests.support.jobs import (
    NOW,
    after_first,
    later,
    mxjob,
    observed,
    request,
    train_spec,
)

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


def local_queue(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": kueue.API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": "cq"},
    }


def namespace(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "default", "labels": labels},
    }


HOLD = {kueue.MANAGED_NAMESPACE_LABEL: "true"}
