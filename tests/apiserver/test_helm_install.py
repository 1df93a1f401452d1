"""`helm install`, `upgrade` and `uninstall` of the chart with the real helm, against an API
server of its own (the chart installs our CompositeController and owns the MXJob CRD, which the
shared server's tests and real stack must not see change hands)."""

import base64
import gzip
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from app import __version__
from localcluster.apiserver import ApiServer, Binaries, KubectlError, cluster
from localcluster.realstack import metacontroller_crds
from tests.support import REPO

CHART = REPO / "charts" / "mxjob-controller"
NAMESPACE = "mxjob-system"
# Helm keeps each release in a Secret, which the API server caps at 1 MiB.
SECRET_LIMIT = 1024 * 1024


@pytest.fixture(scope="module")
def own_apiserver(
    k8s_binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApiServer]:
    with cluster(k8s_binaries, tmp_path_factory.mktemp("helm")) as server:
        crds = [d for d in yaml.safe_load_all(metacontroller_crds().read_text()) if d]
        server.apply(*crds)
        names = [f"crd/{crd['metadata']['name']}" for crd in crds]
        server.wait_established(*names)
        yield server


def test_helm_install_upgrade_uninstall(
    own_apiserver: ApiServer, go_tool: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server = own_apiserver

    def helm(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(go_tool("helm")), f"--kubeconfig={server.kubeconfig}", "-n", NAMESPACE, *args],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    helm("install", "mxjob-controller", str(CHART), "--create-namespace",
         "--set", "tokenSecret.name=hook-token")  # fmt: skip
    deployment = server.get("deployment", "mxjob-controller", "-n", NAMESPACE)
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"ghcr.io/mxjob-controller/mxjob-controller:{__version__}"
    controller = server.get("compositecontroller", "mxjob-controller")
    webhook = controller["spec"]["hooks"]["sync"]["webhook"]
    assert webhook["service"]["namespace"] == NAMESPACE
    assert webhook["authorization"]["secretRef"]["name"] == "hook-token"
    crd = server.get("crd", "mxjobs.kubeflow.org")
    assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == "mxjob-controller"

    # The release record: gzip + base64 inside the Secret's base64; well under the cap.
    secret = server.get("secret", "sh.helm.release.v1.mxjob-controller.v1", "-n", NAMESPACE)
    stored = len(json.dumps(secret))
    release = json.loads(
        gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"])))
    )
    assert release["chart"]["metadata"]["version"] == __version__
    assert stored < SECRET_LIMIT / 2
    with capsys.disabled():
        print(f"\nhelm release Secret: {stored} bytes ({stored / SECRET_LIMIT:.0%} of 1 MiB)")

    helm("upgrade", "mxjob-controller", str(CHART), "--reuse-values", "--set", "replicas=3")
    assert server.get("deployment", "mxjob-controller", "-n", NAMESPACE)["spec"]["replicas"] == 3

    helm("uninstall", "mxjob-controller")
    with pytest.raises(KubectlError, match="NotFound"):
        server.get("deployment", "mxjob-controller", "-n", NAMESPACE)
    with pytest.raises(KubectlError, match="NotFound"):
        server.get("compositecontroller", "mxjob-controller")
    # crd.keep: deleting the CRD would delete every MXJob.
    assert server.get("crd", "mxjobs.kubeflow.org")["metadata"]["name"] == "mxjobs.kubeflow.org"


def test_the_chart_owns_its_namespace_and_the_adoption_guard_on_request(
    own_apiserver: ApiServer, go_tool: Callable[[str], Path]
) -> None:
    """docs/install.md's other way: the namespace created first, then taken over by the chart
    (`--take-ownership`), which labels it for `restricted` and keeps it on uninstall; with the
    adoption guard, which uninstall removes."""
    server, namespace, guard = own_apiserver, "mxjob-owned", "mxjob-children-are-not-adopted"
    server.kubectl("create", "namespace", namespace)
    done = subprocess.run(
        [str(go_tool("helm")), f"--kubeconfig={server.kubeconfig}", "-n", namespace, "install",
         "mxjob-controller", str(CHART), "--take-ownership", "--set", "namespace.create=true",
         "--set", "adoptionGuard=true"],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    labels = server.get("namespace", namespace)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["app.kubernetes.io/managed-by"] == "Helm"
    assert server.get("validatingadmissionpolicybinding", guard)["spec"]["policyName"] == guard
    assert server.get("priorityclass", "mxjob-controller-control-plane")["value"] == 1_000_000
    subprocess.run(
        [str(go_tool("helm")), f"--kubeconfig={server.kubeconfig}", "-n", namespace, "uninstall",
         "mxjob-controller"], capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip
    kept = server.get("namespace", namespace)["metadata"]["labels"]
    assert kept["pod-security.kubernetes.io/enforce"] == "restricted"
    with pytest.raises(KubectlError, match="NotFound"):
        server.get("validatingadmissionpolicy", guard)
