"""An MXJob's pods as local processes: the process side of the local kubelet (e2e/kubelet.py).

Nothing here decides anything about the job: that is the real hook's work, through the real
Metacontroller and API server. `Kubelet` runs each pod's `mxnet` container as one local process
with exactly the command, args and env the pod has (env resolved as the kubelet resolves it),
and says how each process is doing as a pod status.

What differs from a cluster, on purpose and only here:
- Name resolution. Every Service name resolves to 127.0.0.1 through a private `/etc/hosts`
  bind-mounted in a mount namespace of the process's own (`unshare --mount`, needs root). The
  hook's `DMLC_*` values are used unchanged.
- `LOCAL_ENV`, added to every process and never overriding a variable the hook set: all
  processes share one host, so ps-lite must advertise loopback (see `LOCAL_ENV`).
- The container image is not run: the process is `command + args` on this machine's Python,
  with this venv's `bin` first on PATH, in the folder that stands for the image's WORKDIR
  (e2e/images.py: examples/image for the examples image, the repository root for the checks').
"""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.core.model.errors import EnvError
from app.core.mxnet import kubeenv
from e2e import images
from localcluster import errors, kubelet
from localcluster.kubelet import MAIN_CONTAINER

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


class ClusterError(errors.ClusterError):
    """A pod this double cannot run as asked (it says why); a failure of the local cluster
    like the API server's not starting, so that one `except` catches both."""


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


def exit_code(returncode: int) -> int:
    """A container's exit code as Kubernetes reports it: 128 + N for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def write_hosts(path: Path, names: Iterable[str]) -> None:
    """Rewrite the private hosts file in place: bind mounts hold its inode, not its name."""
    lines = ["127.0.0.1 localhost", *(f"127.0.0.1 {name}" for name in sorted(names))]
    path.write_text("\n".join(lines) + "\n")


# A ConfigMap's data by name, read from the API server (a `configMapKeyRef` names one).
ConfigMaps = Callable[[str], dict[str, str]]


class _ConfigMapsByName(Mapping[str, Mapping[str, Any]]):
    """The ConfigMaps a container names, read from the API server when it asks for one."""

    def __init__(self, lookup: ConfigMaps) -> None:
        self._lookup = lookup

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        return {"data": self._lookup(name)}

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def container_env(container: dict[str, Any], config_maps: ConfigMaps) -> dict[str, str]:
    """The container's env as the kubelet resolves and expands it (app.core.mxnet.kubeenv,
    shared with `render --expand` and the tests). Headless Services give no service variables."""
    try:
        return kubeenv.resolve(container, _ConfigMapsByName(config_maps))
    except EnvError as err:
        raise ClusterError(str(err)) from None


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion of a command or argument (app.core.mxnet.kubeenv)."""
    return kubeenv.expand(value, env)


def process_env(env: dict[str, str]) -> dict[str, str]:
    """Exactly the container's env, plus what a local process needs and the hook never sets."""
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


def argv(container: dict[str, Any], env: dict[str, str]) -> list[str]:
    """Command and args, `$(VAR)` references expanded as the kubelet does."""
    if not container.get("command"):
        raise ClusterError("no image entrypoint here: the container needs a command")
    return [expand(str(a), env) for a in (*container["command"], *(container.get("args") or []))]


def local_workdir(image: str) -> Path:
    """The folder standing for `image`'s WORKDIR, or a ClusterError naming the images known."""
    folder = images.WORKDIRS.get(image)
    if folder is None:
        known = ", ".join(sorted(images.WORKDIRS))
        raise ClusterError(f"no local stand-in for image {image!r}; it runs only {known}")
    return folder


@dataclass
class Process:
    """One pod's `mxnet` container running as a local process."""

    name: str
    labels: dict[str, str]
    image: str
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
            self.finished_at = kubelet.now_stamp()


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

    def start(self, pod: dict[str, Any], config_maps: ConfigMaps) -> None:
        name = pod["metadata"]["name"]
        if name in self.processes:
            raise ClusterError(f"pod {name} was started before; a name is never reused here")
        if pod["spec"].get("restartPolicy", "Always") != "Never":
            raise ClusterError(f"pod {name}: only restartPolicy Never runs locally")
        container = main_container(pod)
        env = container_env(container, config_maps)
        cwd = container.get("workingDir") or local_workdir(str(container.get("image", "")))
        log = self.log_dir / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [*_PRIVATE_HOSTS, str(self.hosts_file), *argv(container, env)],
                cwd=cwd,
                env=process_env(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + self.timeout
        labels = dict(pod["metadata"].get("labels") or {})
        self.processes[name] = Process(
            name,
            labels,
            str(container.get("image", "")),
            popen,
            log,
            kubelet.now_stamp(),
            deadline,
        )

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
        process.poll()
        code = process.exit_code
        if code is None:
            return kubelet.running(process.started_at, process.image)
        finished = process.finished_at or kubelet.now_stamp()
        return kubelet.terminated(process.started_at, finished, process.image, code)
