"""MXJobs, their pods and their Services stored as training-operator v1.7 left them, for
tests/apiserver/test_migration.py: the job's status as it wrote it, the pod and Service with its
labels and its controller ownerReference."""

from typing import Any

import yaml

from localcluster.apiserver import ApiServer
from tests.support.jobs import one_worker_job
from tests.support.migration import IMAGE

NAMESPACE = "legacy"
STAMP = "2024-01-15T10:00:00Z"


def owner(job: dict[str, Any]) -> dict[str, Any]:
    """The controller ownerReference training-operator puts on each pod and Service of a job
    (its JobController.GenOwnerReference)."""
    meta = job["metadata"]
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": meta["name"],
        "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True,
    }  # fmt: skip


def labels(job: str, rtype: str, index: int) -> dict[str, str]:
    """training-operator v1.7's labels on a replica's pod and Service."""
    return {
        "training.kubeflow.org/operator-name": "mxjob-controller",
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": rtype.lower(),
        "training.kubeflow.org/replica-index": str(index),
    }


def condition(ctype: str, status: str, message: str) -> dict[str, str]:
    return {
        "type": ctype, "status": status, "reason": f"MXJob{ctype}", "message": message,
        "lastUpdateTime": STAMP, "lastTransitionTime": STAMP,
    }  # fmt: skip


def store_job(server: ApiServer, name: str, phase: str) -> dict[str, Any]:
    """A one-Worker MXJob, its pod and its Service as training-operator v1.7 left them: the
    job `Running` (its pod running) or `Succeeded` (its pod exited 0, kept: cleanPodPolicy
    None, training-operator's default)."""
    job = one_worker_job(name, IMAGE) | {"metadata": {"name": name, "namespace": NAMESPACE}}
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(job))
    stored = server.get("mxjob", name, f"-n={NAMESPACE}")
    done = phase == "Succeeded"
    conditions = [condition("Created", "True", f"MXJob {name} is created.")]
    conditions.append(condition("Running", "False" if done else "True",
                                f"MXJob {name} is running."))  # fmt: skip
    if done:
        conditions.append(
            condition("Succeeded", "True", f"MXJob {name} is successfully completed.")
        )
    worker = {"active": 0, "succeeded": 1} if done else {"active": 1}
    status = {
        "conditions": conditions, "replicaStatuses": {"Worker": worker}, "startTime": STAMP,
        "lastReconcileTime": STAMP, **({"completionTime": STAMP} if done else {}),
    }  # fmt: skip
    patch_status(server, f"mxjob/{name}", status)
    child = f"{name}-worker-0"
    meta = {"name": child, "namespace": NAMESPACE, "labels": labels(name, "Worker", 0),
            "ownerReferences": [owner(stored)]}  # fmt: skip
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"restartPolicy": "Never", "containers": [
            {"name": "mxnet", "image": IMAGE, "ports": [{"name": "mxjob-port",
                                                         "containerPort": 9091}]}
        ]},
    }  # fmt: skip
    service = {
        "apiVersion": "v1", "kind": "Service", "metadata": meta,
        "spec": {"clusterIP": "None", "selector": labels(name, "Worker", 0),
                 "ports": [{"name": "mxjob-port", "port": 9091}]},
    }  # fmt: skip
    server.kubectl("create", "-f", "-", input=yaml.safe_dump_all([pod, service]))
    patch_status(server, f"pod/{child}", {"phase": phase})
    return server.get("mxjob", name, f"-n={NAMESPACE}")


def patch_status(server: ApiServer, target: str, status: dict[str, Any]) -> None:
    server.kubectl(
        "patch", target, f"-n={NAMESPACE}", "--subresource=status", "--type=merge",
        "-p", yaml.safe_dump({"status": status}),
    )  # fmt: skip
