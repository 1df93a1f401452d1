"""The upgrade test's installs (tests/apiserver/test_upgrade.py): a release's hook as a process
from its own tree, its install by kustomize or Helm, Metacontroller's access and flags under it,
and the writes to a job's children that the API server's audit log records."""

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from localcluster.apiserver import ApiServer, http_ok, wait_until
from localcluster.buildscript import stop
from localcluster.realstack import Hook, grant_metacontroller, hook_command
from scripts.bench.observe import audit_events
from tests.support import REPO
from tests.support.kustomize import built
from tests.support.loopback import rendered
from tests.support.scenario import Job, content

NAMESPACE = "mxjob-system"  # where both installs put the hook, as their docs say
CHILDREN = ("pods", "services", "configmaps")
CREATED_BY_APPLY = 201


def hook_env() -> dict[str, str]:
    """The environment without PYTHONPATH: `python -m app` in a tree runs that tree's app."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


class Hooks:
    """One hook process at a time on a fixed loopback port (a Deployment behind its Service):
    `serve(tree)` replaces the running one with that tree's."""

    def __init__(self, workdir: Path, port: int) -> None:
        self.workdir, self.port = workdir, port
        self.url = f"http://127.0.0.1:{port}"
        self.current: Hook | None = None

    def serve(self, tree: Path, name: str) -> Hook:
        self.stop()
        log = self.workdir / f"hook-{name}.log"
        with log.open("ab") as sink:
            process = subprocess.Popen(
                hook_command(self.port), cwd=tree, env=hook_env(), stdout=sink,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        self.current = Hook(self.url, log, process, self.port)
        wait_until(lambda: http_ok(f"{self.url}/healthz"), process, log, f"the hook ({name})")
        return self.current

    def stop(self) -> None:
        if self.current is not None:
            stop(self.current.process)
            self.current = None


class Install(Protocol):
    """How an install is made, moved to another release's files, and removed."""

    def install(self, tree: Path) -> None: ...
    def upgrade(self, tree: Path) -> None: ...
    def rollback(self, tree: Path) -> None: ...
    def remove(self) -> None: ...


@dataclass
class Kustomize:
    """`kubectl apply -k manifests/overlays/standalone` of a release's checkout, every step."""

    server: ApiServer
    hook_url: str
    applied: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    def install(self, tree: Path) -> None:
        text = rendered(built(tree / "manifests" / "overlays" / "standalone"), self.hook_url)
        self.server.kubectl("apply", "-f", "-", input=text)
        for d in yaml.safe_load_all(text):
            if d:
                key = (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
                self.applied[key] = d

    upgrade = rollback = install

    def remove(self) -> None:
        """Delete what any of its applies made (a rollback's apply leaves what only the newer
        release has, such as its PriorityClass); the Namespace stays (no controller here
        would finish deleting it)."""
        kept = [d for d in self.applied.values() if d["kind"] != "Namespace"]
        self.server.kubectl(
            "delete", "--ignore-not-found", "-f", "-", input=yaml.safe_dump_all(kept)
        )


@dataclass
class Helm:
    """`helm install` of a release's chart, then `helm upgrade` and `helm rollback`, with a
    post-renderer that points the webhook at the loopback hook."""

    server: ApiServer
    hook_url: str
    binary: Path
    workdir: Path

    def helm(self, *args: str) -> None:
        renderer = self.workdir / "loopback-renderer"
        renderer.write_text(
            f"#!/bin/sh\ncd '{REPO}' && exec '{sys.executable}' -m tests.support.loopback "
            f"'{self.hook_url}'\n"
        )
        renderer.chmod(0o755)
        done = subprocess.run(
            [str(self.binary), f"--kubeconfig={self.server.kubeconfig}", "-n", NAMESPACE, *args],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"

    def chart(self, tree: Path) -> tuple[str, ...]:
        renderer = str(self.workdir / "loopback-renderer")
        return (str(tree / "charts" / "mxjob-controller"), "--post-renderer", renderer)

    def install(self, tree: Path) -> None:
        self.helm("install", "mxjob-controller", *self.chart(tree), "--create-namespace")

    def upgrade(self, tree: Path) -> None:
        # The user's values kept, the new chart's defaults for the rest (docs/install.md).
        self.helm("upgrade", "mxjob-controller", *self.chart(tree), "--reset-then-reuse-values")

    def rollback(self, tree: Path) -> None:
        self.helm("rollback", "mxjob-controller", "1")

    def remove(self) -> None:
        self.helm("uninstall", "mxjob-controller")
        self.server.kubectl("delete", "crd", "mxjobs.kubeflow.org")  # the chart keeps it


def release_access(server: ApiServer) -> Path:
    """Metacontroller's release ClusterRole (every verb on every resource), which release
    0.2.0's with-metacontroller overlay kept, bound to its ServiceAccount; the upgrade narrows
    it to this version's role (`shipped_access`) and a rollback widens it again."""
    rbac = REPO / "manifests" / "third_party" / "metacontroller" / "metacontroller-rbac.yaml"
    return grant_metacontroller(server, [d for d in yaml.safe_load_all(rbac.read_text()) if d])


def release_flags(tree: Path) -> tuple[str, ...]:
    """What a release's with-metacontroller overlay added to Metacontroller's arguments."""
    patch = tree / "manifests" / "overlays" / "with-metacontroller" / "metacontroller-flags.yaml"
    ops = yaml.safe_load(patch.read_text())
    return tuple(
        str(op["value"]) for op in ops if op["op"] in ("add", "replace") and "/args/" in op["path"]
    )


def identities(jobs: tuple[Job, ...]) -> dict[str, str]:
    """`Kind/name` of every child of the jobs, with its uid."""
    return {key: uid for key, (uid, *_) in contents(jobs).items()}


def contents(jobs: tuple[Job, ...]) -> dict[str, tuple[str, Any, Any, Any]]:
    """`Kind/name` of every child of the jobs, with its uid, labels, spec and data."""
    return {key: content(child) for job in jobs for key, child in job.children().items()}


def child_writes(audit: Path, offset: int, namespace: str) -> list[tuple[str, str, str]]:
    """(verb, resource, name) of each create, update, patch or delete of a pod, Service or
    ConfigMap of `namespace` (status included) the audit log records after `offset`. Under
    server-side apply Metacontroller creates a child with an apply patch: one answered 201 is
    a create (the log names the object; it does not for a POST at this level)."""
    found = []
    for event in audit_events(audit, offset):
        ref = event.get("objectRef") or {}
        verb = event["verb"]
        if verb == "patch" and event.get("responseStatus", {}).get("code") == CREATED_BY_APPLY:
            verb = "create"
        ours = ref.get("namespace") == namespace and ref.get("resource") in CHILDREN
        if ours and verb in ("create", "update", "patch", "delete"):
            found.append((verb, ref["resource"], ref.get("name", "")))
    return found


def replaced(writes: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The writes that create or delete a child, or touch a pod."""
    return [w for w in writes if w[0] in ("create", "delete") or w[1] == "pods"]


def child_key(write: tuple[str, str, str]) -> str:
    kinds = {"pods": "Pod", "services": "Service", "configmaps": "ConfigMap"}
    return f"{kinds[write[1]]}/{write[2]}"
