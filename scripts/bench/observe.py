"""What the end-to-end bench observes of the real stack: when the namespace's pods, Services and
job conditions appear (watches on the API server), CPU seconds of a process (/proc), the hook's
sync count (its /metrics), and Metacontroller's API requests (the API server's audit log)."""

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from localcluster.rest import Rest, path
from scripts.bench.workloads import Scenario

CLK_TCK = os.sysconf("SC_CLK_TCK")


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


@contextmanager
def watching(kube: Rest, namespace: str, scenario: Scenario) -> Iterator[Seen]:
    seen = Seen(time.monotonic())
    stop = threading.Event()

    def follow(resource: str, on_event: Callable[[str, dict[str, Any]], None]) -> None:
        url = path(resource, namespace)
        _, version = kube.list(url)
        ready.release()
        for event in kube.watch(url, version, stop):
            with seen.changed:
                on_event(event["type"], event["object"])
                seen.changed.notify_all()

    def cleaned() -> None:
        """Clean-up is done once only the Schedulers' pods and Services are left."""
        left = {len(names) for names in seen.live.values()}
        if "succeeded" in seen.at and left == {scenario.jobs}:
            seen.mark("cleaned")

    def on_child(resource: str, ever: set[str]) -> Callable[[str, dict[str, Any]], None]:
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
            cleaned()

        return on_event

    def on_job(kind: str, job: dict[str, Any]) -> None:
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
                cleaned()

    ready = threading.Semaphore(0)
    threads = [
        threading.Thread(target=follow, args=args, daemon=True)
        for args in (
            ("pods", on_child("pods", seen.pods)),
            ("services", on_child("services", seen.services)),
            ("mxjobs", on_job),
        )
    ]
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


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def hook_syncs(url: str) -> float:
    text = httpx.get(f"{url}/metrics", trust_env=False, timeout=30).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("mxjob_sync_requests_total{")
    )


def json_lines(log: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a log, one a line; other lines (a start-up message) are skipped."""
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def hook_log(log: Path, namespace: str) -> list[tuple[int, float]]:
    """(request bytes, milliseconds) of every sync the hook answered for `namespace`, from its
    JSON log lines (`body_bytes`, `duration_ms`)."""
    return [
        (int(entry["body_bytes"]), float(entry["duration_ms"]))
        for entry in json_lines(log)
        if entry.get("namespace") == namespace
        and entry.get("status") == 200
        and "body_bytes" in entry
    ]


def audit_events(log: Path, offset: int) -> Iterator[dict[str, Any]]:
    """The API server's audit events logged since `offset` (a byte offset of its log)."""
    with log.open("rb") as lines:
        lines.seek(offset)
        for line in lines:
            yield json.loads(line)


def audited(log: Path, offset: int, namespace: str, agent: str = "metacontroller") -> Counter[str]:
    """The controller's requests (its user agent starts with `agent`) in `namespace` since
    `offset`, by verb."""
    verbs: Counter[str] = Counter()
    for event in audit_events(log, offset):
        ref = event.get("objectRef") or {}
        if ref.get("namespace") == namespace and event.get("userAgent", "").startswith(agent):
            verbs[event["verb"]] += 1
    return verbs


def memory_mib(pid: int) -> tuple[float, float]:
    """A process's peak and current resident memory (VmHWM, VmRSS), MiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    peak, now = (int(fields[k].split()[0]) / 1024 for k in ("VmHWM", "VmRSS"))
    return peak, now


class LoadAverage:
    """The machine's 1-minute load average (/proc/loadavg), sampled every 10 s while in use:
    `seen` is the range over the run (other work shares the machine)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.samples.append(float(Path("/proc/loadavg").read_text().split()[0]))
            if self._stop.wait(10):
                return

    def __enter__(self) -> "LoadAverage":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def seen(self) -> str:
        if not self.samples:
            return "not sampled"
        return f"{min(self.samples):.1f} to {max(self.samples):.1f}"
