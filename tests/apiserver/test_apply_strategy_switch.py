"""Switching Metacontroller's apply strategy under a running job, as an upgrade to the
`with-metacontroller` overlay of this release does (`dynamic-apply` to `server-side-apply`), as
a restart under it does, and as a rollback does; on a stack of its own (the real API server, the
real hook, the real Metacontroller restarted with each setting). What it shows, in order:
1. upgrade: no pod is written or replaced; each Service and the ConfigMap is written
   (Metacontroller removes its last-applied annotation, then applies it), its labels and spec
   or data unchanged; the job stays Running and later syncs write nothing;
2. a restart under server-side apply writes nothing, although Metacontroller's record of what
   it applied is in memory and starts empty (its apply of an unchanged child is a no-op);
3. rollback to `dynamic-apply`: still no pod written; each Service and the ConfigMap gets its
   last-applied annotation back; then nothing.
The adoption guard (manifests/components/adoption-guard) is installed throughout: none of these
writes adds an owner, so it refuses none of them (no SyncError)."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.core.observe.applied import LAST_APPLIED
from localcluster.apiserver import ApiServer, Binaries, cluster
from localcluster.crds import install_crds
from localcluster.realstack import (
    Hook,
    composite_controller,
    install_controller,
    run_metacontroller,
    serve_hook,
)
from localcluster.rest import Rest
from localcluster.stack import install_adoption_guard, release_0_1_0_flags, shipped_flags
from localcluster.waiting import wait_for
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.kustomize import shipped_access
from tests.support.scenario import Job, content, manifest, run_job

DYNAMIC = release_0_1_0_flags()  # Metacontroller's default apply strategy
SETTLED = 3  # syncs of the job answered after a (re)start before its children are compared
RESYNC = 2  # seconds, the CompositeController's resyncPeriodSeconds here (none as shipped)
# As shipped, but for the informers' replay (`--cache-flush-interval`, 0 as shipped), without
# which Metacontroller ignores RESYNC: the syncs that must write nothing come from it.
SHIPPED = (*shipped_flags(), "--cache-flush-interval=1h")


@dataclass(frozen=True)
class Stack:
    server: ApiServer
    hook: Hook
    binary: Path
    workdir: Path
    kubeconfig: Path  # Metacontroller's ServiceAccount's, under the shipped role


@pytest.fixture(scope="module")
def stack(
    k8s_binaries: Binaries, metacontroller_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("apply-strategy")
    with (
        fail_on_cluster_error(),
        cluster(k8s_binaries, workdir) as server,
        serve_hook(workdir) as hook,
    ):
        install_crds(server)
        install_controller(server, hook.url)
        controller = composite_controller(hook.url)
        controller["spec"]["resyncPeriodSeconds"] = RESYNC
        server.apply(controller)
        install_adoption_guard(server)
        yield Stack(server, hook, metacontroller_binary, workdir, shipped_access(server))


@contextmanager
def metacontroller(stack: Stack, flags: tuple[str, ...]) -> Iterator[None]:
    with run_metacontroller(
        stack.binary, stack.server, stack.workdir, flags, stack.kubeconfig
    ) as running:
        yield
        assert running.refusals() == [], "a request outside the shipped role"


def settle(stack: Stack, job: Job) -> None:
    """Wait until the hook has answered SETTLED more syncs of the job: Metacontroller has
    handled every child at least twice since it started (it syncs on start, then on each
    write it made and on the resync)."""
    start = stack.hook.syncs(job.namespace, job.name)
    wait_for(
        lambda: stack.hook.syncs(job.namespace, job.name) - start,
        f"{SETTLED} syncs of the job",
        until=lambda n: n >= SETTLED,
        timeout=120,
    )


Children = dict[str, dict[str, Any]]


def under(stack: Stack, flags: tuple[str, ...], job: Job) -> tuple[Children, dict[str, str]]:
    """The job's children and their resourceVersions once Metacontroller, started with
    `flags`, has settled; the syncs after that must write nothing."""
    with metacontroller(stack, flags):
        settle(stack, job)
        children, versions = job.children(), job.versions()
        settle(stack, job)
        assert job.versions() == versions, "later syncs write nothing"
    return children, versions


def kinds(versions: dict[str, str], kind: str) -> dict[str, str]:
    return {k: v for k, v in versions.items() if k.startswith(f"{kind}/")}


def what(children: Children) -> dict[str, Any]:
    """Each child's identity and content, without Metacontroller's bookkeeping."""
    return {key: content(child) for key, child in children.items()}


def annotated(children: Children) -> set[str]:
    return {
        k for k, c in children.items() if LAST_APPLIED in (c["metadata"].get("annotations") or {})
    }


def test_switching_the_apply_strategy_replaces_no_pod(stack: Stack) -> None:
    namespace = "switch"
    stack.server.kubectl("create", "namespace", namespace)
    with Rest(stack.server) as rest:
        with metacontroller(stack, DYNAMIC):
            job = run_job(stack.server, rest, namespace, manifest("examples/dist-cpu.yaml"))
            settle(stack, job)
            before, versions = job.children(), job.versions()
        in_place = {k for k in before if not k.startswith("Pod/")}
        assert annotated(before) == set(before)  # every child: the default strategy's copy

        # 1. Upgrade.
        upgraded, after_upgrade = under(stack, SHIPPED, job)
        assert what(upgraded) == what(before)
        assert kinds(after_upgrade, "Pod") == kinds(versions, "Pod"), "no pod written"
        changed = {k for k in in_place if after_upgrade[k] != versions[k]}
        assert changed == in_place, "each Service and the ConfigMap written"
        assert annotated(upgraded) == {k for k in upgraded if k.startswith("Pod/")}

        # 2. Restart under server-side apply.
        _, after_restart = under(stack, SHIPPED, job)
        assert after_restart == after_upgrade, "a restart writes nothing"

        # 3. Rollback.
        rolled_back, after_rollback = under(stack, DYNAMIC, job)
        assert what(rolled_back) == what(before)
        assert kinds(after_rollback, "Pod") == kinds(versions, "Pod"), "no pod written"
        assert annotated(rolled_back) == set(rolled_back)

        assert job.condition("Running") is not None
        assert job.warnings("SyncError") == 0
