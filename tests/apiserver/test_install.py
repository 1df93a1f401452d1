"""What a cluster install is made of, on the real API server: the Helm chart's objects, the
monitoring components under prometheus-operator's real CRDs, Kubeflow profile roles through
kube-controller-manager's own aggregation controller, and cascading deletes by its garbage
collector (both from scripts/kube-controllers)."""

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.apiserver import ApiServer, KubectlError
from localcluster.crds import install_crds
from localcluster.realstack import metacontroller_crds
from localcluster.waiting import wait_for
from tests.support import FIXTURES, REPO
from tests.support.controllers import AGGREGATION, GARBAGE_COLLECTOR, kube_controllers
from tests.support.documented import authorization
from tests.support.kustomize import documents, with_components

CHART = REPO / "charts" / "mxjob-controller"
KUBEFLOW_ROLES = FIXTURES / "kubeflow" / "kubeflow-roles.yaml"
EXAMPLE = REPO / "examples" / "single-worker.yaml"


def install(server: ApiServer, *paths: Path) -> None:
    crds = [d for path in paths for d in yaml.safe_load_all(path.read_text()) if d]
    server.apply(*crds)
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    server.wait_established(*names)


def dry_run(server: ApiServer, documents: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    """Server-side apply with strict field validation, admitted but not stored."""
    return server.kubectl(
        "apply", "--server-side", "--dry-run=server", "--validate=strict",
        "--field-manager=mxjob-install-test", "-f", "-",
        input=yaml.safe_dump_all(documents, sort_keys=False), check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def monitoring_crds(apiserver: ApiServer, go_tool: Callable[[str], Path]) -> None:
    """prometheus-operator's CRDs (PodMonitor, ServiceMonitor, PrometheusRule), as released."""
    install(apiserver, *sorted(go_tool("monitoring-crds").glob("monitoring.coreos.com_*.yaml")))


@pytest.fixture(scope="module")
def metacontroller_api(apiserver: ApiServer) -> None:
    install(apiserver, metacontroller_crds())


def test_chart_with_every_option_is_accepted(
    apiserver: ApiServer,
    go_tool: Callable[[str], Path],
    namespace: str,
    monitoring_crds: None,
    metacontroller_api: None,
) -> None:
    rendered = subprocess.run(
        [
            str(go_tool("helm")), "template", "mxjob-controller", str(CHART), "-n", namespace,
            "--set", "tokenSecret.name=hook-token", "--set", "gang=volcano",
            "--set", "monitoring.podMonitor.enabled=true",
            "--set", "monitoring.prometheusRule.enabled=true",
            "--set", "monitoring.dashboard.enabled=true",
            "--set-string", r"monitoring.namespaceSelector.kubernetes\.io/metadata\.name=monitoring",
        ],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    objects = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    done = dry_run(apiserver, objects)
    assert done.returncode == 0, done.stderr
    applied = [line for line in done.stdout.splitlines() if "serverside-applied" in line]
    assert len(applied) == len(objects) == 11  # the PriorityClass among them


@pytest.mark.parametrize("overlay", ["standalone", "kubeflow", "volcano", "scheduler-plugins"])
def test_every_overlay_is_accepted_whole(
    apiserver: ApiServer, metacontroller_api: None, overlay: str
) -> None:
    """Each overlay as `kubectl apply -k` sends it (CRD, Deployment, Service, PDB,
    NetworkPolicy, CompositeController, roles), under strict field validation: nothing
    unknown, nothing refused. Its namespace is made first (the kubeflow overlay's is
    Kubeflow's own), as a dry run does not create one for the rest."""
    objects = documents(REPO / "manifests" / "overlays" / overlay)
    namespaces = {d["metadata"]["namespace"] for d in objects if "namespace" in d["metadata"]}
    assert len(namespaces) == 1
    for name in namespaces:
        apiserver.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    done = dry_run(apiserver, objects)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    applied = [line for line in done.stdout.splitlines() if "serverside-applied" in line]
    assert len(applied) == len(objects)
    kinds = {d["kind"] for d in objects}
    assert {"CustomResourceDefinition", "Deployment", "CompositeController"} <= kinds


def test_strict_validation_refuses_the_old_authorization_form(
    apiserver: ApiServer, metacontroller_api: None
) -> None:
    """docs/security.md once showed `authorization.credentials`; Metacontroller's CRD takes
    `secretRef`, as the page now shows, and the API server says so."""
    (controller,) = documents(REPO / "metacontroller")
    webhook = controller["spec"]["hooks"]["sync"]["webhook"]
    documented = authorization()  # the form docs/security.md shows, read from the page
    secret = documented["secretRef"]
    webhook["authorization"] = {"type": "Bearer", "credentials": secret}
    refused = dry_run(apiserver, [controller])
    assert refused.returncode == 1
    assert ".spec.hooks.sync.webhook.authorization.credentials: field not declared in schema" in (
        refused.stderr
    )
    webhook["authorization"] = documented
    assert dry_run(apiserver, [controller]).returncode == 0


def test_monitoring_components_are_valid_prometheus_operator_objects(
    apiserver: ApiServer, namespace: str, monitoring_crds: None, tmp_path: Path
) -> None:
    overlay = with_components(
        tmp_path / "overlay", "standalone", "monitoring", "networkpolicy-monitoring"
    )
    wanted = {"ConfigMap", "NetworkPolicy", "PodMonitor", "PrometheusRule"}
    chosen = [d for d in documents(overlay) if d["kind"] in wanted]
    for document in chosen:
        document["metadata"]["namespace"] = namespace
    assert sorted(d["kind"] for d in chosen) == sorted(wanted)
    done = dry_run(apiserver, chosen)
    assert done.returncode == 0, done.stderr
    # The schemas are the real, strict ones: a misspelt field is refused.
    monitor = next(d for d in chosen if d["kind"] == "PodMonitor")
    monitor["spec"]["podMetricsEndpoint"] = monitor["spec"].pop("podMetricsEndpoints")
    refused = dry_run(apiserver, [monitor])
    assert refused.returncode == 1
    assert ".spec.podMetricsEndpoint: field not declared in schema" in refused.stderr


def rules_of(server: ApiServer, role: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = server.get("clusterrole", role).get("rules") or []
    return rules


def grants(rules: list[dict[str, Any]], verb: str, resource: str) -> bool:
    return any(
        "kubeflow.org" in rule.get("apiGroups", [])
        and resource in rule.get("resources", [])
        and verb in rule.get("verbs", [])
        for rule in rules
    )


@pytest.fixture(scope="module")
def kubeflow_roles(
    apiserver: ApiServer, go_tool: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Kubeflow's aggregated roles and the kubeflow overlay's, filled by the real controller."""
    install_crds(apiserver)
    overlay = documents(REPO / "manifests" / "overlays" / "kubeflow")
    ours = [d for d in overlay if d["kind"] == "ClusterRole"]
    apiserver.apply(*yaml.safe_load_all(KUBEFLOW_ROLES.read_text()), *ours)
    # Nothing fills an aggregated role but the controller: empty until it runs.
    assert not grants(rules_of(apiserver, "kubeflow-edit"), "create", "mxjobs")
    log = tmp_path_factory.mktemp("kube-controllers") / "aggregation.log"
    with kube_controllers(go_tool("kube-controllers"), apiserver, log, AGGREGATION):
        wait_for(
            lambda: (
                grants(rules_of(apiserver, "kubeflow-admin"), "delete", "mxjobs")
                and grants(rules_of(apiserver, "kubeflow-edit"), "create", "mxjobs")
                and grants(rules_of(apiserver, "kubeflow-view"), "get", "mxjobs/status")
            ),
            f"the aggregated roles hold the MXJob rules (log: {log})",
            60,
        )
        yield


def as_user(
    server: ApiServer, user: str, namespace: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return server.kubectl(f"--as={user}", "-n", namespace, *args, check=False)


def test_kubeflow_profile_roles_create_and_read_mxjobs(
    apiserver: ApiServer, kubeflow_roles: None, namespace: str
) -> None:
    for user, role in (("alice", "edit"), ("bob", "view"), ("carol", "admin")):
        apiserver.kubectl(
            "-n", namespace, "create", "rolebinding", f"{user}-{role}",
            f"--clusterrole=kubeflow-{role}", f"--user={user}",
        )  # fmt: skip
    created = as_user(apiserver, "alice", namespace, "create", "-f", str(EXAMPLE))
    assert created.returncode == 0, created.stderr
    # bob (kubeflow-view) reads the job and its status, and can change nothing.
    listed = as_user(apiserver, "bob", namespace, "get", "mxjobs", "-o", "json")
    assert [j["metadata"]["name"] for j in json.loads(listed.stdout)["items"]] == ["mnist-single"]
    status = as_user(
        apiserver, "bob", namespace, "get", "mxjob", "mnist-single", "--subresource=status"
    )
    assert status.returncode == 0, status.stderr
    for verb in (("create", "-f", str(EXAMPLE)), ("delete", "mxjob", "mnist-single"),
                 ("label", "mxjob", "mnist-single", "x=y")):  # fmt: skip
        refused = as_user(apiserver, "bob", namespace, *verb)
        assert refused.returncode == 1
        assert "Forbidden" in refused.stderr, refused.stderr
        assert '"bob" cannot' in refused.stderr
    # A user bound to nothing sees nothing; carol (kubeflow-admin) may delete.
    assert "Forbidden" in as_user(apiserver, "dave", namespace, "get", "mxjobs").stderr
    deleted = as_user(apiserver, "carol", namespace, "delete", "mxjob", "mnist-single")
    assert deleted.returncode == 0, deleted.stderr


def test_garbage_collector_deletes_an_mxjobs_children(
    apiserver: ApiServer, go_tool: Callable[[str], Path], namespace: str, tmp_path: Path
) -> None:
    install_crds(apiserver)
    job = yaml.safe_load(EXAMPLE.read_text())
    job["metadata"]["namespace"] = namespace
    apiserver.apply(job)
    uid = apiserver.get("mxjob", "mnist-single", "-n", namespace)["metadata"]["uid"]
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "mnist-single-child",
            "namespace": namespace,
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "MXJob",
                    "name": "mnist-single",
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
    }
    apiserver.apply(child)
    with kube_controllers(
        go_tool("kube-controllers"), apiserver, tmp_path / "gc.log", GARBAGE_COLLECTOR
    ):
        apiserver.kubectl("-n", namespace, "delete", "mxjob", "mnist-single")

        def gone() -> bool:
            try:
                apiserver.get("configmap", "mnist-single-child", "-n", namespace)
            except KubectlError:
                return True
            return False

        wait_for(gone, f"the child ConfigMap is collected (log: {tmp_path / 'gc.log'})", 60)
