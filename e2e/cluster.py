"""Test doubles for the kubelet and the API server: an MXJob's pods as local processes.

Nothing here is Kubernetes, and nothing here decides anything about the job: that is the real
hook's work. `ApiServer` is a dict of the children Metacontroller would have written;
`Kubelet` runs each pod's `mxnet` container as one local process with exactly the command,
args and env the hook put on it, and reports the process back as the pod's status.

What differs from a cluster, on purpose and only here:
- Name resolution. Every Service name resolves to 127.0.0.1 through a private `/etc/hosts`
  bind-mounted in a mount namespace of the process's own (`unshare --mount`, needs root). The
  hook's `DMLC_*` values are used unchanged.
- `LOCAL_ENV`, added to every process and never overriding a variable the hook set: all
  processes share one host, so ps-lite must advertise loopback (see `LOCAL_ENV`).
- The container image is not run: the process is `command + args` on this machine's Python,
  in `WORKDIR` (the repository root), with this venv's `bin` first on PATH.
"""

import copy
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app import kubeenv

WORKDIR = Path(__file__).resolve().parent.parent
MAIN_CONTAINER = "mxnet"
CONFIG_MAP = "ConfigMap.v1"
POD = "Pod.v1"
SERVICE = "Service.v1"
NAMESPACE = "default"

# ps-lite's servers and workers advertise an address to the scheduler: DMLC_NODE_HOST if set,
# else DMLC_INTERFACE's address, else the first non-loopback interface's (eth0 here). In a pod
# that is the pod IP; on one shared host it must be loopback, or peers would connect to the
# machine's external address. The hook never sets this variable, so adding it rewrites nothing.
LOCAL_ENV = {"DMLC_NODE_HOST": "127.0.0.1"}
# What a container image would provide and the hook does not: where programs and home are.
INHERITED = ("HOME", "LANG", "LC_ALL", "TMPDIR")
GRACE_SECONDS = 2.0

# `unshare` and `sh` both exec, so the PID we hold is the container's own process.
_UNSHARE = ("unshare", "--mount", "--propagation", "private", "--")
_PRIVATE_HOSTS = (*_UNSHARE, "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"')


class ClusterError(RuntimeError):
    """A pod this double cannot run as asked (it says why)."""


def preflight() -> None:
    """Fail early, saying what is missing, when this machine cannot run the pods at all."""
    checks = {
        "MXNet (pip install -r requirements-dev.txt)": [sys.executable, "-c", "import mxnet"],
        "a mount namespace (unshare --mount, needs root)": [*_UNSHARE, "true"],
    }
    for what, command in checks.items():
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise ClusterError(f"cannot run {what}: {err}") from None
        if done.returncode != 0:
            raise ClusterError(f"cannot run {what}: {done.stderr.strip()[-2000:]}")


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def exit_code(returncode: int) -> int:
    """A container's exit code as Kubernetes reports it: 128 + N for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def write_hosts(path: Path, names: Iterable[str]) -> None:
    """Rewrite the private hosts file in place: bind mounts hold its inode, not its name."""
    lines = ["127.0.0.1 localhost", *(f"127.0.0.1 {name}" for name in sorted(names))]
    path.write_text("\n".join(lines) + "\n")


def container_env(
    container: dict[str, Any], config_maps: dict[str, dict[str, Any]]
) -> dict[str, str]:
    """The container's env as the kubelet resolves and expands it (app.kubeenv, shared with
    `render --expand` and the tests). Headless Services give no service variables."""
    try:
        return kubeenv.resolve(container, config_maps)
    except kubeenv.EnvError as err:
        raise ClusterError(str(err)) from None


def process_env(
    container: dict[str, Any], config_maps: dict[str, dict[str, Any]]
) -> dict[str, str]:
    """Exactly the hook's env, plus what a local process needs and the hook never sets."""
    env = container_env(container, config_maps)
    clash = sorted(set(env) & set(LOCAL_ENV))
    if clash:
        raise ClusterError(f"the pod already sets {clash}; refusing to override it locally")
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    inherited = {k: os.environ[k] for k in INHERITED if k in os.environ}
    return inherited | {"PATH": path} | LOCAL_ENV | env


def main_container(pod: dict[str, Any]) -> dict[str, Any]:
    for container in pod["spec"]["containers"]:
        if container["name"] == MAIN_CONTAINER:
            return dict(container)
    raise ClusterError(f"pod {pod['metadata']['name']} has no {MAIN_CONTAINER!r} container")


def argv(container: dict[str, Any]) -> list[str]:
    if not container.get("command"):
        raise ClusterError("no image entrypoint here: the container needs a command")
    return [*container["command"], *(container.get("args") or [])]


@dataclass
class Process:
    """One pod's `mxnet` container running as a local process."""

    name: str
    labels: dict[str, str]
    popen: subprocess.Popen[bytes]
    log: Path
    started_at: str
    deadline: float
    finished_at: str | None = None
    timed_out: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def exit_code(self) -> int | None:
        code = self.popen.returncode
        return None if code is None else exit_code(code)

    def poll(self) -> None:
        """Reap the process if it has exited; SIGKILL it once past its deadline."""
        if self.popen.poll() is None and time.monotonic() > self.deadline:
            self.timed_out = True
            self.popen.kill()
            self.popen.wait()
        if self.popen.returncode is not None and self.finished_at is None:
            self.finished_at = now_stamp()


