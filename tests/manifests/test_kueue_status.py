"""The kueue-status component (docs/kueue.md): the Workload-status writer runs the hook's image
in the hook's namespace, whatever the overlay made them, hardened, with the least RBAC, probed
on its metrics port (who may connect to it: tests/manifests/test_network_policies.py)."""

from typing import Any

import pytest

from tests.support.kustomize import overlay_objects

NAME = "mxjob-controller-kueue-status"


def writer_objects(overlay: str) -> dict[str, dict[str, Any]]:
    docs = overlay_objects(overlay, "kueue", "kueue-status")
    hook = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == (
        "mxjob-controller"))  # fmt: skip
    found = {d["kind"]: d for d in docs if d["metadata"]["name"] == NAME}
    found["hook"] = hook
    return found


@pytest.mark.parametrize(("overlay", "namespace"), [("standalone", "mxjob-system"),
                                                    ("kubeflow", "kubeflow")])  # fmt: skip
def test_the_writer_follows_the_hooks_namespace_and_image(overlay: str, namespace: str) -> None:
    objs = writer_objects(overlay)
    assert sorted(objs) == [
        "ClusterRole", "ClusterRoleBinding", "Deployment", "NetworkPolicy", "ServiceAccount",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "hook",
    ]  # fmt: skip
    deployment = objs["Deployment"]
    assert deployment["metadata"]["namespace"] == namespace
    assert objs["ServiceAccount"]["metadata"]["namespace"] == namespace
    assert objs["NetworkPolicy"]["metadata"]["namespace"] == namespace
    assert objs["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": NAME, "namespace": namespace}
    ]
    (writer,) = deployment["spec"]["template"]["spec"]["containers"]
    (hook,) = objs["hook"]["spec"]["template"]["spec"]["containers"]
    assert writer["image"] == hook["image"]
    assert writer["command"] == [
        "mxjob-controller", "kueue-status", "--host", "0.0.0.0", "--port", "9090",
    ]  # fmt: skip
    assert writer["ports"] == [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}]
    for probe in ("livenessProbe", "readinessProbe"):
        assert writer[probe]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert writer["securityContext"] == hook["securityContext"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == NAME
    assert pod["securityContext"] == objs["hook"]["spec"]["template"]["spec"]["securityContext"]


def test_the_writer_has_the_least_rbac() -> None:
    rules = writer_objects("standalone")["ClusterRole"]["rules"]
    assert rules == [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    ]  # fmt: skip
