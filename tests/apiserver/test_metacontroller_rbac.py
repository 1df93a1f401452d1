"""Metacontroller's ServiceAccount under the roles the with-metacontroller overlay ships, on the
real API server (OwnerReferencesPermissionEnforcement on, as on OpenShift): refused what the
roles leave out (Secrets, RBAC kinds, any Lease but its own: the nodes' heartbeats in
kube-node-lease, kube-system's), allowed what Metacontroller does; a gang job (the volcano
component) run by the real Metacontroller, leader election on, under those roles with the
component's rules, with no request of Metacontroller's refused; and each rule shown needed: take
it out and a request Metacontroller made is denied. The other real-stack tests run
Metacontroller under the same roles (tests/apiserver/conftest.py)."""

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from localcluster.apiserver import (
    ADMISSION_PLUGINS,
    METACONTROLLER_GROUPS,
    METACONTROLLER_USER,
    ApiServer,
    Binaries,
    cluster,
)
from localcluster.crds import install_crds
from localcluster.realstack import (
    Metacontroller,
    grant_metacontroller,
    install_controller,
    metacontroller_access,
    run_metacontroller,
    serve_hook,
)
from localcluster.rest import Rest
from localcluster.stack import leader_election_flags, shipped_flags
from localcluster.waiting import wait_for
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.kustomize import hook_objects, overlay_objects
from tests.support.rbac import Request, allowed, bind, requests_made, rules_of
from tests.support.scenario import Job, apply_job, expected_children, manifest

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


LEASE = '{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "x"}}'
REVISION = """{"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "ControllerRevision",
 "metadata": {"name": "x", "namespace": "metacontroller"}, "parentPatch": {}}"""
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
        pytest.param(("get", "leases", "-n", "kube-node-lease"), None, id="read-node-heartbeats"),
        pytest.param(("create", "-n", "kube-node-lease", "-f", "-"), LEASE, id="create-node-lease"),
        pytest.param(("create", "-n", "kube-system", "-f", "-"), LEASE, id="create-system-lease"),
        pytest.param(("get", "lease", "x", "-n", "kube-system"), None, id="read-a-system-lease"),
        pytest.param(("get", "lease", "x", "-n", "metacontroller"), None, id="read-another-lease"),
        pytest.param(("get", "leases", "-n", "metacontroller"), None, id="list-its-leases"),
        pytest.param(("create", "-f", "-"), REVISION, id="write-a-controllerrevision"),
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
        pytest.param(
            ("get", "lease", "metacontroller", "-n", "metacontroller", "--ignore-not-found"),
            id="read-its-lease",
        ),
    ],
)
def test_what_metacontroller_does_is_allowed(granted: ApiServer, args: tuple[str, ...]) -> None:
    lease = LEASE.replace('"x"', '"metacontroller"')
    result = as_metacontroller(granted, args, lease)
    assert result.returncode == 0, result.stderr


@dataclass(frozen=True)
class GangStack:
    apiserver: ApiServer
    rest: Rest
    metacontroller: Metacontroller
    audit_log: Path


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
    """An API server of its own, writing every request to an audit log, with the PodGroup CRDs,
    the hook, the volcano overlay's CompositeController, and Metacontroller as shipped (leader
    election included), under the overlay's roles plus the volcano component's rules."""
    workdir = tmp_path_factory.mktemp("gang-rbac")
    audit = workdir / "audit.log"
    with (
        fail_on_cluster_error(),
        cluster(k8s_binaries, workdir, audit_log=audit) as server,
        Rest(server) as rest,
    ):
        install_crds(server)
        with serve_hook(workdir) as hook:
            install_controller(server, hook.url)  # Metacontroller's CRDs
            server.apply(volcano_controller(hook.url))
            kubeconfig = grant_metacontroller(server, overlay_objects(OVERLAY, "volcano"))
            flags = (*shipped_flags(), *leader_election_flags())
            with run_metacontroller(
                metacontroller_binary, server, workdir, flags, kubeconfig
            ) as running:
                yield GangStack(server, rest, running, audit)