@dataclass
class Kubelet:
    """Test double for the kubelet: one local process per pod, every one bounded in time.

    Supports the pod `restartPolicy` the hook gives `Never` and `ExitCode` replicas: a
    finished container stays finished (replacing it is the hook's job, under a new name).
    """

    hosts_file: Path
    log_dir: Path
    timeout: float
    # Every pod ever started, deleted ones too: their logs outlive them, as in `kubectl logs -p`.
    processes: dict[str, Process] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)

    def start(self, pod: dict[str, Any], config_maps: dict[str, dict[str, Any]]) -> None:
        name = pod["metadata"]["name"]
        if name in self.processes:
            raise ClusterError(f"pod {name} was started before; a name is never reused here")
        if pod["spec"].get("restartPolicy", "Always") != "Never":
            raise ClusterError(f"pod {name}: only restartPolicy Never runs locally")
        container = main_container(pod)
        log = self.log_dir / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [*_PRIVATE_HOSTS, str(self.hosts_file), *argv(container)],
                cwd=container.get("workingDir") or WORKDIR,
                env=process_env(container, config_maps),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + self.timeout
        labels = dict(pod["metadata"].get("labels") or {})
        self.processes[name] = Process(name, labels, popen, log, now_stamp(), deadline)

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """What a signal from inside the container, or the OOM killer, would do to it."""
        process = self.processes[name]
        if process.popen.poll() is None:
            os.kill(process.pid, sig)
        process.popen.wait(timeout=GRACE_SECONDS * 5)
        process.poll()

    def stop(self, name: str) -> None:
        """Pod deletion: SIGTERM, a short grace period, then SIGKILL."""
        self.deleted.add(name)
        process = self.processes[name]
        if process.popen.poll() is None:
            process.popen.terminate()
            try:
                process.popen.wait(timeout=GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait()

    def poll(self) -> None:
        for process in self.processes.values():
            process.poll()

    def shutdown(self) -> None:
        """Kill every process this kubelet started, by PID, and reap it."""
        for process in self.processes.values():
            if process.popen.poll() is None:
                process.popen.kill()
            process.popen.wait()

    def log(self, name: str) -> str:
        """`kubectl logs`: the container's stdout and stderr, also after it was deleted."""
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def running(self) -> list[str]:
        return [n for n, p in self.processes.items() if p.popen.poll() is None]

    def status(self, name: str) -> dict[str, Any]:
        """The pod's `.status` as the kubelet would report it."""
        process = self.processes[name]
        code = process.exit_code
        if code is None:
            state = {"running": {"startedAt": process.started_at}}
            phase = "Running"
        else:
            state = {"terminated": _terminated(process, code)}
            phase = "Succeeded" if code == 0 else "Failed"
        container = {"name": MAIN_CONTAINER, "state": state, "ready": code is None}
        return {"phase": phase, "containerStatuses": [container | {"restartCount": 0}]}


def _terminated(process: Process, code: int) -> dict[str, Any]:
    return {
        "exitCode": code,
        "reason": "Completed" if code == 0 else "Error",
        "startedAt": process.started_at,
        "finishedAt": process.finished_at,
    }


@dataclass
class Changes:
    """What one apply did."""

    created: list[str]
    deleted: list[str]


@dataclass
class ApiServer:
    """Test double for the API server: the parent's children as dicts, applied like Metacontroller.

    Pods are created and deleted but never updated (`OnDelete`); Services and ConfigMaps are
    updated in place (`InPlace`), which the hook relies on to carry its restart records.
    Creating a pod hands it to the kubelet with the ConfigMaps it may read; deleting one stops
    its process. Every Service name resolves to loopback.
    """

    kubelet: Kubelet
    parent_uid: str
    children: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {CONFIG_MAP: {}, POD: {}, SERVICE: {}}
    )

    def observed(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The `children` of a sync request: what exists, pods with their current status."""
        self.kubelet.poll()
        pods = {n: p | {"status": self.kubelet.status(n)} for n, p in self.children[POD].items()}
        return copy.deepcopy(self.children | {POD: pods})

    def apply(self, desired: list[dict[str, Any]]) -> Changes:
        """Make the children exactly `desired`, as Metacontroller does with a sync's answer."""
        wanted = {(_key(c), c["metadata"]["name"]): c for c in desired}
        unknown = sorted({k for k, _ in wanted} - set(self.children))
        if unknown:
            raise ClusterError(f"the hook returned child types nobody declared: {unknown}")
        gone = [(k, n) for k, named in self.children.items() for n in named if (k, n) not in wanted]
        for kind, name in gone:
            del self.children[kind][name]
            if kind == POD:
                self.kubelet.stop(name)
        created = [n for k, n in wanted if k == POD and n not in self.children[POD]]
        for (kind, name), child in wanted.items():
            self._put(kind, name, child)
        write_hosts(self.kubelet.hosts_file, self.children[SERVICE])
        for name in created:
            self.kubelet.start(self.children[POD][name], self.children[CONFIG_MAP])
        return Changes(created, [f"{k.split('.')[0]} {n}" for k, n in gone])

    def _put(self, kind: str, name: str, child: dict[str, Any]) -> None:
        existing = self.children[kind].get(name)
        if existing is not None and kind == POD:
            return
        meta = existing["metadata"] if existing else _identity(self.parent_uid)
        fresh = copy.deepcopy(child)
        labels = fresh["metadata"].get("labels", {}) | {"controller-uid": self.parent_uid}
        fresh["metadata"] = meta | fresh["metadata"] | {"labels": labels}
        self.children[kind][name] = fresh


def _identity(parent_uid: str) -> dict[str, Any]:
    """What the API server and Metacontroller add to a child they create."""
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "uid": parent_uid}
    owner |= {"controller": True, "blockOwnerDeletion": True}
    return {
        "namespace": NAMESPACE,
        "uid": str(uuid.uuid4()),
        "creationTimestamp": now_stamp(),
        "ownerReferences": [owner],
    }


def _key(child: dict[str, Any]) -> str:
    return f"{child['kind']}.{child['apiVersion']}"
