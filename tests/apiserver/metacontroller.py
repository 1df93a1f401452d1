"""TEST DOUBLES for Metacontroller and the kubelet, acting on a real API server.

Neither runs in this tier (no Go Metacontroller, no node), so these play their documented parts
(Metacontroller's compositecontroller.md and hook.md; docs/lifecycle.md) through kubectl against
the real API server, which stores and validates every write:
- `Metacontroller` is one CompositeController with `generateSelector: true` and child types
  `ConfigMap.v1` (updateStrategy `InPlace`), `Pod.v1` (`OnDelete`) and `Service.v1`
  (`InPlace`). One `sync()` reads the
  parent, lists its children by the `controller-uid` label (only those it controls), sends the
  hook a v2 sync request (the hook runs in-process: `app.reconcile.sync`), creates the missing
  children with its ownerReference and label, never updates an existing pod, updates Services and
  ConfigMaps in place, deletes observed children that are no longer desired, then replaces the parent's
  status through the status subresource (adding `observedGeneration`), unless it is unchanged.
  Children are written by server-side apply, field manager `metacontroller`.
- `Kubelet` is a script: tests start pods and make their containers exit, and it patches the
  pods' status (phase and containerStatuses) through the status subresource.
Time is a `Clock` the test advances: the hook takes it as `now`, the kubelet stamps with it."""

import copy
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import yaml

from app.reconcile import sync
from tests.support import envelope

from .cluster import ApiServer
from .resources import CONTROLLER_UID, MXJOB, kind_key, owned, resource

CONFIG_MAP, POD, SERVICE = "ConfigMap.v1", "Pod.v1", "Service.v1"
FIELD_MANAGER = "metacontroller"
Key = tuple[str, str]  # (child type, name)


@dataclass
class Clock:
    """The time the hook is given and the kubelet stamps; tests move it forward."""

    now: datetime

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


@dataclass
class Sync:
    """What one sync did: the hook's request and answer, and the writes that followed."""

    request: dict[str, Any]
    answer: dict[str, Any]
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    status_written: bool = False


