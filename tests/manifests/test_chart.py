"""The Helm chart under the real helm (scripts/go-tools.sh): `helm lint --strict`, and
`helm template` compared object by object with `kubectl kustomize` of the overlay and
components that install the same thing. The chart reads every object from the manifests
(charts/mxjob-controller/files/ links to them), so a manifest change reaches it; a value that
stops matching its overlay is caught here."""

import copy
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from app import __version__
from tests.support import REPO
from tests.support.kustomize import documents, with_components

# Each case renders the chart with the real helm: about a second each.
pytestmark = pytest.mark.slow

CHART = REPO / "charts" / "mxjob-controller"
# What Helm adds to the manifests' objects, and nothing else.
HELM_LABELS = {
    "helm.sh/chart": f"mxjob-controller-{__version__}",
    "app.kubernetes.io/managed-by": "Helm",
    "app.kubernetes.io/instance": "mxjob-controller",
    "app.kubernetes.io/version": __version__,
}
KEEP = {"helm.sh/resource-policy": "keep"}
Objects = dict[tuple[str, str], dict[str, Any]]


def run(command: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def helm(go_tool: Callable[[str], Path]) -> Callable[..., subprocess.CompletedProcess[str]]:
    binary = str(go_tool("helm"))
    return lambda *args, check=True: run([binary, *args], check=check)


def template(helm: Callable[..., Any], namespace: str, *values: str) -> Objects:
    done = helm("template", "mxjob-controller", str(CHART), "--namespace", namespace, *values)
    return keyed(yaml.safe_load_all(done.stdout))


def keyed(items: Any) -> Objects:
    objects: Objects = {}
    for document in items:
        if document:
            key = (document["kind"], document["metadata"]["name"])
            assert key not in objects, f"{key} twice"
            objects[key] = document
    return objects


def kustomize(tmp_path: Path, overlay: str, *components: str) -> Objects:
    """`kubectl kustomize` of an overlay, with components added by a throwaway overlay."""
    target = REPO / "manifests" / "overlays" / overlay
    if components:
        target = with_components(tmp_path / "wrapper", overlay, *components)
    # Helm installs into an existing namespace (--create-namespace), it never owns one.
    return {k: v for k, v in keyed(documents(target)).items() if k[0] != "Namespace"}


def without_helm_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """The object less exactly what Helm adds; fails if an added label is missing or changed."""
    obj = copy.deepcopy(obj)
    labels = obj["metadata"]["labels"]
    assert {k: labels.pop(k, None) for k in HELM_LABELS} == HELM_LABELS
    if obj["kind"] == "CustomResourceDefinition":
        assert obj["metadata"].pop("annotations") == KEEP
    return obj


SCRAPERS = (
    "--set-string",
    r"monitoring.namespaceSelector.kubernetes\.io/metadata\.name=monitoring",
)
# (overlay, components, helm values): the same install two ways.
CASES = {
    "standalone": ("standalone", (), ()),
    "volcano": ("volcano", (), ("--set", "gang=volcano")),
    "scheduler-plugins": ("scheduler-plugins", (), ("--set", "gang=scheduler-plugins")),
    "events": ("standalone", ("events",), ("--set", "events=true")),
    "kueue": ("kueue", (), ("--set", "kueue=true")),
    "monitoring": (
        "standalone",
        ("monitoring", "networkpolicy-monitoring"),
        (
            "--set",
            "monitoring.podMonitor.enabled=true",
            "--set",
            "monitoring.prometheusRule.enabled=true",
            "--set",
            "monitoring.dashboard.enabled=true",
            "--set-string",
            r"monitoring.namespaceSelector.kubernetes\.io/metadata\.name=monitoring",
        ),
    ),
    "kube-state-metrics": (
        "standalone",
        ("kube-state-metrics",),
        ("--set", "monitoring.kubeStateMetrics.enabled=true"),
    ),
    "ttl-controller": ("standalone", ("ttl-controller",), ("--set", "ttlController.enabled=true")),
    # The components' NetworkPolicies open to the scrapers as the hook's does.
    "components-monitored": (
        "kueue",
        ("ttl-controller", "networkpolicy-monitoring"),
        ("--set", "kueue=true", "--set", "ttlController.enabled=true", *SCRAPERS),
    ),
}


@pytest.mark.parametrize(("overlay", "components", "values"), CASES.values(), ids=CASES)
def test_chart_renders_the_objects_of_the_overlay(
    helm: Callable[..., Any],
    tmp_path: Path,
    overlay: str,
    components: tuple[str, ...],
    values: tuple[str, ...],
) -> None:
    expected = kustomize(tmp_path, overlay, *components)
    rendered = template(helm, "mxjob-system", *values)
    assert sorted(rendered) == sorted(expected)
    for key, obj in rendered.items():
        assert without_helm_metadata(obj) == expected[key], key


@pytest.mark.parametrize("roles", [False, True], ids=["without-roles", "kubeflowRoles"])
def test_chart_in_kubeflow_matches_the_kubeflow_overlay(
    helm: Callable[..., Any], tmp_path: Path, roles: bool
) -> None:
    """Without `kubeflowRoles` the chart has no Kubeflow roles and the rest matches the kubeflow
    overlay; with it, the overlay's three ClusterRoles too, object by object."""
    expected = kustomize(tmp_path, "kubeflow")
    cluster_roles = {key for key in expected if key[0] == "ClusterRole"}
    assert len(cluster_roles) == 3
    if roles:  # the command docs/install.md gives, as `helm template`
        (command,) = re.findall(
            r"^helm install mxjob-controller charts/mxjob-controller --namespace kubeflow .*?\n(?!  )",
            (REPO / "docs" / "install.md").read_text(),
            re.M | re.S,
        )
        args = shlex.split(command.replace("\\\n", " "))
        assert args[:4] == ["helm", "install", "mxjob-controller", "charts/mxjob-controller"]
        args[3] = str(CHART)
        rendered = keyed(yaml.safe_load_all(helm("template", *args[2:]).stdout))
    else:
        rendered = template(
            helm, "kubeflow", "--set-string", r"podAnnotations.sidecar\.istio\.io/inject=false"
        )
    assert sorted(rendered) == sorted(expected if roles else set(expected) - cluster_roles)
    for key, obj in rendered.items():
        assert without_helm_metadata(obj) == expected[key], key


def test_helm_lint_strict(helm: Callable[..., Any]) -> None:
    for values in ((), ("--set", "gang=volcano", "--set", "tokenSecret.name=hook-token")):
        done = helm("lint", "--strict", str(CHART), *values)
        assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def hook(objects: Objects) -> dict[str, Any]:
    container: dict[str, Any] = objects["Deployment", "mxjob-controller"]["spec"]["template"][
        "spec"
    ]["containers"][0]
    return container


def test_values_image_replicas_resources_pull_secrets(helm: Callable[..., Any]) -> None:
    default = template(helm, "ml")
    assert hook(default)["image"] == f"ghcr.io/mxjob-controller/mxjob-controller:{__version__}"
    objects = template(
        helm, "ml",
        "--set", "image.repository=registry.example.com/ml/mxjob-controller",
        "--set", "image.tag=0.1.0-dev", "--set", "image.pullPolicy=Always",
        "--set", "replicas=3",
        "--set", "resources.requests.cpu=200m", "--set", "resources.requests.memory=300Mi",
        "--set", "resources.limits.memory=2Gi",
        "--set", "imagePullSecrets[0].name=my-registry",
        "--set", "metacontrollerNamespace=mc",
    )  # fmt: skip
    deployment = objects["Deployment", "mxjob-controller"]
    assert deployment["spec"]["replicas"] == 3
    assert (hook(objects)["image"], hook(objects)["imagePullPolicy"]) == (
        "registry.example.com/ml/mxjob-controller:0.1.0-dev",
        "Always",
    )
    assert hook(objects)["resources"] == {
        "requests": {"cpu": "200m", "memory": "300Mi"},
        "limits": {"memory": "2Gi"},
    }
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "my-registry"}]
    (rule,) = objects["NetworkPolicy", "mxjob-controller"]["spec"]["ingress"]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "mc"}}}
    ]
    webhook = objects["CompositeController", "mxjob-controller"]["spec"]["hooks"]["sync"]["webhook"]
    assert webhook["service"]["namespace"] == "ml"
    assert all(o["metadata"].get("namespace") in {"ml", None} for o in objects.values())


