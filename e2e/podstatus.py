"""A pod's `.status` as the kubelet reports it, for the local kubelet and the end-to-end bench."""

from datetime import UTC, datetime
from typing import Any

MAIN_CONTAINER = "mxnet"


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def running(started_at: str, image: str) -> dict[str, Any]:
    """A pod whose `mxnet` container has started and is ready."""
    state = {"running": {"startedAt": started_at}}
    return _status("Running", started_at, image, state, ready=True)


def terminated(started_at: str, finished_at: str, image: str, exit_code: int) -> dict[str, Any]:
    """A pod whose `mxnet` container exited with `exit_code` (restartPolicy Never: for good)."""
    state = {
        "terminated": {
            "exitCode": exit_code,
            "reason": "Completed" if exit_code == 0 else "Error",
            "startedAt": started_at,
            "finishedAt": finished_at,
        }
    }
    phase = "Succeeded" if exit_code == 0 else "Failed"
    return _status(phase, started_at, image, state, ready=False)


def _status(
    phase: str, started_at: str, image: str, state: dict[str, Any], ready: bool
) -> dict[str, Any]:
    flag = "True" if ready else "False"
    return {
        "phase": phase,
        "startTime": started_at,
        "conditions": [
            {"type": kind, "status": flag, "lastTransitionTime": started_at}
            for kind in ("Ready", "ContainersReady")
        ],
        "containerStatuses": [
            {
                "name": MAIN_CONTAINER,
                "image": image,
                "imageID": "",
                "ready": ready,
                "started": ready,
                "restartCount": 0,
                "state": state,
            }
        ],
    }
