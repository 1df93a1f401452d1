"""The Kueue tier's stack, one per module: an API server of the module's own, the real Kueue
(built from its module), the hook with the kueue overlay's CompositeController, and the real
Metacontroller as the ServiceAccount of the shipped role with the kueue component's rules.
Optionally Kueue's `waitForPodsReady` and the Workload-status writer, run as the ServiceAccount
of its component's own RBAC."""

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from localcluster.apiserver import ApiServer, Binaries, cluster, token_kubeconfig
from localcluster.crds import install_crds
from localcluster.kueue import install_kueue_crds, obtain_kueue, run_kueue, run_status_writer
from localcluster.realstack import (
    Hook,
    Metacontroller,
    install_controller,
    run_metacontroller,
    serve_hook,
)
from localcluster.rest import Rest
from tests.support import REPO
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.kustomize import hook_objects, shipped_access

WRITER = REPO / "manifests" / "components" / "kueue-status" / "writer.yaml"


@dataclass(frozen=True)
class KueueStack:
    apiserver: ApiServer
    rest: Rest
    hook: Hook
    # Kueue's aggregated batch roles, from its module.
    rbac: Path
    workdir: Path


def kueue_controller(hook_url: str) -> dict[str, Any]:
    """The CompositeController of manifests/overlays/kueue, its two hooks at `hook_url`."""
    (controller,) = [d for d in hook_objects("kueue") if d["kind"] == "CompositeController"]
    for hook in controller["spec"]["hooks"].values():
        webhook = hook["webhook"]
        webhook.pop("service")
        webhook["url"] = hook_url + webhook.pop("path")
    return controller


def writer_kubeconfig(server: ApiServer, path: Path) -> Path:
    """The writer's ServiceAccount, ClusterRole and binding as its component ships them,
    applied; a kubeconfig with a token of that ServiceAccount."""
    objects = [d for d in yaml.safe_load_all(WRITER.read_text()) if d["kind"] != "Deployment"]
    (account,) = [d["metadata"] for d in objects if d["kind"] == "ServiceAccount"]
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": account["namespace"]}}  # fmt: skip
    server.apply(namespace, *objects)
    return token_kubeconfig(server, account["namespace"], account["name"], path)


@contextmanager
def kueue_stack(
    k8s_binaries: Binaries,
    progress: Callable[[str], None],
    workdir: Path,
    pods_ready: dict[str, Any] | None = None,
    objects: Sequence[dict[str, Any]] = (),
) -> Iterator[KueueStack]:
    """The stack without Metacontroller (`kueue_metacontroller` adds it) until the block ends;
    `objects` applied after the CompositeController. With `pods_ready` (Kueue's
    `waitForPodsReady`), the Workload-status writer runs too."""
    with fail_on_cluster_error(), ExitStack() as running:
        progress("obtaining Kueue (scripts/kueue-binary.sh)")
        parts = obtain_kueue(progress)
        server = running.enter_context(cluster(k8s_binaries, workdir))
        rest = running.enter_context(Rest(server))
        install_crds(server)
        install_kueue_crds(server, parts.crds)
        running.enter_context(run_kueue(parts.binary, server, workdir, pods_ready))
        if pods_ready is not None:
            access = writer_kubeconfig(server, workdir / "kueue-status.kubeconfig")
            running.enter_context(run_status_writer(server, workdir, access))
        hook = running.enter_context(serve_hook(workdir))
        install_controller(server, hook.url)  # Metacontroller's CRDs
        server.apply(kueue_controller(hook.url))
        if objects:
            server.apply(*objects)
        yield KueueStack(server, rest, hook, parts.rbac, workdir)


# `start(name, pods_ready=None, objects=())`: `kueue_stack` in a fresh folder named `name`
# (the `start_kueue` fixture of tests/apiserver/conftest.py).
StartKueue = Callable[..., AbstractContextManager[KueueStack]]


@contextmanager
def kueue_metacontroller(
    stack: KueueStack, binary: Path, flags: tuple[str, ...] = ()
) -> Iterator[Metacontroller]:
    """Metacontroller as the shipped role's ServiceAccount with the kueue component's rules;
    on the way out, fail if the API server refused it anything."""
    kubeconfig = shipped_access(stack.apiserver, "kueue")
    with run_metacontroller(binary, stack.apiserver, stack.workdir, flags, kubeconfig) as running:
        yield running
        assert running.refusals() == [], "a request outside the shipped role"
