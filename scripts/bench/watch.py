"""Watches of a bench namespace on the API server: when its pods, Services and job conditions
appear, and waiting until one has."""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from localcluster.rest import Rest, path
from scripts.bench.workloads import Scenario

OnEvent = Callable[[str, dict[str, Any]], None]


@dataclass
class Seen:
    """Times (monotonic) at which the namespace reached each state, from watch events."""

    start: float
    pods: set[str] = field(default_factory=set)
    services: set[str] = field(default_factory=set)
    live: dict[str, set[str]] = field(default_factory=lambda: {"pods": set(), "services": set()})
    conditions: dict[str, set[str]] = field(default_factory=dict)
    at: dict[str, float] = field(default_factory=dict)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def mark(self, what: str) -> None:
        self.at.setdefault(what, time.monotonic() - self.start)


def cleaned(seen: Seen, scenario: Scenario) -> None:
    """Clean-up is done once only the Schedulers' pods and Services are left."""
    left = {len(names) for names in seen.live.values()}
    if "succeeded" in seen.at and left == {scenario.jobs}:
        seen.mark("cleaned")


def on_child(seen: Seen, scenario: Scenario, resource: str, ever: set[str]) -> OnEvent:
    """The watch of pods or Services: which are alive, which were ever added (`ever`), and
    when all of the scenario's had appeared (marked with the resource's name)."""

    def on_event(kind: str, child: dict[str, Any]) -> None:
        name = child["metadata"]["name"]
        if kind == "ADDED":
            seen.live[resource].add(name)
            ever.add(name)
            if len(ever) == scenario.pods:
                seen.mark(resource)
        elif kind == "DELETED":
            seen.live[resource].discard(name)
        cleaned(seen, scenario)

    return on_event


def on_job(seen: Seen, scenario: Scenario) -> OnEvent:
    """The watch of MXJobs: when every job has a condition, then Running, then Succeeded."""

    def on_event(kind: str, job: dict[str, Any]) -> None:
        conditions = (job.get("status") or {}).get("conditions") or []
        true = {c["type"] for c in conditions if c.get("status") == "True"}
        seen.conditions[job["metadata"]["name"]] = true
        if len(seen.conditions) == scenario.jobs:
            if all(seen.conditions.values()):
                seen.mark("condition")
            if all("Running" in c for c in seen.conditions.values()):
                seen.mark("running")
            if all("Succeeded" in c for c in seen.conditions.values()):
                seen.mark("succeeded")
                cleaned(seen, scenario)

    return on_event


def follow(
    kube: Rest, url: str, on_event: OnEvent, seen: Seen, ready: threading.Semaphore,
    stop: threading.Event,
) -> None:  # fmt: skip
    """List `url`, say it is `ready`, then hand each watch event to `on_event` until `stop`,
    waking whoever waits on `seen`."""
    _, version = kube.list(url)
    ready.release()
    for event in kube.watch(url, version, stop):
        with seen.changed:
            on_event(event["type"], event["object"])
            seen.changed.notify_all()


@contextmanager
def watching(kube: Rest, namespace: str, scenario: Scenario) -> Iterator[Seen]:
    """What the namespace's pods, Services and MXJobs reach, watched while in use."""
    seen = Seen(time.monotonic())
    stop = threading.Event()
    ready = threading.Semaphore(0)
    handlers = {
        "pods": on_child(seen, scenario, "pods", seen.pods),
        "services": on_child(seen, scenario, "services", seen.services),
        "mxjobs": on_job(seen, scenario),
    }
    threads = [
        threading.Thread(
            target=follow, args=(kube, path(resource, namespace), handler, seen, ready, stop),
            daemon=True,
        )
        for resource, handler in handlers.items()
    ]  # fmt: skip
    for thread in threads:
        thread.start()
    for _ in threads:
        if not ready.acquire(timeout=60):
            raise RuntimeError("a watch did not start")
    try:
        yield seen
    finally:
        stop.set()


def wait_for(seen: Seen, what: str, deadline: float) -> float:
    with seen.changed:
        while what not in seen.at:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{what} not reached; seen {len(seen.pods)} pods, "
                    f"{len(seen.services)} Services, {seen.conditions}"
                )
            seen.changed.wait(timeout=1)
        return seen.at[what]