@pytest.fixture(scope="module")
def gang_job(gang_stack: GangStack) -> Job:
    """examples/dist-cpu.yaml run by that stack until it has its PodGroup, pods and `Created`."""
    server, rest = gang_stack.apiserver, gang_stack.rest
    namespace = "gang-rbac"
    server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    job = apply_job(server, rest, namespace, manifest("examples/dist-cpu.yaml"))
    expected = expected_children(manifest("examples/dist-cpu.yaml"))
    wait_for(lambda: sorted(job.state().pods), "the job's pods", until=lambda p: p == expected)
    wait_for(lambda: job.condition("Created"), "the Created condition", until=bool)
    return job


def test_a_gang_job_gets_its_podgroup_and_pods_under_the_shipped_role(
    gang_stack: GangStack, gang_job: Job
) -> None:
    groups = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{gang_job.namespace}/podgroups"
    (group,) = gang_stack.rest.get(groups)["items"]
    assert [o["name"] for o in group["metadata"]["ownerReferences"]] == [gang_job.name]
    # Every child is created with blockOwnerDeletion, which OwnerReferencesPermissionEnforcement
    # (on in every test's API server) lets through only with mxjobs/finalizers.
    assert ADMISSION_PLUGINS == ("OwnerReferencesPermissionEnforcement",)
    assert group["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
    assert gang_stack.metacontroller.refusals() == []


def test_each_rule_of_the_shipped_roles_is_needed(gang_stack: GangStack, gang_job: Job) -> None:
    """For each rule, a user bound to the roles without it is denied a request Metacontroller
    made while running the job (the real authorizer, asked by SubjectAccessReview), or refused
    a child with blockOwnerDeletion by the real admission plugin; the full roles allow all."""
    server, rest = gang_stack.apiserver, gang_stack.rest
    roles, _ = metacontroller_access(overlay_objects(OVERLAY, "volcano"))
    rules = rules_of(roles)
    made = requests_made(gang_stack.audit_log, METACONTROLLER_USER)
    probes = {"rule-probe-all": rules} | {
        f"rule-probe-{i}": rules[:i] + rules[i + 1 :] for i in range(len(rules))
    }
    server.apply(*(d for user, kept in probes.items() for d in bind(user, kept, user)))
    wait_for(
        lambda: all(allowed(rest, "rule-probe-all", METACONTROLLER_GROUPS, r) for r in made),
        "the full roles to allow every request Metacontroller made",
        until=bool,
    )
    assert blocks_owner_deletion(server, "rule-probe-all", gang_job)
    # Every reduced role still allows something: wait until each binding is in force, so that
    # a denial below is the missing rule's, not a binding the authorizer has not seen yet.
    for user in probes:
        wait_for(partial(allows_any, rest, user, made), f"the roles of {user} in force", until=bool)
    unneeded = []
    for i, rule in enumerate(rules):
        user = f"rule-probe-{i}"
        denied = [r for r in made if not allowed(rest, user, METACONTROLLER_GROUPS, r)]
        if not denied and blocks_owner_deletion(server, user, gang_job):
            unneeded.append(rule)
    assert unneeded == []


def allows_any(rest: Rest, user: str, requests: set[Request]) -> bool:
    return any(allowed(rest, user, METACONTROLLER_GROUPS, r) for r in requests)


def blocks_owner_deletion(server: ApiServer, user: str, job: Job) -> bool:
    """Whether `user` may create (server-side dry run) a ConfigMap in the job's namespace owned
    by the job with blockOwnerDeletion, as Metacontroller makes every child."""
    uid = job.rest.get(f"/apis/kubeflow.org/v1/namespaces/{job.namespace}/mxjobs/{job.name}")
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": job.name,
             "uid": uid["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    child = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "rule-probe", "ownerReferences": [owner]}}  # fmt: skip
    groups = [f"--as-group={g}" for g in METACONTROLLER_GROUPS]
    done = server.kubectl(
        "create", "--dry-run=server", "-n", job.namespace, "-f", "-", f"--as={user}", *groups,
        input=json.dumps(child), check=False,
    )  # fmt: skip
    return done.returncode == 0
