"""The real Metacontroller and the real hook beside the loopback API server.

- `obtain_metacontroller` runs scripts/metacontroller-binary.sh (built from Metacontroller's
  source and cached; `METACONTROLLER_BIN` or `METACONTROLLER_SRC` override it);
  `metacontroller_source` finds that source the way the script does (fetching it if need be).
- `serve_hook` runs `python -m app serve` on a free loopback port; `Hook.down()` stops it for a
  while and starts it again on the same port (a hook outage).
- `grant_metacontroller` applies the ClusterRole and ClusterRoleBinding an install ships for
  Metacontroller; `run_metacontroller` runs Metacontroller out of cluster, as the ServiceAccount
  they bind (the kubeconfig `grant_metacontroller` returns) or as the admin.
- `delete_jobs` deletes the MXJobs earlier tests left, before Metacontroller starts.
- `install_controller` applies Metacontroller's CRDs and our CompositeController exactly as
  shipped (metacontroller/compositecontroller.yaml) except that its webhook points at the hook's
  loopback URL.
"""

import copy
import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import REPO, buildscript
from .apiserver import METACONTROLLER_USER, ApiServer
from .binaries import BUILD_TIMEOUT
from .buildscript import stop
from .errors import ClusterError
from .ports import free_port, free_ports
from .processes import http_ok, running, wait_until

SCRIPT = REPO / "scripts" / "metacontroller-binary.sh"
COMPOSITE_CONTROLLER = REPO / "metacontroller" / "compositecontroller.yaml"
EVENTS_COMPONENT = REPO / "manifests" / "components" / "events" / "kustomization.yaml"
FETCH_TIMEOUT = 900  # the script's own limits: 20 s to find no network, 600 s for the clone


@functools.cache
def metacontroller_source() -> Path:
    """Metacontroller v4.17.2's source, for its CRDs and manifests: `METACONTROLLER_SRC` as it
    is (what reads it names a wrong one), else the one scripts/metacontroller-binary.sh finds
    or fetches, as for the binary (it fails at once without a network, naming both ways out).
    Raises ClusterError with its message."""
    explicit = os.environ.get("METACONTROLLER_SRC")
    if explicit:
        return Path(explicit)
    live = lambda line: print(line, file=sys.__stderr__, flush=True)  # noqa: E731 (a fetch)
    try:
        found = buildscript.run(SCRIPT, ["source"], live, timeout=FETCH_TIMEOUT)
    except buildscript.BuildScriptError as error:
        errors = [line for line in str(error).splitlines() if ": ERROR: " in line]
        raise ClusterError("\n".join(errors) or str(error)) from None
    return found["METACONTROLLER_SOURCE"]


def metacontroller_crds() -> Path:
    source = metacontroller_source()
    for candidate in ("manifests/metacontroller-crds-v1.yaml",
                      "manifests/production/metacontroller-crds-v1.yaml"):  # fmt: skip
        if (source / candidate).is_file():
            return source / candidate
    raise ClusterError(
        f"no metacontroller-crds-v1.yaml under {source}/manifests: set METACONTROLLER_SRC to a "
        "checkout of Metacontroller v4.17.2 (its CRDs are read from there, even with "
        "METACONTROLLER_BIN)"
    )


def obtain_metacontroller(progress: Callable[[str], None]) -> Path:
    """The Metacontroller binary (a cold build takes a minute or more)."""
    try:
        return buildscript.run(SCRIPT, [], progress, timeout=BUILD_TIMEOUT)["METACONTROLLER"]
    except buildscript.BuildScriptError as error:
        raise ClusterError(str(error)) from None
    except KeyError:
        raise ClusterError(f"{SCRIPT} printed no METACONTROLLER=<path>") from None


