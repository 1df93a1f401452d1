"""Every overlay builds into objects the API server accepts, laid out as the overlay says; so
do the hook's children in the golden files. What Metacontroller accepts: in
test_composite_controller.py."""

import json
import re
from typing import Any

import pytest

from app import __version__
from tests.support import REPO, kube_schemas, yamls
from tests.support.overlays import HOOK_LABELS, IMAGE, LAYOUT, build, the

OVERLAYS = REPO / "manifests" / "overlays"
KUBERNETES = "1.37.0"  # the newest release kubernetes-validate ships schemas for
# The oldest release the install supports: CEL rules with `reason` and `fieldPath` came in 1.28.
OLDEST = "1.28.0"
# ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) came in 1.30: the adoption guard,
# the kueue component's queue label rules.
OLDEST_WITH_GUARD = "1.30.0"
GUARD = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "CompositeController", "PriorityClass"}
# Cluster-scoped objects only some overlays add: aggregated roles, admission policies.
OVERLAY_CLUSTER_SCOPED = {
    "kubeflow": {"ClusterRole"},
    "kueue": {"ClusterRole", "ClusterRoleBinding"} | GUARD,
    "with-metacontroller": GUARD,
}


def test_every_overlay_is_covered() -> None:
    assert sorted(p.name for p in OVERLAYS.iterdir()) == sorted(LAYOUT)


def built_in_objects() -> list[Any]:
    """One case per object and Kubernetes version."""
    return [
        pytest.param(overlay, n, version, id=f"{overlay}-{kind}-{version}")
        for overlay in LAYOUT
        for n, kind in enumerate(d["kind"] for d in build(overlay))
        if kind != "CompositeController"
        for version in (
            OLDEST_WITH_GUARD if overlay in ("with-metacontroller", "kueue") else OLDEST,
            KUBERNETES,
        )
    ]


def test_the_adoption_guard_needs_kubernetes_1_30() -> None:
    (policy,) = (
        d for d in build("with-metacontroller") if d["kind"] == "ValidatingAdmissionPolicy"
    )
    with pytest.raises(kube_schemas.SchemaNotFoundError):
        kube_schemas.validate(policy, "1.29.0")


@pytest.mark.parametrize(("overlay", "index", "version"), built_in_objects())
def test_built_in_object_is_valid_kubernetes(overlay: str, index: int, version: str) -> None:
    kube_schemas.validate(build(overlay)[index], version)


def test_crd_needs_kubernetes_1_28() -> None:
    with pytest.raises(kube_schemas.ValidationError, match="fieldPath"):
        kube_schemas.validate(the("standalone", "CustomResourceDefinition"), "1.27.0")


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "x"},
                "spec": {"port": 80},
            },
            id="unknown-field",
        ),
        pytest.param(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "spec": {"minAvailable": []},
            },
            id="wrong-type",
        ),
    ],
)
def test_kubernetes_validation_is_strict(doc: dict[str, Any]) -> None:
    with pytest.raises(kube_schemas.ValidationError):
        kube_schemas.validate(doc, KUBERNETES)


@pytest.mark.parametrize(("overlay", "layout"), LAYOUT.items())
def test_namespaces(overlay: str, layout: tuple[str, bool, Any]) -> None:
    namespace, creates_it, _ = layout
    placed = {(doc["kind"], doc["metadata"].get("namespace")) for doc in build(overlay)}
    namespaced = {"ServiceAccount", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"}
    cluster = CLUSTER_SCOPED if creates_it else CLUSTER_SCOPED - {"Namespace"}
    cluster = cluster | OVERLAY_CLUSTER_SCOPED.get(overlay, set())
    assert placed == {(k, namespace) for k in namespaced} | {(k, None) for k in cluster}
    if creates_it:
        assert the(overlay, "Namespace")["metadata"]["name"] == namespace


@pytest.mark.parametrize("overlay", LAYOUT)
def test_crd_is_installed_as_written(overlay: str) -> None:
    written = yamls.load((REPO / "manifests" / "base" / "crd.yaml").read_text())
    assert the(overlay, "CustomResourceDefinition") == written


@pytest.mark.parametrize("overlay", LAYOUT)
def test_objects_select_the_hook_pods(overlay: str) -> None:
    pod_labels = the(overlay, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert pod_labels == HOOK_LABELS
    assert the(overlay, "Deployment")["spec"]["selector"] == {"matchLabels": HOOK_LABELS}
    assert the(overlay, "Service")["spec"]["selector"] == HOOK_LABELS
    assert the(overlay, "PodDisruptionBudget")["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": HOOK_LABELS},
    }
    assert the(overlay, "NetworkPolicy")["spec"] == {
        "podSelector": {"matchLabels": HOOK_LABELS},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": "metacontroller"}
                        }
                    }
                ],
                "ports": [{"protocol": "TCP", "port": "http"}],
            }
        ],
    }


