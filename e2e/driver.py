"""Test double for Metacontroller: serve the real hook on loopback and sync a job to the end.

`serve_hook` runs the real hook (`python -m app serve`) on a free loopback port. `Metacontroller`
plays the CompositeController: it POSTs each sync request to the hook, applies the answer
through the `ApiServer` double (children first, then the parent's status, as Metacontroller
does), and repeats. Real Metacontroller syncs on watch events and `resyncAfterSeconds`; this
one polls at a fixed interval, which only changes how often the hook is asked.
"""

import copy
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from e2e.cluster import POD, WORKDIR, ApiServer, Changes, ClusterError
from e2e.jobs import free_port

HOOK_START_SECONDS = 30.0
CONTROLLER = {
    "apiVersion": "metacontroller.k8s.io/v1alpha1",
    "kind": "CompositeController",
    "metadata": {"name": "mxjob-controller"},
}
FINISHED = ("Succeeded", "Failed")


@contextmanager
def serve_hook(log: Path) -> Iterator[str]:
    """The hook's base URL while it runs; it is stopped by PID on the way out."""
    port = free_port()
    command = [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=WORKDIR, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, server, log)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _wait_healthy(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + HOOK_START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise ClusterError(f"the hook exited with {server.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1, trust_env=False).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise ClusterError(f"the hook did not answer /healthz within {HOOK_START_SECONDS}s")


def conditions(status: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list((status or {}).get("conditions") or [])


def true_conditions(status: dict[str, Any] | None) -> set[str]:
    return {c["type"] for c in conditions(status) if c.get("status") == "True"}


def finished(status: dict[str, Any] | None) -> bool:
    return bool(true_conditions(status) & set(FINISHED))


@dataclass
class SyncRecord:
    """One sync: the pods the hook saw, the status it answered and what that changed."""

    number: int
    pods: dict[str, str]
    status: dict[str, Any]
    changes: Changes


def pod_summary(pod: dict[str, Any]) -> str:
    """`Running`, or `Failed (exit 137)`: a pod's phase as `kubectl get pods` would put it."""
    phase = str(pod["status"]["phase"])
    for container in pod["status"].get("containerStatuses", []):
        code = container["state"].get("terminated", {}).get("exitCode")
        if code is not None:
            return f"{phase} (exit {code})"
    return phase


class Metacontroller:
    """Test double for Metacontroller driving one MXJob through the real hook over HTTP."""

    def __init__(self, hook_url: str, parent: dict[str, Any], api: ApiServer) -> None:
        self.hook_url = hook_url
        self.parent = copy.deepcopy(parent)
        self.api = api
        self.history: list[SyncRecord] = []
        self._client = httpx.Client(timeout=10, trust_env=False)

    def close(self) -> None:
        self._client.close()

    def sync(self) -> SyncRecord:
        children = self.api.observed()
        request = {
            "controller": CONTROLLER,
            "parent": copy.deepcopy(self.parent),
            "children": children,
            "related": {},
            "finalizing": False,
        }
        response = self._client.post(f"{self.hook_url}/sync", json=request)
        if response.status_code != 200:
            raise ClusterError(f"sync answered {response.status_code}: {response.text}")
        answer = response.json()
        changes = self.api.apply(answer["children"])
        self.parent["status"] = answer["status"] | {"observedGeneration": 1}
        pods = {name: pod_summary(pod) for name, pod in children[POD].items()}
        record = SyncRecord(len(self.history) + 1, pods, answer["status"], changes)
        self.history.append(record)
        return record

    def run(
        self,
        timeout: float,
        interval: float = 0.5,
        on_sync: Callable[[SyncRecord], None] | None = None,
    ) -> list[SyncRecord]:
        """Sync until one sync has seen the job already finished (its cleanup is applied)."""
        deadline = time.monotonic() + timeout
        while True:
            seen_finished = finished(self.parent.get("status"))
            record = self.sync()
            if on_sync is not None:
                on_sync(record)
            if seen_finished:
                return self.history
            if time.monotonic() > deadline:
                raise ClusterError(f"not finished after {timeout}s: {record}")
            time.sleep(interval)
