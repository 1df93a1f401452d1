"""Pod status as a kubelet reports it, and a kubelet stand-in that reports it.

No node runs on the local cluster, so something plays the kubelet: it reports pods' containers
as started or exited by patching the pods' status through the status subresource, stamped with
the real clock. `Kubelet` here is the simplest one, for tests: it reports what the test says
(phase, startTime, one containerStatus per container with `running` or `terminated` and its exit
code, and an in-place restart when the test says one happened). Nothing else of a kubelet is
modelled: no images, no probes, no restart on its own, and a pod never leaves a phase on its
own. `running` and `terminated` are the whole status of a pod with one `mxnet` container, for
the local kubelet of e2e/ (which runs pods as processes) and the end-to-end bench.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .rest import Rest

MAIN_CONTAINER = "mxnet"


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def container_status(name: str, image: str, state: dict[str, Any], ready: bool) -> dict[str, Any]:
    """One container's entry of `containerStatuses`, never restarted."""
    return {
        "name": name,
        "image": image,
        "imageID": "",
        "ready": ready,
        "started": ready,
        "restartCount": 0,
        "state": state,
    }


def terminated_state(exit_code: int, finished_at: str, **started: str) -> dict[str, Any]:
    """A container's `state` once it exited with `exit_code` (`startedAt=` if known)."""
    reason = "Completed" if exit_code == 0 else "Error"
    return {
        "terminated": {"exitCode": exit_code, "reason": reason}
        | started
        | {"finishedAt": finished_at}
    }


def exit_phase(exit_code: int) -> str:
    """A pod's phase once its containers exited with `exit_code` (restartPolicy Never)."""
    return "Succeeded" if exit_code == 0 else "Failed"


def running(started_at: str, image: str) -> dict[str, Any]:
    """A pod whose `mxnet` container has started and is ready."""
    state = {"running": {"startedAt": started_at}}
    return _status("Running", started_at, image, state, ready=True)


def terminated(started_at: str, finished_at: str, image: str, exit_code: int) -> dict[str, Any]:
    """A pod whose `mxnet` container exited with `exit_code` (restartPolicy Never: for good)."""
    state = terminated_state(exit_code, finished_at, startedAt=started_at)
    return _status(exit_phase(exit_code), started_at, image, state, ready=False)


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
        "containerStatuses": [container_status(MAIN_CONTAINER, image, state, ready)],
    }


@dataclass(frozen=True)
class Kubelet:
    """Reports the pods of one namespace as the test says they run or exit."""

    rest: Rest
    namespace: str

    def run(self, *names: str) -> None:
        """The named pods start, or every pending pod when none is named: phase Running, every
        container running and ready."""
        for name in names or self._pending():
            started = now_stamp()
            self._report(
                name,
                {"phase": "Running", "startTime": started},
                {"running": {"startedAt": started}},
            )

    def exit(self, name: str, code: int) -> None:
        """Every container of the pod exits with `code`: phase Succeeded on 0, else Failed."""
        self._report(name, {"phase": exit_phase(code)}, terminated_state(code, now_stamp()))

    def restart(self, name: str, count: int) -> None:
        """The pod's containers were restarted in place (restartPolicy OnFailure or Always):
        running again after exit code 1, `count` restarts each so far."""
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        pod = self.rest.get(path)
        started = now_stamp()
        containers = [
            container_status(c["name"], c["image"], {"running": {"startedAt": started}}, True)
            | {"restartCount": count, "lastState": terminated_state(1, started)}
            for c in pod["spec"]["containers"]
        ]
        status = {"phase": "Running", "containerStatuses": containers}
        self.rest.merge_patch(f"{path}/status", {"status": status})

    def phases(self) -> dict[str, str]:
        """Every pod of the namespace and its phase."""
        return {p["metadata"]["name"]: p["status"]["phase"] for p in self._pods()}

    def _pods(self) -> list[dict[str, Any]]:
        items, _ = self.rest.list(f"/api/v1/namespaces/{self.namespace}/pods")
        return items

    def _pending(self) -> list[str]:
        return [p["metadata"]["name"] for p in self._pods() if p["status"]["phase"] == "Pending"]

    def _report(self, name: str, status: dict[str, Any], state: dict[str, Any]) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        pod = self.rest.get(path)
        ready = status["phase"] == "Running"
        containers = [
            container_status(container["name"], container["image"], state, ready)
            for container in pod["spec"]["containers"]
        ]
        self.rest.merge_patch(
            f"{path}/status", {"status": status | {"containerStatuses": containers}}
        )
