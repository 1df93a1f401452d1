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
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from localcluster.apiserver import ApiServer, Binaries, cluster
from localcluster.kubelet import Kubelet
from localcluster.ports import free_port
from localcluster.realstack import Metacontroller, metacontroller_crds, run_metacontroller
from localcluster.rest import Rest
from localcluster.stack import shipped_flags
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.kustomize import shipped_access
from tests.support.scenario import State, pods
from tests.support.upgrade import (
    Helm,
    Hooks,
    Install,
    Kustomize,
    child_key,
    child_writes,
    contents,
    hook_env,
    identities,
    release_access,
    release_flags,
    replaced,
)
from tests.support.upgrade_lives import (
    SUCCEEDED,
    Lives,
    finish,
    restarted_once,
    restarts,
    start_lives,
    synced_by,
    worker,
)

RELEASE = "0.2.0"
# Release 0.2.0 has no tag: this is main's last commit at that version (its next one, a merge,
# made it 0.2.1). Its [Unreleased] section is empty: it is the release's code.
RELEASE_COMMIT = "2e04a9bb03a750d27662088cc5e0f71ccc1014e8"
TTL = 60  # seconds: pending through the upgrade (6 s after the job finished, 27-52 s once)
LATE = 10  # how late the TTL may fire (test_real_job_life.py's bound)


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


@dataclass
class Installed:
    """One way's install, its hook process, and Metacontroller as each step runs it."""

    stack: Stack
    way: str
    hooks: Hooks
    install: Install
    metacontroller: ExitStack

    def run_metacontroller(self, flags: tuple[str, ...], access: Path) -> Metacontroller:
        """Metacontroller (the one running stopped first) with `flags` and `access`."""
        self.metacontroller.close()
        stack = self.stack
        return self.metacontroller.enter_context(
            run_metacontroller(stack.binary, stack.server, stack.workdir, flags, access)
        )


def upgrade(
    installed: Installed, lives: Lives, figure: Callable[[str], None]
) -> tuple[Metacontroller, dict[str, str], int]:
    """The upgrade, as docs/install.md says: the manifests (the CRD before the hook), the hook's
    new pods, Metacontroller with this version's flags. Returns that Metacontroller, the
    children before and the audit log's offset then."""
    stack, namespace, way = installed.stack, lives.running.namespace, installed.way
    before = identities(lives.all())
    was = contents(lives.all())
    offset = stack.audit.stat().st_size
    steps = [time.monotonic()]
    installed.install.upgrade(REPO)
    steps.append(time.monotonic())
    new_hook = installed.hooks.serve(REPO, f"{way}-upgraded")
    steps.append(time.monotonic())
    upgraded = installed.run_metacontroller(shipped_flags(), shipped_access(stack.server))
    steps.append(time.monotonic())
    synced_by(new_hook, lives.all())
    wait_for(lambda: restarts(lives.restarted), "the restart counted", until=lambda n: n == 1)
    steps.append(time.monotonic())
    assert contents(lives.all()) == was, "every child kept: name, uid, labels, spec, data"
    by_upgrade = child_writes(stack.audit, offset, namespace)
    assert replaced(by_upgrade) == [], "the upgrade made, removed or wrote no pod"
    assert lives.finished.state().pods, "the TTL still pending after the upgrade"
    completed = datetime.fromisoformat(lives.finished.status()["completionTime"])
    figure(
        f"{way} upgrade from {RELEASE}: every job synced by the new hook "
        f"{steps[-1] - steps[0]:.1f} s on (apply, hook, Metacontroller, syncs: "
        f"{', '.join(f'{b - a:.1f}' for a, b in itertools.pairwise(steps))} s); "
        f"child writes {sorted(by_upgrade)}; the {TTL} s TTL pending "
        f"{(datetime.now(UTC) - completed).total_seconds():.0f} s after the job finished"
    )
    return upgraded, before, offset


def ends_as_it_would_have(
    installed: Installed,
    lives: Lives,
    rest: Rest,
    before: dict[str, str],
    offset: int,
    figure: Callable[[str], None],
) -> None:
    """Every job run to its end after the upgrade: the TTL on time, no extra restart, no child
    of the upgrade's time made again, and only the TTL deleting any."""
    namespace = lives.running.namespace
    due = finish(lives, rest, namespace, TTL)
    late = (datetime.now(UTC) - due).total_seconds()
    figure(
        f"{installed.way}: the TTL set under {RELEASE} removed the children {late:.1f} s after due"
    )
    assert 0 <= late < LATE
    assert [restarts(job) for job in lives.all()] == [0, 1, 0, 0], "no extra restart counted"
    after = child_writes(installed.stack.audit, offset, namespace)
    again = [w for w in after if w[0] == "create" and child_key(w) in before]
    assert again == [], "no child of the upgrade's time made again"
    deleted = {child_key(w) for w in after if w[0] == "delete"}
    ttl_children = {k for k in before if k.split("/")[1].startswith("finished")}
    assert deleted == ttl_children, "only the TTL deleted children"
    assert ("create", "pods", worker("suspended")) in after  # the log sees creates


def roll_back(
    installed: Installed,
    release: Path,
    upgraded: Metacontroller,
    rest: Rest,
    namespace: str,
    figure: Callable[[str], None],
) -> None:
    """Back to 0.2.0 with a job restarted under this version."""
    stack = installed.stack
    back = restarted_once(stack.server, rest, namespace, "rolled-back")
    assert restarts(back) == 1
    kept = identities((back,))
    offset = stack.audit.stat().st_size
    installed.install.rollback(release)
    old_hook = installed.hooks.serve(release, f"{installed.way}-rolled-back")
    assert upgraded.refusals() == [], "a request outside this version's role"
    installed.run_metacontroller(release_flags(release), release_access(stack.server))
    synced_by(old_hook, (back,))
    assert identities((back,)) == kept, "every child kept, same name and uid"
    by_rollback = child_writes(stack.audit, offset, namespace)
    assert replaced(by_rollback) == [], "the rollback made, removed or wrote no pod"
    figure(f"{installed.way} rollback: child writes {sorted(by_rollback)}")
    # 0.2.0's CRD has no restartCount and its hook writes none: the count goes.
    wait_for(lambda: restarts(back), "restartCount dropped", until=lambda n: n is None)
    Kubelet(rest, namespace).exit(worker("rolled-back", 1), 0)
    back.reaches(
        State(SUCCEEDED, pods("Succeeded", worker("rolled-back", 1)), (worker("rolled-back"),)),
        "succeeded under the rolled-back release",
    )


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
    with ExitStack() as running, Rest(stack.server) as rest, fail_on_cluster_error():
        running.callback(hooks.stop)
        install.install(release)
        running.callback(install.remove)
        stack.server.wait_established("crd/mxjobs.kubeflow.org")
        hooks.serve(release, f"{way}-{RELEASE}")
        installed = Installed(stack, way, hooks, install, running.enter_context(ExitStack()))
        installed.run_metacontroller(release_flags(release), release_access(stack.server))
        lives = start_lives(stack.server, rest, namespace, TTL)
        assert restarts(lives.restarted) is None, f"{RELEASE} kept no restartCount"

        upgraded, before, offset = upgrade(installed, lives, figure)
        ends_as_it_would_have(installed, lives, rest, before, offset, figure)
        roll_back(installed, release, upgraded, rest, namespace, figure)
