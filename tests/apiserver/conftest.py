"""Session fixtures for the API-server tier: pinned binaries, one etcd + kube-apiserver per session.

Public API for tests in this directory:
- `apiserver` (session): an `ApiServer` with `url`, `token`, `ca_cert`, `kubeconfig`,
  `kubectl(*args, input=None, check=True, timeout=60)`, `apply(*documents)` (server-side apply)
  and `get(*args)` (parsed `kubectl get -o json`).
- `k8s_binaries` (session): the `Binaries` paths (`kube_apiserver`, `etcd`, `kubectl`).
- `namespace` (function): a fresh namespace name, created for the test.
- `metacontroller_binary` (session): the real Metacontroller, built by
  scripts/metacontroller-binary.sh on first use.
- `real_stack` (session, twice): the real hook and the real Metacontroller running against
  `apiserver`, with our CRDs and our CompositeController installed (`localcluster/realstack.py`);
  every test that uses it runs under Metacontroller's defaults (`[defaults]`: a cluster's own
  Metacontroller, its apply strategy `dynamic-apply`) and under the flags and admission policy
  the `with-metacontroller` overlay ships (`[shipped]`: `server-side-apply`); either way as
  Metacontroller's ServiceAccount under the ClusterRole that overlay ships, not as the admin.
- `rest` (session): the API server's REST API (`localcluster/rest.py`), for polling and playing
  the kubelet.
- `figure` (session): `figure(line)` prints a measured figure on the terminal as the tier runs.
- `start_kueue` (session): `start_kueue(name, pods_ready=None, objects=())`, the Kueue tier's
  stack without Metacontroller (`tests/support/kueue_stack.py`) in a fresh folder, for a
  module's own `stack` fixture.
Every test collected here is marked `apiserver`; those on the session's `apiserver` are put in
two pytest-xdist groups (`shared_server_group`), the others go by module (tests/conftest.py).
"""

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster.apiserver import ApiServer, Binaries, ClusterError, cluster, obtain_binaries
from localcluster.crds import install_crds
from localcluster.realstack import (
    Hook,
    Metacontroller,
    delete_jobs,
    install_controller,
    obtain_metacontroller,
    run_metacontroller,
    serve_hook,
)
from localcluster.rest import Rest
from localcluster.stack import ADOPTION_GUARD, install_adoption_guard, shipped_flags
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.kueue_stack import KueueStack, StartKueue, kueue_stack
from tests.support.kustomize import shipped_access

HERE = Path(__file__).parent
METACONTROLLERS = ("defaults", "shipped")


def shared_server_group(item: pytest.Item) -> str | None:
    """The pytest-xdist group of a test on the session's `apiserver` (None: a server of its
    module's own). Those under `real_stack[shipped]` form one group, all the others one more:
    each group runs on one worker, in this order, on that worker's own session server."""
    names = getattr(item, "fixturenames", ())
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).get("apiserver")
    if "apiserver" not in names or not defs or defs[-1].scope != "session":
        return None
    callspec = getattr(item, "callspec", None)
    shipped = callspec is not None and callspec.params.get("real_stack") == "shipped"
    return "apiserver-shipped" if shipped else "apiserver-defaults"


@pytest.hookimpl(tryfirst=True)  # before the tiers' file groups (tests/conftest.py) and xdist
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    groups = {item: shared_server_group(item) for item in items}
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.apiserver)
            if group := groups[item]:
                item.add_marker(pytest.mark.xdist_group(group))
    # Once `real_stack` is up, Metacontroller syncs every MXJob on the server, and it stays up
    # until the session's end or the other setting: the tests on the session's server that do
    # not use it come first (in "apiserver-defaults", which xdist hands out before
    # "apiserver-shipped", as it hands out groups in this order). Those two groups, the
    # longest, come before the modules with servers of their own, so that they start first.
    items.sort(
        key=lambda item: (
            groups[item] is None,
            "real_stack" in getattr(item, "fixturenames", ()),
        )
    )


