"""A bench run's jobs in a namespace of their own: made fresh, its pods marked as their kubelets
would report them (no process runs), and cleared by hand afterwards."""

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from localcluster import kubelet as podstatus
from localcluster.rest import Rest as Kube
from localcluster.rest import path

MARKERS = 16  # threads patching pod status, as many kubelets would
TYPE_LABEL = "training.kubeflow.org/replica-type"


def mark_pods(kube: Kube, namespace: str, exited: bool = False) -> None:
    """Every pod in `namespace` Running, as its kubelet would report it; with `exited`, the
    Schedulers' pods Succeeded instead (their process exited 0)."""
    pods, _ = kube.list(path("pods", namespace))
    stamp = podstatus.now_stamp()

    def mark(pod: dict[str, Any]) -> None:
        image = pod["spec"]["containers"][0]["image"]
        url = path("pods", namespace, pod["metadata"]["name"]) + "/status"
        if exited:
            status = podstatus.terminated(stamp, stamp, image, 0)
        else:
            status = podstatus.running(stamp, image)
        kube.merge_patch(url, {"status": status})

    # The Scheduler decides Running and Succeeded (docs/behaviour.md): marked last, after
    # every other pod, so that the time to Running counts from the moment every pod runs.
    schedulers = [p for p in pods if p["metadata"]["labels"].get(TYPE_LABEL) == "scheduler"]
    with ThreadPoolExecutor(MARKERS) as pool:
        if not exited:
            list(pool.map(mark, [p for p in pods if p not in schedulers]))
        list(pool.map(mark, schedulers))


def new_namespace(kube: Kube) -> str:
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    kube.create(path("namespaces"), {"metadata": {"name": namespace}})
    return namespace


def cleanup(kube: Kube, *namespaces: str) -> None:
    """No controller-manager runs here: delete the jobs and their children by hand (ours with
    Metacontroller stopped, so that nothing recreates them)."""
    for namespace in namespaces:
        for resource in ("mxjobs", "pods", "services", "configmaps"):
            kube.delete(path(resource, namespace))
