"""Kueue's names as the hook uses them: its API, labels and kinds, the reasons of the Queued
condition, and the related objects the customize hook hands over."""

from collections.abc import Mapping
from typing import Any

from app.core.model.kinds import child_type

GROUP = "kueue.x-k8s.io"


API_VERSION = f"{GROUP}/v1beta2"  # Kueue v0.17's storage version


WORKLOAD_KIND = "Workload"


WORKLOAD_TYPE = child_type(WORKLOAD_KIND, API_VERSION)


QUEUE_LABEL = f"{GROUP}/queue-name"


PRIORITY_CLASS_LABEL = f"{GROUP}/priority-class"


FLAVOR_KIND = "ResourceFlavor"


WORKLOAD_PRIORITY_CLASS_KIND = "WorkloadPriorityClass"


POD_PRIORITY_CLASS_KIND = "PriorityClass"


POD_PRIORITY_GROUP = "scheduling.k8s.io"


LOCAL_QUEUE_KIND = "LocalQueue"


# The LocalQueue a job without the label is queued in, where it exists (Kueue's
# LocalQueueDefaulting).
DEFAULT_QUEUE = "default"


# A namespace with this label set to "true" holds its MXJobs that name no queue (Kueue's
# manageJobsWithoutQueueName with managedJobsNamespaceSelector; docs/kueue.md).
MANAGED_NAMESPACE_LABEL = "kueue.mxjob-controller.kubeflow.org/manage-jobs-without-queue-name"


# Set on the Workload by Kueue's job integrations, and for MXJobs by the Workload-status writer
# (app/controllers/kueuestatus), never by Kueue's own controllers.
PODS_READY = "PodsReady"


# The condition Kueue sets on the job: True while it waits for its Workload to be admitted
# (docs/kueue.md); the reasons below are its.
QUEUED = "Queued"
REASON_QUEUED = "MXJobQueued"


REASON_EVICTED = "MXJobEvicted"
REASON_DEACTIVATED = "MXJobDeactivated"


REASON_ADMITTED = "MXJobAdmitted"


REASON_UNQUEUED = "MXJobUnqueued"


REASON_REQUEUED = "MXJobRequeued"


REASON_NO_QUEUE = "MXJobNoQueue"


def related_objects(related: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """The related objects of one kind, by name (the map's keys differ between hook
    versions, so names come from metadata)."""
    out: dict[str, dict[str, Any]] = {}
    for group in related.values():
        for obj in group.values() if isinstance(group, dict) else ():
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            if obj.get("kind") == kind and isinstance(meta, dict):
                name = meta.get("name")
                if isinstance(name, str):
                    out[name] = obj
    return out


def strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
