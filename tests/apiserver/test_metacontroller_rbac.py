"""Metacontroller's ServiceAccount under the ClusterRole the with-metacontroller overlay ships, on
the real API server: refused what the role leaves out (Secrets, RBAC kinds), allowed what
Metacontroller does; and a gang job (the volcano component) run by the real Metacontroller under
that role with the component's rules, with no request of Metacontroller's refused. The other
real-stack tests run Metacontroller under the same role (tests/apiserver/conftest.py)."""

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster.apiserver import METACONTROLLER_USER, ApiServer, Binaries, cluster
from localcluster.crds import install_crds
from localcluster.realstack import (
    Metacontroller,
    grant_metacontroller,
    install_controller,
    run_metacontroller,
    serve_hook,
)
from localcluster.rest import Rest
from localcluster.stack import shipped_flags
from localcluster.waiting import wait_for
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.kustomize import hook_objects, overlay_objects
from tests.support.scenario import apply_job, expected_children, manifest

OVERLAY = "with-metacontroller"
# The message of the API server's 403 (Forbidden) answer, which kubectl prints.
FORBIDDEN = f'is forbidden: User "{METACONTROLLER_USER}" cannot '


def as_metacontroller(
    server: ApiServer, args: tuple[str, ...], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """kubectl with the token of Metacontroller's ServiceAccount."""
    command = [str(server.kubectl_path), f"--kubeconfig={server.metacontroller_kubeconfig}"]
    return subprocess.run(
        [*command, f"--cache-dir={server.kubectl_cache}-metacontroller", *args],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def granted(apiserver: ApiServer) -> ApiServer:
    """The session's API server with our CRDs and Metacontroller's, the overlay's role and
    binding for Metacontroller, and the namespace its Lease lives in."""
    install_crds(apiserver)
    install_controller(apiserver, "http://127.0.0.1:9")  # no Metacontroller runs it here
    grant_metacontroller(apiserver, overlay_objects(OVERLAY))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "metacontroller"}}
    apiserver.apply(namespace)
    return apiserver


CLUSTER_ROLE = """{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
 "metadata": {"name": "metacontroller-escalated"},
 "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}"""


BIND_CLUSTER_ADMIN = ("create", "clusterrolebinding", "x", "--clusterrole=cluster-admin",
                      f"--user={METACONTROLLER_USER}")  # fmt: skip
CHANGE_CRD = ("patch", "crd", "mxjobs.kubeflow.org", "--type=merge", "-p", '{"metadata":{}}')


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        pytest.param(("get", "secret", "any", "-n", "mxjob-system"), None, id="read-a-secret"),
        pytest.param(("get", "secrets", "-A"), None, id="list-secrets"),
        pytest.param(("create", "-f", "-"), CLUSTER_ROLE, id="create-a-clusterrole"),
        pytest.param(BIND_CLUSTER_ADMIN, None, id="bind-itself-to-cluster-admin"),
        pytest.param(("get", "nodes"), None, id="read-nodes"),
        pytest.param(CHANGE_CRD, None, id="change-a-crd"),
    ],
)
def test_a_request_outside_the_role_is_refused(
    granted: ApiServer, args: tuple[str, ...], stdin: str | None
) -> None:
    result = as_metacontroller(granted, args, stdin)
    assert result.returncode == 1, result
    assert FORBIDDEN in result.stderr, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("get", "mxjobs", "-A"), id="list-mxjobs"),
        pytest.param(("get", "pods,services,configmaps", "-A"), id="list-children"),
        pytest.param(
            ("get", "compositecontrollers,controllerrevisions.metacontroller.k8s.io", "-A"),
            id="own-kinds",
        ),
        pytest.param(("get", "crd", "mxjobs.kubeflow.org"), id="read-the-parents-crd"),
        pytest.param(
            ("create", "configmap", "rbac-probe", "-n", "metacontroller", "--dry-run=server"),
            id="create-a-child",
        ),
        pytest.param(
            ("create", "-n", "metacontroller", "-f", "-", "--dry-run=server"), id="create-a-lease"
        ),
    ],
)
def test_what_metacontroller_does_is_allowed(granted: ApiServer, args: tuple[str, ...]) -> None:
    lease = '{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "x"}}'
    result = as_metacontroller(granted, args, lease)
    assert result.returncode == 0, result.stderr


@dataclass(frozen=True)
class GangStack:
    apiserver: ApiServer
    rest: Rest
    metacontroller: Metacontroller


def volcano_controller(hook_url: str) -> dict[str, Any]:
    """The CompositeController of manifests/overlays/volcano, its webhook at `hook_url`."""
    (controller,) = [d for d in hook_objects("volcano") if d["kind"] == "CompositeController"]
    webhook = controller["spec"]["hooks"]["sync"]["webhook"]
    webhook.pop("service")
    webhook["url"] = hook_url + webhook.pop("path")
    return controller


@pytest.fixture(scope="module")
def gang_stack(
    k8s_binaries: Binaries,
    metacontroller_binary: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GangStack]:
    """An API server of its own with the PodGroup CRDs, the hook, the volcano overlay's
    CompositeController, and Metacontroller as shipped, under the overlay's role plus the volcano
    component's rules."""
    workdir = tmp_path_factory.mktemp("gang-rbac")
    with fail_on_cluster_error(), cluster(k8s_binaries, workdir) as server, Rest(server) as rest:
        install_crds(server)
        with serve_hook(workdir) as hook:
            install_controller(server, hook.url)  # Metacontroller's CRDs
            server.apply(volcano_controller(hook.url))
            kubeconfig = grant_metacontroller(server, overlay_objects(OVERLAY, "volcano"))
            with run_metacontroller(
                metacontroller_binary, server, workdir, shipped_flags(), kubeconfig
            ) as running:
                yield GangStack(server, rest, running)


def test_a_gang_job_gets_its_podgroup_and_pods_under_the_shipped_role(
    gang_stack: GangStack, figure: Callable[[str], None]
) -> None:
    server, rest = gang_stack.apiserver, gang_stack.rest
    namespace = "gang-rbac"
    server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    job = apply_job(server, rest, namespace, manifest("examples/dist-cpu.yaml"))
    groups = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups"
    (group,) = wait_for(lambda: rest.get(groups)["items"], "the job's PodGroup", until=bool)
    assert [o["name"] for o in group["metadata"]["ownerReferences"]] == [job.name]
    expected = expected_children(manifest("examples/dist-cpu.yaml"))
    wait_for(lambda: sorted(job.state().pods), "the job's pods", until=lambda p: p == expected)
    wait_for(lambda: job.condition("Created"), "the Created condition", until=bool)
    assert gang_stack.metacontroller.refusals() == []
