"""The test plays the kubelet: no node runs here, so it reports pods' containers as started or
exited by patching the pods' status through the status subresource, as a kubelet would (phase,
startTime, one containerStatus per container with `running` or `terminated` and its exit code),
stamped with the real clock. Nothing else of a kubelet is modelled: no images, no probes, no
in-place container restarts (restartCount stays 0), and a pod never leaves a phase on its own."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .rest import Rest


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Kubelet:
    rest: Rest
    namespace: str

    def run(self, *names: str) -> None:
        """The named pods start, or every pending pod when none is named: phase Running, every
        container running and ready."""
        for name in names or self._pending():
            started = _now()
            self._report(
                name,
                {"phase": "Running", "startTime": started},
                {"running": {"startedAt": started}},
            )

    def exit(self, name: str, code: int) -> None:
        """Every container of the pod exits with `code`: phase Succeeded on 0, else Failed."""
        reason = "Completed" if code == 0 else "Error"
        state = {"terminated": {"exitCode": code, "reason": reason, "finishedAt": _now()}}
        self._report(name, {"phase": "Succeeded" if code == 0 else "Failed"}, state)

    def phases(self) -> dict[str, str]:
        """Every pod of the namespace and its phase."""
        return {p["metadata"]["name"]: p["status"]["phase"] for p in self._pods()}

    def _pods(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.rest.get(f"/api/v1/namespaces/{self.namespace}/pods")[
            "items"
        ]
        return items

    def _pending(self) -> list[str]:
        return [p["metadata"]["name"] for p in self._pods() if p["status"]["phase"] == "Pending"]

    def _report(self, name: str, status: dict[str, Any], state: dict[str, Any]) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        pod = self.rest.get(path)
        containers = [
            {
                "name": container["name"],
                "image": container["image"],
                "imageID": "",
                "ready": status["phase"] == "Running",
                "restartCount": 0,
                "state": state,
            }
            for container in pod["spec"]["containers"]
        ]
        self.rest.merge_patch(
            f"{path}/status", {"status": status | {"containerStatuses": containers}}
        )