@dataclass
class Metacontroller:
    """Test double for Metacontroller's CompositeController loop over one MXJob."""

    server: ApiServer
    namespace: str
    name: str
    clock: Clock
    child_types: tuple[str, ...] = (CONFIG_MAP, POD, SERVICE)
    in_place: tuple[str, ...] = (CONFIG_MAP, SERVICE)

    def sync(self, after: float = 0) -> Sync:
        """Let `after` seconds pass, then run one sync and apply its answer."""
        now = self.clock.advance(after)
        parent = self.parent()
        observed = self.children(parent)
        request = self._request(parent, observed)
        answer = sync(copy.deepcopy(request), now)
        desired = {
            (kind_key(c), c["metadata"]["name"]): owned(c, parent) for c in answer["children"]
        }
        done = Sync(request, answer)
        done.created, done.updated = self._apply(desired, observed)
        done.deleted = self._delete([key for key in observed if key not in desired])
        done.status_written = self._write_status(parent, answer["status"])
        return done

    def parent(self) -> dict[str, Any]:
        return self.server.get(MXJOB, self.name, f"--namespace={self.namespace}")

    def children(self, parent: dict[str, Any]) -> dict[Key, dict[str, Any]]:
        """The children that match the generated selector and that this parent controls."""
        selector = f"{CONTROLLER_UID}={parent['metadata']['uid']}"
        types = ",".join(resource(t) for t in self.child_types)
        listed = self.server.get(types, "-l", selector, f"--namespace={self.namespace}")
        return {
            (kind_key(c), c["metadata"]["name"]): c
            for c in listed["items"]
            if _controller_uid(c) == parent["metadata"]["uid"]
        }

    def _request(self, parent: dict[str, Any], observed: dict[Key, Any]) -> dict[str, Any]:
        children: dict[str, dict[str, Any]] = {t: {} for t in self.child_types}
        for (child_type, name), child in sorted(observed.items()):
            children[child_type][f"{self.namespace}/{name}"] = child
        return envelope(parent, children)

    def _apply(
        self, desired: dict[Key, dict[str, Any]], observed: dict[Key, dict[str, Any]]
    ) -> tuple[list[str], list[str]]:
        """Create what is missing; update in place what its type allows (never a pod)."""
        missing = [key for key in desired if key not in observed]
        in_place = [key for key in desired if key in observed and key[0] in self.in_place]
        if not missing and not in_place:
            return [], []
        written = self._server_side_apply([desired[key] for key in missing + in_place])
        updated = [
            key
            for key in in_place
            if written[key]["metadata"]["resourceVersion"]
            != observed[key]["metadata"]["resourceVersion"]
        ]
        return _names(missing), _names(updated)

    def _server_side_apply(self, documents: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
        result = self.server.kubectl(
            "apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "--output=json",
            "-f", "-", input=yaml.safe_dump_all(documents),
        )  # fmt: skip
        written = json.loads(result.stdout)
        items = written["items"] if written["kind"] == "List" else [written]
        return {(kind_key(c), c["metadata"]["name"]): c for c in items}

    def _delete(self, keys: list[Key]) -> list[str]:
        """Delete with background propagation, as Metacontroller does."""
        for child_type in sorted({t for t, _ in keys}):
            names = sorted(n for t, n in keys if t == child_type)
            self.server.kubectl(
                "delete", resource(child_type), *names, f"--namespace={self.namespace}",
                "--cascade=background", "--wait=false",
            )  # fmt: skip
        return _names(keys)

    def _write_status(self, parent: dict[str, Any], status: dict[str, Any]) -> bool:
        """Replace the whole status (the hook's, plus observedGeneration) if it changed."""
        new = status | {"observedGeneration": parent["metadata"]["generation"]}
        if parent.get("status") == new:
            return False
        patch = json.dumps([{"op": "add", "path": "/status", "value": new}])
        self.server.kubectl(
            "patch", MXJOB, self.name, f"--namespace={self.namespace}", "--subresource=status",
            "--type=json", f"--patch={patch}",
        )  # fmt: skip
        return True


@dataclass
class Kubelet:
    """Test double for the kubelet: a script that reports pods' containers as it is told."""

    server: ApiServer
    namespace: str
    clock: Clock

    def run(self, *names: str) -> None:
        """Start the named pods, or every pending pod when none is named."""
        for pod in self._pods(names, only_pending=not names):
            running = {"running": {"startedAt": self._stamp()}}
            self._report(pod, {"phase": "Running", "startTime": self._stamp()}, running)

    def exit(self, name: str, code: int) -> None:
        """Every container of the pod exits with `code`: Succeeded on 0, else Failed."""
        (pod,) = self._pods((name,))
        reason = "Completed" if code == 0 else "Error"
        state = {"terminated": {"exitCode": code, "reason": reason, "finishedAt": self._stamp()}}
        self._report(pod, {"phase": "Succeeded" if code == 0 else "Failed"}, state)

    def phases(self) -> dict[str, str]:
        return {p["metadata"]["name"]: p["status"]["phase"] for p in self._pods(())}

    def _pods(self, names: tuple[str, ...], only_pending: bool = False) -> list[dict[str, Any]]:
        listed = self.server.get("pods", f"--namespace={self.namespace}")["items"]
        return [
            pod
            for pod in listed
            if (not names or pod["metadata"]["name"] in names)
            and (not only_pending or pod["status"]["phase"] == "Pending")
        ]

    def _report(self, pod: dict[str, Any], status: dict[str, Any], state: dict[str, Any]) -> None:
        containers = [
            {
                "name": c["name"],
                "image": c["image"],
                "imageID": "",
                "ready": status["phase"] == "Running",
                "restartCount": 0,
                "state": state,
            }
            for c in pod["spec"]["containers"]
        ]
        status = status | {"containerStatuses": containers}
        self.server.kubectl(
            "patch", "pod", pod["metadata"]["name"], f"--namespace={self.namespace}",
            "--subresource=status", "--type=merge", f"--patch={json.dumps({'status': status})}",
        )  # fmt: skip

    def _stamp(self) -> str:
        return self.clock.now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _controller_uid(child: dict[str, Any]) -> str | None:
    refs = child["metadata"].get("ownerReferences", [])
    return next((r["uid"] for r in refs if r.get("controller")), None)


def _names(keys: list[Key]) -> list[str]:
    return sorted(f"{child_type.split('.')[0]}/{name}" for child_type, name in keys)
