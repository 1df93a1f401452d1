"""A local kubelet for the loopback API server: the namespace's pods run as local processes.

It watches the real API server for the pods of one namespace (the ones the real Metacontroller
creates for the hook), runs each pod's `mxnet` container as a local process (e2e/cluster.py
`Kubelet`: private /etc/hosts, needs root), and reports every change of the process back as the
pod's status through the status subresource, as a kubelet does. A deleted pod's process is
stopped (SIGTERM, then SIGKILL). Service names resolve to 127.0.0.1 as Services appear.

What it does not model: scheduling (pods have no node; the API server deletes such pods at
once, without a grace period), images (the command runs on this machine's Python, in the
folder standing for the image's WORKDIR: e2e/images.py), resources, probes, and container
restarts (the hook's pods are `restartPolicy: Never`).
"""

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.cluster import ClusterError, Kubelet, write_hosts
from localcluster.rest import KubeError, Rest, path

POLL_SECONDS = 0.2


@dataclass
class Report:
    """One status the kubelet wrote for a pod: its phase and, once finished, the exit code."""

    pod: str
    phase: str
    exit_code: int | None

    def __str__(self) -> str:
        if self.phase == "deleted":
            return "deleted (process stopped)"
        return self.phase if self.exit_code is None else f"{self.phase} (exit {self.exit_code})"


@dataclass
class LocalKubelet:
    """Runs the pods of `namespace` as local processes while it is started (a context manager).

    `on_report(report)` is called after each status it writes (from its own threads)."""

    kube: Rest
    namespace: str
    log_dir: Path
    timeout: float
    on_report: Callable[[Report], None] = lambda report: None
    processes: Kubelet = field(init=False)
    reports: list[Report] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _services: set[str] = field(default_factory=set)
    _reported: dict[str, str] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def __post_init__(self) -> None:
        hosts = self.log_dir / "hosts"
        write_hosts(hosts, [])
        self.processes = Kubelet(hosts, self.log_dir, self.timeout)

    def __enter__(self) -> "LocalKubelet":
        ready = threading.Semaphore(0)
        for target in (self._follow_services, self._follow_pods):
            thread = threading.Thread(target=self._guarded, args=(target, ready), daemon=True)
            thread.start()
            self._threads.append(thread)
        for _ in range(2):
            if not ready.acquire(timeout=60):
                raise ClusterError(f"the local kubelet could not watch {self.namespace}")
        thread = threading.Thread(target=self._guarded, args=(self._report_loop, None))
        thread.daemon = True
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        with self._lock:
            self.processes.shutdown()

    def _guarded(self, target: Callable[[threading.Semaphore | None], None], ready: Any) -> None:
        try:
            target(ready)
        except Exception as error:  # reported by check(): a thread cannot raise to the caller
            self.errors.append(f"{target.__name__}: {error}")
            if ready is not None:
                ready.release()

    def check(self) -> None:
        """Raise what went wrong in the kubelet's threads, if anything did."""
        if self.errors:
            raise ClusterError("local kubelet: " + "; ".join(self.errors))

    # ---------------------------------------------------------------- watches

    def _follow_services(self, ready: threading.Semaphore) -> None:
        url = path("services", self.namespace)
        items, version = self.kube.list(url)
        self._on_services(["ADDED"] * len(items), items)
        ready.release()
        for event in self.kube.watch(url, version, self._stop):
            self._on_services([event["type"]], [event["object"]])

    def _on_services(self, kinds: list[str], services: list[dict[str, Any]]) -> None:
        with self._lock:
            for kind, service in zip(kinds, services, strict=True):
                name = service["metadata"]["name"]
                if kind == "DELETED":
                    self._services.discard(name)
                else:
                    self._services.add(name)
            write_hosts(self.processes.hosts_file, self._services)

    def _follow_pods(self, ready: threading.Semaphore) -> None:
        url = path("pods", self.namespace)
        items, version = self.kube.list(url)
        for pod in items:
            self._on_pod("ADDED", pod)
        ready.release()
        for event in self.kube.watch(url, version, self._stop):
            self._on_pod(event["type"], event["object"])

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        with self._lock:
            if kind == "DELETED":
                if name in self.processes.processes and name not in self.processes.deleted:
                    self.processes.stop(name)
                    report = Report(name, "deleted", None)
                    self.reports.append(report)
                    self.on_report(report)
                return
            if name in self.processes.processes or pod["metadata"].get("deletionTimestamp"):
                return
            self.processes.start(pod, self._config_map)
        self._report(name)

    def _config_map(self, name: str) -> dict[str, str]:
        document = self.kube.get(path("configmaps", self.namespace, name))
        return dict(document.get("data") or {})

    # ---------------------------------------------------------------- status

    def _report_loop(self, _: None) -> None:
        while not self._stop.wait(POLL_SECONDS):
            with self._lock:
                names = [n for n in self.processes.processes if n not in self.processes.deleted]
            for name in names:
                self._report(name)

    def _report(self, name: str) -> None:
        """Write the pod's status if it changed since the last one written."""
        with self._lock:
            if name in self.processes.deleted:
                return
            status = self.processes.status(name)
            state = status["containerStatuses"][0]["state"]
            code = state.get("terminated", {}).get("exitCode")
            key = f"{status['phase']}/{code}"
            if self._reported.get(name) == key:
                return
            self._reported[name] = key
        try:
            url = path("pods", self.namespace, name) + "/status"
            self.kube.merge_patch(url, {"status": status})
        except KubeError as error:
            if error.status_code != 404:  # deleted meanwhile: nothing to report to
                raise
            return
        report = Report(name, status["phase"], code)
        self.reports.append(report)
        self.on_report(report)

    # ---------------------------------------------------------------- for tests and the demo

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> None:
        with self._lock:
            self.processes.kill(name, sig)

    def running(self) -> list[str]:
        with self._lock:
            return self.processes.running()

    def log(self, name: str) -> str:
        return self.processes.log(name)

    def wait_idle(self, timeout: float) -> None:
        """Until no process runs (a finished job's clean-up has stopped the rest)."""
        deadline = time.monotonic() + timeout
        while self.running():
            self.check()
            if time.monotonic() > deadline:
                raise ClusterError(f"still running after {timeout} s: {self.running()}")
            time.sleep(POLL_SECONDS)