@dataclass
class Hook:
    """The hook's process on a fixed loopback port. `down()` stops it for a while (a hook
    outage) and starts it again on the same port, so Metacontroller's URL stays valid."""

    url: str
    log: Path
    process: subprocess.Popen[bytes]
    port: int = 0
    env: dict[str, str] = field(default_factory=dict)

    def syncs(self, namespace: str, name: str) -> int:
        """How many syncs of this job the hook has answered (it logs one line per sync)."""
        count = 0
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict):
                continue
            job = (entry.get("namespace"), entry.get("job"))
            count += job == (namespace, name) and entry.get("status") == 200
        return count

    @contextmanager
    def down(self) -> Iterator[None]:
        """The hook is stopped inside the block and serves again, same port, when it ends."""
        stop(self.process)
        try:
            yield
        finally:
            self.process = _start_hook(self.port, self.log, self.env)
            wait_until(lambda: http_ok(f"{self.url}/healthz"), self.process, self.log, "the hook")


def hook_command(port: int, host: str = "127.0.0.1") -> list[str]:
    """The hook's command line, as `make run` serves it, on this Python."""
    return [sys.executable, "-m", "app", "serve", "--host", host, "--port", str(port)]


def _start_hook(port: int, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(
            hook_command(port), cwd=REPO, env={**os.environ, **env}, stdout=sink,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip


@contextmanager
def serve_hook(workdir: Path, env: dict[str, str] | None = None) -> Iterator[Hook]:
    """The real hook (`python -m app serve`) on a free loopback port."""
    port = free_port()
    log = workdir / f"hook-{port}.log"
    hook = Hook(f"http://127.0.0.1:{port}", log, _start_hook(port, log, env or {}), port, env or {})
    try:
        wait_until(lambda: http_ok(f"{hook.url}/healthz"), hook.process, log, "the hook")
        yield hook
    finally:
        stop(hook.process)


# How the API server words a refusal for want of a right: RBAC's, and the owner-reference
# plugin's (its message names no user).
RIGHT_REFUSED = (" is forbidden: User ", "cannot set blockOwnerDeletion")


@dataclass(frozen=True)
class Metacontroller:
    log: Path
    process: subprocess.Popen[bytes]
    metrics_url: str

    def refusals(self) -> list[str]:
        """Its log lines that tell of a request the API server refused (403) for want of a
        right: a rule its role lacks, or one OwnerReferencesPermissionEnforcement asks for
        (`cannot set blockOwnerDeletion ...`). Not other 403s, such as a create in a namespace
        being deleted. It logs a refused watch and goes on, so only its log shows it."""
        lines = self.log.read_text(errors="replace").splitlines()
        return [line for line in lines if any(why in line for why in RIGHT_REFUSED)]


def binds_metacontroller(binding: dict[str, Any]) -> bool:
    """The binding's subjects include Metacontroller's ServiceAccount (`METACONTROLLER_USER`)."""
    _, _, namespace, name = METACONTROLLER_USER.split(":")
    account = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    return any({k: s.get(k) for k in account} == account for s in binding.get("subjects") or [])


def metacontroller_access(
    documents: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ClusterRoleBindings and RoleBindings among `documents` (an install's objects) that
    bind Metacontroller's ServiceAccount, and the roles they name: (roles, bindings)."""
    bindings = [
        d for d in documents
        if d["kind"] in ("ClusterRoleBinding", "RoleBinding") and binds_metacontroller(d)
    ]  # fmt: skip
    named = {_role_key(b, b["roleRef"]["kind"], b["roleRef"]["name"]) for b in bindings}
    roles = [
        d for d in documents
        if d["kind"] in ("ClusterRole", "Role")
        and _role_key(d, d["kind"], d["metadata"]["name"]) in named
    ]  # fmt: skip
    if not any(b["kind"] == "ClusterRoleBinding" for b in bindings) or len(roles) != len(named):
        raise ClusterError(f"no ClusterRole bound to {METACONTROLLER_USER} among the objects given")
    return roles, bindings


def grant_metacontroller(server: ApiServer, documents: Sequence[dict[str, Any]]) -> Path:
    """Apply `metacontroller_access(documents)` exactly as it is (with the namespaces its Roles
    live in); return the kubeconfig that authenticates as Metacontroller's ServiceAccount, for
    `run_metacontroller`."""
    roles, bindings = metacontroller_access(documents)
    namespaces = sorted({d["metadata"]["namespace"] for d in roles if d["kind"] == "Role"})
    namespace = {"apiVersion": "v1", "kind": "Namespace"}
    server.apply(*({**namespace, "metadata": {"name": n}} for n in namespaces), *roles, *bindings)
    return server.metacontroller_kubeconfig


def _role_key(document: dict[str, Any], kind: str, name: str) -> tuple[str, str, str]:
    """A role's identity: its kind, namespace (a Role's, or its binding's) and name."""
    namespace = document["metadata"].get("namespace", "") if kind == "Role" else ""
    return kind, namespace, name


@contextmanager
def run_metacontroller(
    binary: Path,
    server: ApiServer,
    workdir: Path,
    flags: tuple[str, ...] = (),
    kubeconfig: Path | None = None,
) -> Iterator[Metacontroller]:
    """Metacontroller out of cluster against `server`; `flags` are added to its command line
    (for example `--client-go-qps=50`). Several may run at once, each on ports of its own. It
    acts as whoever `kubeconfig` authenticates (`grant_metacontroller`), by default the admin."""
    health, metrics = free_ports(2)
    log = workdir / f"metacontroller-{health}.log"
    command = [
        str(binary), f"--kubeconfig={kubeconfig or server.kubeconfig}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        f"--metrics-address=127.0.0.1:{metrics}", "--discovery-interval=2s",
        "--zap-log-level=4", *flags,
    ]  # fmt: skip
    with running(command, log) as process:
        ready = f"http://127.0.0.1:{health}/readyz"
        wait_until(lambda: http_ok(ready), process, log, "metacontroller")
        yield Metacontroller(log, process, f"http://127.0.0.1:{metrics}/metrics")


def composite_controller(
    hook_url: str, config_maps: bool = True, events: bool = False
) -> dict[str, Any]:
    """Our CompositeController as shipped, with the webhook pointed at `hook_url`; without
    `config_maps`, without its ConfigMap children (every pod then carries MX_CONFIG whole); with
    `events`, with the Event children the events component adds (manifests/components/events)."""
    shipped: dict[str, Any] = yaml.safe_load(COMPOSITE_CONTROLLER.read_text())
    controller = copy.deepcopy(shipped)
    if not config_maps:
        children = controller["spec"]["childResources"]
        controller["spec"]["childResources"] = [
            c for c in children if c["resource"] != "configmaps"
        ]
    if events:
        component = yaml.safe_load(EVENTS_COMPONENT.read_text())
        (operation,) = yaml.safe_load(component["patches"][0]["patch"])
        if operation["path"] != "/spec/childResources/-":
            raise ValueError(f"{EVENTS_COMPONENT} no longer adds a child type: {operation}")
        controller["spec"]["childResources"].append(operation["value"])
    webhook = controller["spec"]["hooks"]["sync"]["webhook"]
    path = webhook.pop("path", "/sync")
    webhook.pop("service", None)
    webhook["url"] = f"{hook_url}{path}"
    return controller


def delete_jobs(server: ApiServer) -> None:
    """Delete every MXJob. Tests that ran before the real stack started (admission, golden
    answers) leave jobs that no controller ran; Metacontroller would sync them all first, at
    its 5 writes a second, ahead of the jobs of the tests that follow."""
    server.kubectl("delete", "mxjobs.kubeflow.org", "--all", "--all-namespaces", "--wait=false")


def install_controller(server: ApiServer, hook_url: str, config_maps: bool = True) -> None:
    """Metacontroller's CRDs, then our CompositeController for the hook at `hook_url`
    (`composite_controller`)."""
    crds = [d for d in yaml.safe_load_all(metacontroller_crds().read_text()) if d]
    server.apply(*crds)
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    server.wait_established(*names)
    server.apply(composite_controller(hook_url, config_maps))
