"""Names and labels of an MXJob's children."""

from enum import StrEnum
from typing import Any

from app.core.model.spec import ReplicaType

MAX_NAME = 63
# The container that runs MXNet: it gets the mxjob-port and decides the exit code.
MAIN_CONTAINER = "mxnet"
GROUP = "training.kubeflow.org"
OPERATOR_NAME = "mxjob-controller"

LABEL_OPERATOR = f"{GROUP}/operator-name"
LABEL_JOB = f"{GROUP}/job-name"
LABEL_TYPE = f"{GROUP}/replica-type"
LABEL_INDEX = f"{GROUP}/replica-index"
LABEL_ROLE = f"{GROUP}/job-role"
LABEL_ATTEMPT = f"{GROUP}/replica-attempt"
# Restarts of this replica index before the pod's attempt began (in-place restarts included).
ANNOTATION_RESTARTS = f"{GROUP}/restarts-before"
# On the MXJob: which replicas get a headless Service (docs/behaviour.md#replica-services).
ANNOTATION_REPLICA_SERVICES = f"{GROUP}/replica-services"


class ReplicaServices(StrEnum):
    """The values of ANNOTATION_REPLICA_SERVICES: a Service per replica, or the Scheduler's
    only."""

    ALL = "all"
    SCHEDULER = "scheduler"


def child_name(job: str, rtype: ReplicaType, index: int) -> str:
    """Name of the Service of a replica, and of its pod's first attempt."""
    return f"{job}-{rtype.lowered}-{index}"


def pod_name(job: str, rtype: ReplicaType, index: int, attempt: int) -> str:
    """Deterministic pod name: a replacement never collides with the pod it replaces."""
    return attempt_name(child_name(job, rtype, index), attempt)


def attempt_name(base: str, attempt: int) -> str:
    """The name of an attempt's pod, from its replica's `child_name`."""
    return base if attempt == 0 else f"{base}-r{attempt}"


def job_labels(job: str) -> dict[str, str]:
    """The labels of every child of a job: ours, and which job it belongs to."""
    return {LABEL_OPERATOR: OPERATOR_NAME, LABEL_JOB: job}


def selector(job: str, rtype: ReplicaType, index: int) -> dict[str, str]:
    """Labels that tie a Service to every attempt of one replica."""
    return job_labels(job) | {LABEL_TYPE: rtype.lowered, LABEL_INDEX: str(index)}


def metadata(
    name: str, namespace: str | None, labels: dict[str, str], annotations: dict[str, str]
) -> dict[str, Any]:
    """A child's metadata: its namespace only where the job has one, annotations only if any."""
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return meta