def test_token_secret_reaches_the_hook_and_metacontroller(helm: Callable[..., Any]) -> None:
    objects = template(
        helm, "ml", "--set", "tokenSecret.name=hook-token", "--set", "tokenSecret.key=bearer"
    )
    pod = objects["Deployment", "mxjob-controller"]["spec"]["template"]["spec"]
    assert hook(objects)["env"] == [
        {"name": "MXJOB_AUTH_TOKEN_FILE", "value": "/etc/mxjob/token/bearer"}
    ]
    assert {"name": "token", "mountPath": "/etc/mxjob/token", "readOnly": True} in hook(objects)[
        "volumeMounts"
    ]
    assert {"name": "token", "secret": {"secretName": "hook-token", "defaultMode": 0o440}} in pod[
        "volumes"
    ]
    assert "fsGroup" not in pod["securityContext"], "the hook's group 0 reads the files"
    webhook = objects["CompositeController", "mxjob-controller"]["spec"]["hooks"]["sync"]["webhook"]
    assert webhook["authorization"] == {
        "type": "Bearer",
        "secretRef": {"name": "hook-token", "namespace": "ml", "key": "bearer"},
    }


def test_the_kueue_status_writer_comes_with_kueue_and_can_be_left_out(
    helm: Callable[..., Any],
) -> None:
    """On by default with kueue, as in the kueue overlay; never without kueue."""
    writer = ("Deployment", "mxjob-controller-kueue-status")
    assert writer in template(helm, "ml", "--set", "kueue=true")
    assert writer not in template(helm, "ml", "--set", "kueue=true", "--set",
                                  "kueueStatusWriter=false")  # fmt: skip
    assert writer not in template(helm, "ml")