@pytest.fixture(scope="session")
def k8s_binaries(progress: Callable[[str], None]) -> Binaries:
    """The pinned binaries, built or fetched by scripts/k8s-binaries.sh on first use."""
    try:
        return obtain_binaries(progress)
    except ClusterError as error:
        failure = str(error)  # failed outside the handler: the report shows no exception chain
    pytest.fail(failure, pytrace=False)


@pytest.fixture(scope="session")
def metacontroller_binary(progress: Callable[[str], None]) -> Path:
    """The real Metacontroller, built from its source by scripts/metacontroller-binary.sh."""
    try:
        return obtain_metacontroller(progress)
    except ClusterError as error:
        failure = str(error)
    pytest.fail(failure, pytrace=False)


@dataclass(frozen=True)
class RealStack:
    apiserver: ApiServer
    hook: Hook
    metacontroller: Metacontroller
    shipped: bool  # Metacontroller as with-metacontroller ships it (server-side apply)


@pytest.fixture(scope="session", params=METACONTROLLERS)
def real_stack(
    request: pytest.FixtureRequest,
    apiserver: ApiServer,
    metacontroller_binary: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealStack]:
    """The real hook and the real Metacontroller on `apiserver`, our CRDs and CompositeController
    installed, the MXJobs of earlier tests deleted. Tests share it: each works in its own
    namespace. From here on Metacontroller syncs every MXJob on `apiserver`, so the tests that
    do not use it run first (see pytest_collection_modifyitems). Under `shipped`, Metacontroller
    runs with the overlay's flags and the adoption guard is installed. Either way it runs as its
    ServiceAccount, bound to the overlay's ClusterRole only."""
    shipped = request.param == "shipped"
    workdir = tmp_path_factory.mktemp(f"real-stack-{request.param}")
    flags = shipped_flags() if shipped else ()
    with fail_on_cluster_error():
        install_crds(apiserver)
        delete_jobs(apiserver)
        if shipped:
            install_adoption_guard(apiserver)
        else:
            apiserver.kubectl("delete", "-f", str(ADOPTION_GUARD), "--ignore-not-found")
        kubeconfig = shipped_access(apiserver)
        with serve_hook(workdir) as hook:
            install_controller(apiserver, hook.url)
            with run_metacontroller(
                metacontroller_binary, apiserver, workdir, flags, kubeconfig
            ) as running:
                yield RealStack(apiserver, hook, running, shipped)
                assert running.refusals() == [], "a request outside the shipped role"


@pytest.fixture(scope="session")
def apiserver(
    k8s_binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApiServer]:
    """A real kube-apiserver backed by etcd, on loopback, for the whole session."""
    workdir = tmp_path_factory.mktemp("apiserver")
    with fail_on_cluster_error(), cluster(k8s_binaries, workdir) as server:
        yield server


@pytest.fixture
def namespace(apiserver: ApiServer) -> str:
    """A namespace of its own for one test (never deleted: no controller-manager finalizes it)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    apiserver.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.fixture(scope="session")
def rest(apiserver: ApiServer) -> Iterator[Rest]:
    """The API server's REST API with the admin token."""
    with Rest(apiserver) as client:
        yield client


@pytest.fixture(scope="session")
def figure(progress: Callable[[str], None]) -> Callable[[str], None]:
    """Print a measured figure (a delay, a duration) on the terminal, even under capture."""
    return lambda line: progress(f"\nfigure: {line}")  # off the line of progress dots


@pytest.fixture(scope="session")
def start_kueue(
    k8s_binaries: Binaries,
    progress: Callable[[str], None],
    tmp_path_factory: pytest.TempPathFactory,
) -> StartKueue:
    def start(
        name: str, pods_ready: dict[str, Any] | None = None, objects: Sequence[Any] = ()
    ) -> AbstractContextManager[KueueStack]:
        workdir = tmp_path_factory.mktemp(name)
        return kueue_stack(k8s_binaries, progress, workdir, pods_ready, objects)

    return start
