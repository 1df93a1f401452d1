"""Every pod and Workload event of one namespace, recorded while a real-Kueue test edits its
jobs and replayed in etcd's order, to check that no MXJob runs outside its Kueue admission: at
no moment do the live pods ask for more than the ClusterQueue's quota, nor a job's pods of a
pod set outnumber what its admitted Workloads allow (tests/apiserver/test_kueue_admission.py)."""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from localcluster.rest import Rest
from tests.support.kueue_objects import KUEUE

LIVE = ("Pending", "Running", "Unknown")


@dataclass
class History:
    """Every pod and Workload event of one namespace, in etcd's order once `stopped`."""

    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, event: dict[str, Any]) -> None:
        obj = event["object"]
        with self.lock:
            self.events.append((int(obj["metadata"]["resourceVersion"]), event["type"], obj))

    def replay(self) -> list[tuple[int, dict[str, int], dict[tuple[str, str], int]]]:
        """After each event: the live pods' CPUs, and per (job, pod set) the live pods beyond
        what the job's admitted Workloads allow (0 when within)."""
        pods: dict[str, dict[str, Any]] = {}
        admitted: dict[str, dict[str, Any]] = {}
        # A finished job's Workload stays while any of its pods may still run, so its live
        # pods are held to it too (docs/kueue.md).
        out = []
        with self.lock:
            ordered = sorted(self.events, key=lambda e: e[0])
        for version, kind, obj in ordered:
            store = pods if obj["kind"] == "Pod" else admitted
            name = obj["metadata"]["name"]
            store.pop(name, None)
            if kind != "DELETED" and (obj["kind"] == "Pod" or _admitted(obj)):
                store[name] = obj
            live = [p for p in pods.values() if p.get("status", {}).get("phase") in LIVE]
            cpus = {"cpu": sum(_cpus(p) for p in live)}
            out.append((version, cpus, _beyond(live, admitted.values())))
        return out

    def gone(self, kind: str, name: str) -> int:
        """The resourceVersion at which the object was deleted."""
        return self._first(kind, name, lambda event, obj: event == "DELETED")

    def first_deletion(self, kind: str, name: str) -> int:
        """The resourceVersion at which the object was first marked for deletion or gone."""
        return self._first(
            kind, name,
            lambda event, obj: event == "DELETED" or bool(obj["metadata"].get("deletionTimestamp")),
        )  # fmt: skip

    def _first(self, kind: str, name: str, when: Callable[[str, dict[str, Any]], bool]) -> int:
        """The first resourceVersion at which an event of the object matches `when`."""
        with self.lock:
            return min(
                version for version, event, obj in self.events
                if obj["kind"] == kind and obj["metadata"]["name"] == name and when(event, obj)
            )  # fmt: skip


def _admitted(workload: dict[str, Any]) -> bool:
    conds = workload.get("status", {}).get("conditions") or []
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in conds)


def _cpus(pod: dict[str, Any]) -> int:
    return sum(
        int(c.get("resources", {}).get("requests", {}).get("cpu", "0"))
        for c in pod["spec"]["containers"]
    )


def _beyond(live: list[dict[str, Any]], admitted: Any) -> dict[tuple[str, str], int]:
    allowed: dict[tuple[str, str], int] = {}
    for workload in admitted:
        job = workload["metadata"]["labels"]["training.kubeflow.org/job-name"]
        for pod_set in workload["spec"]["podSets"]:
            key = (job, pod_set["name"])
            allowed[key] = allowed.get(key, 0) + pod_set["count"]
    running: dict[tuple[str, str], int] = {}
    for pod in live:
        labels = pod["metadata"]["labels"]
        key = (
            labels["training.kubeflow.org/job-name"],
            labels["training.kubeflow.org/replica-type"],
        )
        running[key] = running.get(key, 0) + 1
    return {k: n - allowed.get(k, 0) for k, n in running.items() if n > allowed.get(k, 0)}


@contextmanager
def recorded(rest: Rest, ns: str) -> Iterator[History]:
    """Watch the namespace's pods and Workloads from now until the block ends."""
    history = History()
    stop = threading.Event()
    failures: list[BaseException] = []
    threads = []
    for url in (f"/api/v1/namespaces/{ns}/pods", f"{KUEUE}/namespaces/{ns}/workloads"):
        items, version = rest.list(url)
        for item in items:
            kind = "Pod" if "/pods" in url else "Workload"
            history.add({"type": "ADDED", "object": {"kind": kind} | item})

        def follow(url: str = url, version: str = version) -> None:
            try:
                for event in rest.watch(url, version, stop):
                    history.add(event)
            except BaseException as error:  # reported by the test, not lost in a thread
                failures.append(error)

        threads.append(threading.Thread(target=follow, daemon=True))
    for thread in threads:
        thread.start()
    try:
        yield history
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
    assert not failures, failures


def within_admission(history: History, quota: int) -> int:
    """No moment above `quota` CPUs or an admitted Workload's counts; the events replayed."""
    replayed = history.replay()
    for version, cpus, beyond in replayed:
        assert cpus["cpu"] <= quota, f"at resourceVersion {version}: {cpus} of {quota} CPUs"
        assert not beyond, f"at resourceVersion {version}: pods beyond admission {beyond}"
    return len(replayed)