def test_crd_can_be_left_to_helm_uninstall(helm: Callable[..., Any]) -> None:
    crd = template(helm, "ml", "--set", "crd.keep=false")[
        "CustomResourceDefinition", "mxjobs.kubeflow.org"
    ]
    assert "annotations" not in crd["metadata"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(("--set", "gang=kueue"), 'gang: "kueue" is not one of', id="unknown-gang"),
    ],
)
def test_bad_values_fail_with_a_reason(
    helm: Callable[..., Any], values: tuple[str, ...], message: str
) -> None:
    done = helm("template", "x", str(CHART), *values, check=False)
    assert done.returncode == 1
    assert message in done.stderr


def test_chart_version_is_the_app_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (__version__, __version__)


def test_kube_state_metrics_values_name_its_service_account(helm: Callable[..., Any]) -> None:
    """kube-prometheus-stack's kube-state-metrics: the binding's subject and the ConfigMap's
    namespace follow the values."""
    objects = template(
        helm, "ml",
        "--set", "monitoring.kubeStateMetrics.enabled=true",
        "--set", "monitoring.kubeStateMetrics.serviceAccount.name=kps-kube-state-metrics",
        "--set", "monitoring.kubeStateMetrics.serviceAccount.namespace=monitoring",
    )  # fmt: skip
    binding = objects["ClusterRoleBinding", "mxjob-controller-kube-state-metrics"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kps-kube-state-metrics", "namespace": "monitoring"}
    ]
    assert objects["ConfigMap", "mxjob-state-metrics"]["metadata"]["namespace"] == "monitoring"


def test_kueues_customize_hook_is_called_like_the_sync_hook(helm: Callable[..., Any]) -> None:
    """Same Service, namespace, timeout and bearer token; only the path differs."""
    objects = template(
        helm, "ml", "--set", "kueue=true", "--set", "tokenSecret.name=hook-token"
    )  # fmt: skip
    hooks = objects["CompositeController", "mxjob-controller"]["spec"]["hooks"]
    sync, customize = hooks["sync"]["webhook"], hooks["customize"]["webhook"]
    assert customize == sync | {"path": "/customize"}
    assert customize["authorization"]["secretRef"]["namespace"] == "ml"
    assert hooks["sync"]["version"] == "v2"
