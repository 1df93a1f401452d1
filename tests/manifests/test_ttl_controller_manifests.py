"""The ttl-controller component (manifests/components/ttl-controller) added to an overlay with
the real `kubectl kustomize`: valid Kubernetes objects, in the hook's namespace and on its image,
hardened as the hook's pods are, allowed to read and delete MXJobs and nothing else."""

from typing import Any

import pytest

from app import __version__
from tests.support import kube_schemas
from tests.support.kustomize import overlay_objects
from tests.support.overlays import IMAGE, LAYOUT

OVERLAYS = ("standalone", "kubeflow")
# As tests/manifests/test_manifests.py: the newest schemas kubernetes-validate ships, the oldest
# release the install supports.
KUBERNETES, OLDEST = "1.37.0", "1.28.0"
KINDS = ["ClusterRole", "ClusterRoleBinding", "Deployment", "NetworkPolicy", "ServiceAccount"]


@pytest.fixture(scope="module", params=OVERLAYS)
def objects(request: pytest.FixtureRequest) -> dict[str, Any]:
    """`kind: object` of the component's objects in the overlay, the hook's Deployment
    (`hook`) and the overlay's namespace (`namespace`)."""
    every = overlay_objects(request.param, "ttl-controller")
    found = {d["kind"]: d for d in every if d["metadata"]["name"] == "mxjob-ttl-controller"}
    assert sorted(found) == KINDS
    (hook,) = (
        d
        for d in every
        if d["kind"] == "Deployment" and d["metadata"]["name"] == "mxjob-controller"
    )
    return found | {"hook": hook, "namespace": LAYOUT[request.param][0]}


def pod(deployment: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("version", [OLDEST, KUBERNETES])
def test_every_object_is_valid_kubernetes(objects: dict[str, Any], version: str) -> None:
    for kind in KINDS:
        kube_schemas.validate(objects[kind], version)


def test_it_runs_in_the_hooks_namespace_on_the_hooks_image(objects: dict[str, Any]) -> None:
    namespace = objects["namespace"]
    assert objects["Deployment"]["metadata"]["namespace"] == namespace
    assert objects["ServiceAccount"]["metadata"]["namespace"] == namespace
    assert objects["NetworkPolicy"]["metadata"]["namespace"] == namespace
    assert objects["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "mxjob-ttl-controller", "namespace": namespace}
    ]
    (container,) = pod(objects["Deployment"])["containers"]
    assert container["image"] == f"{IMAGE}:{__version__}"
    assert container["command"] == [
        "mxjob-controller", "ttl-controller", "--host", "0.0.0.0", "--port", "9090",
    ]  # fmt: skip
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "metrics"}


def test_it_may_read_and_delete_mxjobs_and_nothing_else(objects: dict[str, Any]) -> None:
    assert objects["ClusterRole"]["rules"] == [
        {
            "apiGroups": ["kubeflow.org"],
            "resources": ["mxjobs"],
            "verbs": ["get", "list", "watch", "delete"],
        }
    ]
    assert objects["ClusterRoleBinding"]["roleRef"]["name"] == "mxjob-ttl-controller"
    assert pod(objects["Deployment"])["serviceAccountName"] == "mxjob-ttl-controller"


def test_its_pod_is_hardened_as_the_hooks(objects: dict[str, Any]) -> None:
    """The same pod and container security contexts, read-only root and scratch /tmp; only its
    token is mounted, since it calls the API server."""
    ours, hooks = pod(objects["Deployment"]), pod(objects["hook"])
    assert ours["securityContext"] == hooks["securityContext"]
    assert ours["containers"][0]["securityContext"] == hooks["containers"][0]["securityContext"]
    assert ours["volumes"] == hooks["volumes"]
    assert ours["containers"][0]["volumeMounts"] == hooks["containers"][0]["volumeMounts"]
    assert (ours["automountServiceAccountToken"], hooks["automountServiceAccountToken"]) == (
        True,
        False,
    )
    assert set(ours["containers"][0]["resources"]) == {"requests", "limits"}
