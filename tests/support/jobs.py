"""Builders of MXJobs, sync requests and observed children for the tests."""

import copy
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support.hooked import sync

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
IMAGE = "mxjob/mxnet:1.9.1"
UID = "6a1c0e4e-3f5b-4a55-9d7e-0d2f1b6c9a10"


def container(**extra: Any) -> dict[str, Any]:
    return {"name": "mxnet", "image": IMAGE} | extra


def replica(replicas: int = 1, policy: str | None = None, **template_extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "template": {"spec": {"containers": [container()]}} | template_extra,
    }
    if policy:
        spec["restartPolicy"] = policy
    return spec


def train_spec(servers: int = 2, workers: int = 2, policy: str = "Never") -> dict[str, Any]:
    specs = {"Scheduler": replica(1, policy), "Worker": replica(workers, policy)}
    if servers:
        specs["Server"] = replica(servers, policy)
    return {"jobMode": "MXTrain", "mxReplicaSpecs": specs}


def mxjob(spec: dict[str, Any], name: str = "mnist", status: Any = None) -> dict[str, Any]:
    job: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name, "namespace": "default", "uid": UID, "generation": 1},
        "spec": spec,
    }
    if status is not None:
        job["status"] = status
    return job


def envelope(parent: dict[str, Any], children: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A sync request as Metacontroller v4 sends it, around children keyed by type."""
    return {
        "controller": {
            "apiVersion": "metacontroller.k8s.io/v1alpha1",
            "kind": "CompositeController",
            "metadata": {"name": "mxjob-controller"},
        },
        "parent": parent,
        "children": children,
        "related": {},
        "finalizing": False,
    }


def request(
    parent: dict[str, Any],
    pods: Sequence[dict[str, Any]] = (),
    services: Sequence[dict[str, Any]] = (),
    others: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """A sync request with hook version v2 keys (`namespace/name`). `others` maps further
    declared child types (e.g. a PodGroup type) to their observed children."""
    ns = parent["metadata"].get("namespace", "default")
    by_type = {"Pod.v1": pods, "Service.v1": services} | (others or {})
    return envelope(
        parent,
        {
            kind: {f"{ns}/{c['metadata']['name']}": c for c in children}
            for kind, children in by_type.items()
        },
    )


def observed(child: dict[str, Any], **status: Any) -> dict[str, Any]:
    """A desired child as the API server would show it once created."""
    out = copy.deepcopy(child)
    meta = out["metadata"]
    meta["labels"] = meta.get("labels", {}) | {"controller-uid": UID}
    meta["uid"] = f"uid-{meta['name']}"
    meta["resourceVersion"] = "1000"
    meta["ownerReferences"] = [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "MXJob",
            "name": meta.get("labels", {}).get("training.kubeflow.org/job-name", meta["name"]),
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    if status:
        out["status"] = status
    return out


def pod_status(
    phase: str, exit_code: int | None = None, restarts: int = 0, **extra: Any
) -> dict[str, Any]:
    """Pod status as the kubelet reports it for a pod with one `mxnet` container."""
    state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
    if phase == "Running":
        state = {"running": {"startedAt": "2026-11-22T11:59:00Z"}}
    if exit_code is not None:
        state = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Completed" if exit_code == 0 else "Error",
            }
        }
    status = {
        "phase": phase,
        "containerStatuses": [
            {
                "name": "mxnet",
                "ready": phase == "Running",
                "restartCount": restarts,
                "image": IMAGE,
                "state": state,
            }
        ],
    }
    return status | extra


def pods_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in response["children"] if c["kind"] == "Pod"]


def services_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in response["children"] if c["kind"] == "Service"]


def running_children(
    response: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An answer's pods observed Running, and its Services observed: the job as it runs."""
    return (
        [observed(p, **pod_status("Running")) for p in pods_of(response)],
        [observed(s) for s in services_of(response)],
    )


def condition(ctype: str, status: str, reason: str, at: str, message: str) -> dict[str, str]:
    """A job's condition as the hook writes it, both of its times `at`."""
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": at,
        "lastTransitionTime": at,
    }


def names(children: list[dict[str, Any]]) -> list[str]:
    return [c["metadata"]["name"] for c in children]


def step(
    parent: dict[str, Any],
    previous: dict[str, Any],
    phases: dict[str, dict[str, Any]],
    now: datetime = NOW,
    child_types: tuple[str, ...] = (),
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Observe the previous answer's children with the given pod statuses and sync again.

    Returns (request, response). Pods missing from `phases` are observed Pending."""
    pods = [
        observed(p, **phases.get(p["metadata"]["name"], pod_status("Pending")))
        for p in pods_of(previous)
    ]
    services = [observed(s) for s in services_of(previous)]
    others: dict[str, list[dict[str, Any]]] = {kind: [] for kind in child_types}
    for child in previous["children"]:
        if child["kind"] not in ("Pod", "Service"):
            others[f"{child['kind']}.{child['apiVersion']}"].append(observed(child))
    parent = parent | {"status": previous["status"]}
    req = request(parent, pods, services, others)
    return req, sync(copy.deepcopy(req), now)


def later(seconds: int) -> datetime:
    return NOW + timedelta(seconds=seconds)


def dig(obj: Any, *keys: str) -> Any:
    """Follow keys through nested dicts; None where any step is missing or not a dict."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def created(req: dict[str, Any], now: datetime = NOW) -> dict[str, Any]:
    """The answer that creates a new job's children (to the request `after_first` gives)."""
    return sync(after_first(req, now), now)


def after_first(req: dict[str, Any], now: datetime = NOW) -> dict[str, Any]:
    """The sync request that a new job's first answer brings: that answer is the job's status
    alone (staged), and Metacontroller's write of it syncs the job again, still childless."""
    followed = copy.deepcopy(req)
    followed["parent"]["status"] = sync(copy.deepcopy(req), now)["status"]
    return followed


def one_worker_job(name: str, image: str) -> dict[str, Any]:
    """A one-Worker MXJob, as a user of training-operator would submit it."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name},
        "spec": {
            "jobMode": "MXTrain",
            "mxReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "mxnet", "image": image, "args": ["--kv-store", "local"]}
                            ]
                        }
                    },
                }
            },
        },
    }
