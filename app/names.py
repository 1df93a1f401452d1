"""Names and labels of an MXJob's children."""

from app.spec import ReplicaType

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


def child_name(job: str, rtype: ReplicaType, index: int) -> str:
    """Name of the Service of a replica, and of its pod's first attempt."""
    return f"{job}-{rtype.lowered}-{index}"


def pod_name(job: str, rtype: ReplicaType, index: int, attempt: int) -> str:
    """Deterministic pod name: a replacement never collides with the pod it replaces."""
    base = child_name(job, rtype, index)
    return base if attempt == 0 else f"{base}-r{attempt}"


def selector(job: str, rtype: ReplicaType, index: int) -> dict[str, str]:
    """Labels that tie a Service to every attempt of one replica."""
    return {
        LABEL_OPERATOR: OPERATOR_NAME,
        LABEL_JOB: job,
        LABEL_TYPE: rtype.lowered,
        LABEL_INDEX: str(index),
    }
