"""Upgrading an install of release 0.2.0 to this version with jobs running, and rolling back,
by kustomize and by Helm, on a stack of its own: the real API server with its audit log, the
real Metacontroller, and each release's hook as a process from its own code (release 0.2.0's
from the repository's history, extracted at test time).

Under 0.2.0, as its docs installed it (`kubectl apply -k manifests/overlays/standalone`, or
`helm install` of its chart; Metacontroller with its `with-metacontroller` flags), four jobs are
brought to the states a cluster has at any moment: running, restarted once (a SIGKILLed worker
replaced), suspended, and finished with its TTL pending. Then the install is upgraded as
docs/install.md says: the new manifests (CRD first), the new hook, Metacontroller with this
version's flags. What it shows:
1. the upgrade creates, deletes or writes no pod, and creates or deletes no Service or
   ConfigMap (audit log: Metacontroller, restarted, re-applies each Service and ConfigMap once,
   unchanged); every child keeps its name and uid; the restarted job's count is 1;
2. every job then ends as it would have: the pods finish, the suspended job resumes and
   succeeds, the TTL removes the finished job's children on time; no child that existed at the
   upgrade is created again, and only the TTL deletes any;
3. back to 0.2.0 (its manifests, its hook, its flags) with a job restarted under this version:
   again no child created or deleted and no pod written, and the job still succeeds; its
   `status.restartCount`, which 0.2.0 does not know, goes.
Release 0.2.0 had no Kueue component, so no job is queued.
"""

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest
import yaml

from localcluster.apiserver import ApiServer, Binaries, cluster, http_ok, wait_until
from localcluster.buildscript import stop
from localcluster.kubelet import Kubelet
from localcluster.ports import free_port
from localcluster.realstack import (
    Hook,
    grant_metacontroller,
    hook_command,
    metacontroller_crds,
    run_metacontroller,
)
from localcluster.rest import Rest
from localcluster.stack import shipped_flags
from localcluster.waiting import wait_for
from scripts.bench.observe import audit_events
from tests.support import REPO
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.kustomize import built, shipped_access
from tests.support.loopback import rendered
from tests.support.scenario import (
    CREATED,
    RUNNING,
    Job,
    State,
    content,
    manifest,
    pods,
    run_job,
)

RELEASE = "0.2.0"
# Release 0.2.0 has no tag: this is main's last commit at that version (its next one, a merge,
# made it 0.2.1). Its [Unreleased] section is empty: it is the release's code.
RELEASE_COMMIT = "2e04a9bb03a750d27662088cc5e0f71ccc1014e8"
NAMESPACE = "mxjob-system"  # where both installs put the hook, as their docs say
SUCCEEDED = CREATED | {"Succeeded": "MXJobSucceeded"}
SUSPENDED = CREATED | {"Suspended": "MXJobSuspended"}
TTL = 90  # seconds: pending through the upgrade (measured 27-52 s on 2 loaded cores)
LATE = 10  # how late the TTL may fire (test_real_job_life.py's bound)
CHILDREN = ("pods", "services", "configmaps")
CREATED_BY_APPLY = 201


