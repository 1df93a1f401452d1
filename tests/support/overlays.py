"""The shipped overlays: the namespace each installs into, the child resource it adds, the
image every overlay pins and the hook's labels; each overlay's hook objects built once."""

import functools
from typing import Any

from tests.support.kustomize import hook_objects

# Where the release workflow publishes the image; every overlay pins it at app.__version__.
IMAGE = "ghcr.io/mxjob-controller/mxjob-controller"
HOOK_LABELS = {
    "app.kubernetes.io/name": "mxjob-controller",
    "app.kubernetes.io/component": "sync-hook",
}
VOLCANO = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "resource": "podgroups",
    "updateStrategy": {"method": "InPlace"},
}
SCHEDULER_PLUGINS = {
    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
    "resource": "podgroups",
    "updateStrategy": {"method": "InPlace"},
}
KUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "resource": "workloads",
    "updateStrategy": {"method": "OnDelete"},
}
# overlay: (namespace, creates the namespace, child resource it adds: a PodGroup, a Workload)
LAYOUT = {
    "standalone": ("mxjob-system", True, None),
    "kubeflow": ("kubeflow", False, None),
    "volcano": ("mxjob-system", True, VOLCANO),
    "scheduler-plugins": ("mxjob-system", True, SCHEDULER_PLUGINS),
    "with-metacontroller": ("mxjob-system", True, None),
    "kueue": ("mxjob-system", True, KUEUE),
}


@functools.cache
def build(overlay: str) -> tuple[dict[str, Any], ...]:
    """The hook's objects of `overlay` (`kubectl kustomize`), built once per session."""
    return hook_objects(overlay)


def the(overlay: str, kind: str) -> dict[str, Any]:
    """The overlay's one object of `kind` that is the hook's (not the Workload-status
    writer's, which the kueue overlay adds)."""
    (found,) = (
        doc
        for doc in build(overlay)
        if doc["kind"] == kind
        and doc["metadata"].get("labels", {}).get("app.kubernetes.io/component") != "kueue-status"
    )
    return found