@pytest.mark.parametrize("overlay", LAYOUT)
def test_service_reaches_the_hook_port(overlay: str) -> None:
    (container,) = the(overlay, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert the(overlay, "Service")["spec"]["ports"] == [
        {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}
    ]


@pytest.mark.parametrize("overlay", LAYOUT)
def test_hook_pods_are_hardened(overlay: str) -> None:
    deployment = the(overlay, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert deployment["spec"]["replicas"] == 2
    assert (pod["automountServiceAccountToken"], pod["securityContext"]) == (
        False,
        {
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    )
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert set(container["resources"]) == {"requests", "limits"}
    assert [c["topologyKey"] for c in pod["topologySpreadConstraints"]] == [
        "kubernetes.io/hostname"
    ]


@pytest.mark.parametrize("overlay", LAYOUT)
def test_hook_container_serves_and_is_probed(overlay: str) -> None:
    (container,) = the(overlay, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["command"]) == (
        f"{IMAGE}:{__version__}",
        ["mxjob-controller", "serve", "--host", "0.0.0.0", "--port", "8080"],
    )
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}


def golden_children() -> list[Any]:
    return [
        pytest.param(
            child, id=f"{path.name.split('.')[0]}-{child['kind']}-{child['metadata']['name']}"
        )
        for path in sorted((REPO / "tests" / "golden").glob("*.response.json"))
        for child in json.loads(path.read_text()).get("children", [])
        if child["kind"] in {"Pod", "Service"}
    ]


@pytest.mark.parametrize("child", golden_children())
def test_golden_pods_and_services_are_valid_kubernetes(child: dict[str, Any]) -> None:
    kube_schemas.validate(child, KUBERNETES)


def test_kubeflow_hook_pods_run_without_an_istio_sidecar() -> None:
    """Kubeflow labels its namespaces for Istio injection; Metacontroller calls the hook in
    plain HTTP, so a sidecar under STRICT mTLS would refuse every sync."""
    for overlay in LAYOUT:
        template = the(overlay, "Deployment")["spec"]["template"]
        annotations = template["metadata"].get("annotations") or {}
        if overlay == "kubeflow":
            assert annotations == {"sidecar.istio.io/inject": "false"}
        else:
            assert "sidecar.istio.io/inject" not in annotations, overlay


# A file a comment names (`tests/...py::test`, `prometheusrule.yaml`, `../../base/...`).
NAMED_FILE = re.compile(
    r"(?<![\w/.:-])((?:\.\./)*[\w.-]+(?:/[\w.-]+)*\.(?:py|yaml|json|md|sh))(?:::(\w+))?"
)


def test_manifest_comments_name_files_that_exist() -> None:
    """Each file a comment of manifests/, metacontroller/ or the chart names exists (from the
    repository, manifests/, the comment's folder or the one above), and so does the test it
    names after `::`."""
    missing = []
    for folder in ("manifests", "metacontroller", "charts"):
        for path in sorted((REPO / folder).rglob("*.yaml")):
            comments = [s for s in path.read_text().splitlines() if s.lstrip().startswith("#")]
            for match in (m for line in comments for m in NAMED_FILE.finditer(line)):
                name, test = match.groups()
                bases = (REPO, REPO / "manifests", path.parent, path.parent.parent)
                found = next((b / name for b in bases if (b / name).is_file()), None)
                if found is None or (test and f"def {test}(" not in found.read_text()):
                    missing.append(f"{path.relative_to(REPO)}: {match.group(0)}")
    assert missing == []