@dataclass(frozen=True)
class Stack:
    server: ApiServer
    audit: Path
    binary: Path
    workdir: Path


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Release 0.2.0's files, from the repository's history (`git archive`)."""
    tree = tmp_path_factory.mktemp(f"release-{RELEASE}")
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", RELEASE_COMMIT],
        capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    if archive.returncode != 0:
        pytest.fail(
            f"git archive {RELEASE_COMMIT} (release {RELEASE}) failed: the upgrade test needs "
            f"the repository's history (not a shallow clone): {archive.stderr.decode()}",
            pytrace=False,
        )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True, timeout=120)
    version = subprocess.run(
        [sys.executable, "-m", "app", "--version"], cwd=tree, env=hook_env(),
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert version == ["mxjob-controller", RELEASE], "the old tree's hook runs its own code"
    # Its hook runs on this venv: every pin of its runtime requirements is one of today's.
    old, new = (pins(t / "requirements.txt") for t in (tree, REPO))
    assert old <= new, (
        f"requirements.txt no longer pins {sorted(old - new)} as {RELEASE} did: run its hook "
        "from a venv of its own"
    )
    return tree


def pins(requirements: Path) -> set[str]:
    """The `name==version` lines of a requirements file."""
    lines = (line.split("#")[0].strip() for line in requirements.read_text().splitlines())
    return {line for line in lines if line}


@pytest.fixture(scope="module")
def stack(
    k8s_binaries: Binaries, metacontroller_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("upgrade")
    audit = workdir / "audit.log"
    with fail_on_cluster_error(), cluster(k8s_binaries, workdir, audit_log=audit) as server:
        crds = [d for d in yaml.safe_load_all(metacontroller_crds().read_text()) if d]
        server.apply(*crds)
        server.wait_established(*(f"crd/{crd['metadata']['name']}" for crd in crds))
        yield Stack(server, audit, metacontroller_binary, workdir)


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
    applied: str = ""

    def install(self, tree: Path) -> None:
        self.applied = rendered(
            built(tree / "manifests" / "overlays" / "standalone"), self.hook_url
        )
        self.server.kubectl("apply", "-f", "-", input=self.applied)

    upgrade = rollback = install

    def remove(self) -> None:
        # The Namespace stays (no controller here would finish deleting it).
        kept = [d for d in yaml.safe_load_all(self.applied) if d and d["kind"] != "Namespace"]
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


def single(name: str, **run_policy: Any) -> dict[str, Any]:
    """examples/single-worker.yaml named `name`, replaced on a SIGKILL (restartPolicy ExitCode)."""
    job = manifest("examples/single-worker.yaml")
    job["metadata"]["name"] = name
    job["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    job["spec"]["runPolicy"] = run_policy
    return job


def worker(job: str, attempt: int = 0) -> str:
    return f"{job}-worker-0" + (f"-r{attempt}" if attempt else "")


def restarted_once(server: ApiServer, rest: Rest, namespace: str, name: str) -> Job:
    """A job whose worker was SIGKILLed and replaced, the replacement running."""
    job = run_job(server, rest, namespace, single(name))
    kubelet = Kubelet(rest, namespace)
    kubelet.exit(worker(name), 137)
    wait_for(lambda: worker(name, 1) in job.state().pods, "a replacement")
    kubelet.run(worker(name, 1))
    job.reaches(State(RUNNING, pods("Running", worker(name, 1)), (worker(name),)), "running")
    return job


@dataclass(frozen=True)
class Lives:
    running: Job
    restarted: Job
    suspended: Job
    finished: Job
    suspend: dict[str, Any]  # the suspended job's manifest as applied

    def all(self) -> tuple[Job, ...]:
        return (self.running, self.restarted, self.suspended, self.finished)


def start_lives(server: ApiServer, rest: Rest, namespace: str) -> Lives:
    kubelet = Kubelet(rest, namespace)
    running = run_job(server, rest, namespace, single("running"))
    restarted = restarted_once(server, rest, namespace, "restarted")
    document = single("suspended")
    suspended = run_job(server, rest, namespace, document)
    document["spec"]["runPolicy"]["suspend"] = True
    suspended.apply(document)
    suspended.reaches(State(SUSPENDED, {}, ()), "suspended")
    finished = run_job(
        server,
        rest,
        namespace,
        single("finished", cleanPodPolicy="None", ttlSecondsAfterFinished=TTL),
    )
    kubelet.exit(worker("finished"), 0)
    kept = State(SUCCEEDED, pods("Succeeded", worker("finished")), (worker("finished"),))
    finished.reaches(kept, "finished, its TTL pending")
    return Lives(running, restarted, suspended, finished, document)


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


def synced_by(hook: Hook, jobs: tuple[Job, ...]) -> None:
    """Wait until `hook` has answered a sync of every job (Metacontroller syncs each at start)."""
    for job in jobs:
        wait_for(lambda: hook.syncs(job.namespace, job.name), f"{job.name} synced")  # noqa: B023


def restarts(job: Job) -> int | None:
    count: int | None = job.status().get("restartCount")
    return count


def finish(lives: Lives, rest: Rest, namespace: str) -> datetime:
    """Every job run to its end, as under one release; returns when the TTL was due."""
    kubelet = Kubelet(rest, namespace)
    due = datetime.fromisoformat(lives.finished.status()["completionTime"]) + timedelta(seconds=TTL)
    kubelet.exit(worker("running"), 0)
    lives.running.reaches(
        State(SUCCEEDED, pods("Succeeded", worker("running")), (worker("running"),)), "succeeded"
    )
    kubelet.exit(worker("restarted", 1), 0)
    lives.restarted.reaches(
        State(SUCCEEDED, pods("Succeeded", worker("restarted", 1)), (worker("restarted"),)),
        "the replacement succeeded",
    )
    lives.suspend["spec"]["runPolicy"]["suspend"] = False
    lives.suspended.apply(lives.suspend)
    resumed = (worker("suspended"),)
    lives.suspended.reaches(State(CREATED, pods("Pending", *resumed), resumed), "resumed")
    kubelet.run(*resumed)
    lives.suspended.reaches(State(RUNNING, pods("Running", *resumed), resumed), "running")
    kubelet.exit(worker("suspended"), 0)
    lives.suspended.reaches(State(SUCCEEDED, pods("Succeeded", *resumed), resumed), "succeeded")
    lives.finished.reaches(State(SUCCEEDED, {}, ()), "TTL expired", timeout=TTL + 60)
    return due


@pytest.mark.parametrize("way", ["kustomize", "helm"])
def test_upgrade_from_0_2_0_and_back(
    way: str,
    stack: Stack,
    release: Path,
    go_tool: Callable[[str], Path],
    figure: Callable[[str], None],
) -> None:
    namespace = f"jobs-{way}"
    stack.server.kubectl("create", "namespace", namespace)
    hooks = Hooks(stack.workdir, free_port())
    install: Install = (
        Helm(stack.server, hooks.url, go_tool("helm"), stack.workdir)
        if way == "helm"
        else Kustomize(stack.server, hooks.url)
    )
    old_flags, new_flags = release_flags(release), shipped_flags()
    with ExitStack() as running, Rest(stack.server) as rest, fail_on_cluster_error():
        running.callback(hooks.stop)
        install.install(release)
        running.callback(install.remove)
        stack.server.wait_established("crd/mxjobs.kubeflow.org")
        hooks.serve(release, f"{way}-{RELEASE}")
        metacontroller = ExitStack()
        running.callback(metacontroller.close)
        metacontroller.enter_context(
            run_metacontroller(
                stack.binary, stack.server, stack.workdir, old_flags, release_access(stack.server)
            )
        )
        lives = start_lives(stack.server, rest, namespace)
        assert restarts(lives.restarted) is None, f"{RELEASE} kept no restartCount"

        # The upgrade, as docs/install.md says: the manifests (the CRD before the hook), the
        # hook's new pods, Metacontroller with this version's flags.
        before = identities(lives.all())
        was = contents(lives.all())
        offset = stack.audit.stat().st_size
        steps = [time.monotonic()]
        install.upgrade(REPO)
        steps.append(time.monotonic())
        new_hook = hooks.serve(REPO, f"{way}-upgraded")
        steps.append(time.monotonic())
        metacontroller.close()
        upgraded = metacontroller.enter_context(
            run_metacontroller(
                stack.binary, stack.server, stack.workdir, new_flags, shipped_access(stack.server)
            )
        )
        steps.append(time.monotonic())
        synced_by(new_hook, lives.all())
        wait_for(lambda: restarts(lives.restarted), "the restart counted", until=lambda n: n == 1)
        steps.append(time.monotonic())
        assert contents(lives.all()) == was, "every child kept: name, uid, labels, spec, data"
        by_upgrade = child_writes(stack.audit, offset, namespace)
        assert replaced(by_upgrade) == [], "the upgrade made, removed or wrote no pod"
        assert lives.finished.state().pods, "the TTL still pending after the upgrade"
        figure(
            f"{way} upgrade from {RELEASE}: every job synced by the new hook "
            f"{steps[-1] - steps[0]:.1f} s on (apply, hook, Metacontroller, syncs: "
            f"{', '.join(f'{b - a:.1f}' for a, b in itertools.pairwise(steps))} s); "
            f"child writes {sorted(by_upgrade)}"
        )

        due = finish(lives, rest, namespace)
        late = (datetime.now(UTC) - due).total_seconds()
        figure(f"{way}: the TTL set under {RELEASE} removed the children {late:.1f} s after due")
        assert 0 <= late < LATE
        assert [restarts(job) for job in lives.all()] == [0, 1, 0, 0], "no extra restart counted"
        after = child_writes(stack.audit, offset, namespace)
        again = [w for w in after if w[0] == "create" and child_key(w) in before]
        assert again == [], "no child of the upgrade's time made again"
        deleted = {child_key(w) for w in after if w[0] == "delete"}
        ttl_children = {k for k in before if k.split("/")[1].startswith("finished")}
        assert deleted == ttl_children, "only the TTL deleted children"
        assert ("create", "pods", worker("suspended")) in after  # the log sees creates

        # Back to 0.2.0 with a job restarted under this version.
        back = restarted_once(stack.server, rest, namespace, "rolled-back")
        assert restarts(back) == 1
        kept = identities((back,))
        offset = stack.audit.stat().st_size
        install.rollback(release)
        old_hook = hooks.serve(release, f"{way}-rolled-back")
        assert upgraded.refusals() == [], "a request outside this version's role"
        metacontroller.close()
        metacontroller.enter_context(
            run_metacontroller(
                stack.binary, stack.server, stack.workdir, old_flags, release_access(stack.server)
            )
        )
        synced_by(old_hook, (back,))
        assert identities((back,)) == kept, "every child kept, same name and uid"
        by_rollback = child_writes(stack.audit, offset, namespace)
        assert replaced(by_rollback) == [], "the rollback made, removed or wrote no pod"
        figure(f"{way} rollback: child writes {sorted(by_rollback)}")
        # 0.2.0's CRD has no restartCount and its hook writes none: the count goes.
        wait_for(lambda: restarts(back), "restartCount dropped", until=lambda n: n is None)
        Kubelet(rest, namespace).exit(worker("rolled-back", 1), 0)
        back.reaches(
            State(SUCCEEDED, pods("Succeeded", worker("rolled-back", 1)), (worker("rolled-back"),)),
            "succeeded under the rolled-back release",
        )


def replaced(writes: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The writes that create or delete a child, or touch a pod."""
    return [w for w in writes if w[0] in ("create", "delete") or w[1] == "pods"]


def child_key(write: tuple[str, str, str]) -> str:
    kinds = {"pods": "Pod", "services": "Service", "configmaps": "ConfigMap"}
    return f"{kinds[write[1]]}/{write[2]}"
