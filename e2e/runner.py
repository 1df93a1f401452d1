"""One MXJob from `kubectl apply` to its end on the real stack, its pods run by the local kubelet.

`run_job` applies the job's manifest with kubectl in a namespace of its own, follows the job's
conditions through a watch, and returns once the job is finished and clean-up has stopped
every process it still ran. Used by `make demo` and tests/e2e.
"""

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster import ClusterError
from e2e.kubelet import LocalKubelet, Report
from localcluster.rest import Rest, path
from localcluster.stack import Stack

FINISHED = ("Succeeded", "Failed")


def true_conditions(status: dict[str, Any] | None) -> list[str]:
    return [c["type"] for c in (status or {}).get("conditions") or [] if c["status"] == "True"]


@dataclass
class JobRun:
    """A job followed to its end: every state it showed, its last status, the pods' kubelet."""

    name: str
    namespace: str
    kubelet: LocalKubelet
    states: list[str] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def seen(self, job: dict[str, Any]) -> str | None:
        """Record the job's state; return it if it is new."""
        with self.changed:
            self.status = job.get("status") or {}
            true = true_conditions(self.status)
            self.changed.notify_all()
            if true and (not self.states or self.states[-1] != true[-1]):
                self.states.append(true[-1])
                return true[-1]
            return None

    def finished(self) -> bool:
        return bool(set(true_conditions(self.status)) & set(FINISHED))

    def condition(self, ctype: str) -> dict[str, Any]:
        return next(c for c in self.status["conditions"] if c["type"] == ctype)


def run_job(
    stack: Stack,
    kube: Rest,
    job: dict[str, Any],
    workdir: Path,
    timeout: float,
    on_report: Callable[[JobRun, Report], None] = lambda run, report: None,
    on_state: Callable[[JobRun, str], None] = lambda run, state: None,
) -> JobRun:
    """Apply `job` (a manifest) with kubectl and follow it until it is finished and idle."""
    name = job["metadata"]["name"]
    namespace = f"{name}-{uuid.uuid4().hex[:6]}"
    kube.create(path("namespaces"), {"metadata": {"name": namespace}})
    manifest = workdir / f"{name}.yaml"
    manifest.write_text(yaml.safe_dump(job, sort_keys=False))
    kubelet = LocalKubelet(kube, namespace, workdir, timeout)
    run = JobRun(name, namespace, kubelet)
    kubelet.on_report = lambda report: on_report(run, report)
    stop = threading.Event()

    def follow() -> None:
        url = path("mxjobs", namespace)
        _, version = kube.list(url)
        started.set()
        for event in kube.watch(url, version, stop):
            state = run.seen(event["object"])
            if state is not None:
                on_state(run, state)

    started = threading.Event()
    watcher = threading.Thread(target=follow, daemon=True)
    watcher.start()
    if not started.wait(60):
        raise ClusterError(f"cannot watch the MXJobs of {namespace}")
    deadline = time.monotonic() + timeout
    try:
        with kubelet:
            stack.apiserver.kubectl("apply", f"--namespace={namespace}", "-f", str(manifest))
            with run.changed:
                while not run.finished():
                    kubelet.check()
                    if time.monotonic() > deadline or not watcher.is_alive():
                        raise ClusterError(f"{name} not finished after {timeout} s: {run.states}")
                    run.changed.wait(timeout=1)
            kubelet.wait_idle(max(1.0, deadline - time.monotonic()))
    finally:
        stop.set()
    return run
