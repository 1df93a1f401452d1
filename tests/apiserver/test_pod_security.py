"""Every workload we ship passes the `restricted` Pod Security Standard, as the real API server's
PodSecurity admission decides: a pod made from each shipped Deployment's and StatefulSet's
template is created (server-side dry run, on which admission runs) in a namespace that enforces
`restricted`. The builds: the base, every overlay (Metacontroller as with-metacontroller patches
it), every component on standalone, and the Helm chart's default render. kube-state-metrics
has no case: we ship its configuration and RBAC, never its Deployment."""

import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.apiserver import ApiServer
from tests.support import REPO
from tests.support.kustomize import OVERLAYS, RELEASE_COPY, documents, with_components
from tests.support.overlays import LAYOUT

CHART = REPO / "charts" / "mxjob-controller"
COMPONENTS = sorted(p.name for p in (REPO / "manifests" / "components").iterdir())
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}


@pytest.fixture(scope="module")
def restricted(apiserver: ApiServer) -> str:
    """A namespace of this module's that enforces `restricted` (at its latest version)."""
    name = f"restricted-{uuid.uuid4().hex[:8]}"
    labels = {"pod-security.kubernetes.io/enforce": "restricted",
              "pod-security.kubernetes.io/enforce-version": "latest"}  # fmt: skip
    apiserver.apply({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": name, "labels": labels}})  # fmt: skip
    return name


def pod_of(workload: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The pod the workload's controller would create from its template."""
    template = workload["spec"]["template"]
    name = f"{workload['kind'].lower()}-{workload['metadata']['name']}"
    labels = template.get("metadata", {}).get("labels", {})
    metadata = {"name": name, "namespace": namespace, "labels": labels}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


def refusals(apiserver: ApiServer, namespace: str, objects: list[dict[str, Any]]) -> dict[str, str]:
    """Each workload's pod that the API server refuses in `namespace`, with its message; at
    least one workload, or the case tests nothing."""
    workloads = [o for o in objects if o["kind"] in WORKLOADS]
    assert workloads, "no Deployment or StatefulSet in this build"
    refused = {}
    for workload in workloads:
        pod = pod_of(workload, namespace)
        done = apiserver.kubectl(
            "create", "--dry-run=server", "-o", "name", "-f", "-",
            input=yaml.safe_dump(pod), check=False,
        )  # fmt: skip
        if done.returncode != 0:
            refused[pod["metadata"]["name"]] = done.stderr.strip()
    return refused


def builds() -> list[Any]:
    """One case per kustomize build we ship, a folder made in the test's tmp_path; the chart
    has its own test."""
    cases = [pytest.param(lambda _: REPO / "manifests" / "base", id="base")]
    cases += [pytest.param(lambda _, o=o: OVERLAYS / o, id=o) for o in LAYOUT]
    cases += [
        pytest.param(
            lambda tmp, c=c: with_components(tmp / "with", "standalone", c), id=f"standalone+{c}"
        )
        for c in COMPONENTS
    ]
    # Metacontroller with its UID left to the platform, as on OpenShift: runAsNonRoot stays.
    cases.append(
        pytest.param(
            lambda tmp: with_components(tmp / "with", "with-metacontroller", "openshift"),
            id="with-metacontroller+openshift",
        )
    )
    return cases


@pytest.mark.parametrize("folder", builds())
def test_every_workload_of_the_build_passes_restricted(
    apiserver: ApiServer, restricted: str, folder: Callable[[Path], Path], tmp_path: Path
) -> None:
    assert refusals(apiserver, restricted, documents(folder(tmp_path))) == {}


def test_metacontroller_in_with_metacontroller_is_among_them() -> None:
    built = documents(OVERLAYS / "with-metacontroller")
    kinds = {(o["kind"], o["metadata"]["name"]) for o in built if o["kind"] in WORKLOADS}
    assert kinds == {("StatefulSet", "metacontroller"), ("Deployment", "mxjob-controller")}


def test_the_charts_default_render_passes_restricted(
    apiserver: ApiServer, restricted: str, go_tool: Callable[[str], Path]
) -> None:
    done = subprocess.run(
        [str(go_tool("helm")), "template", "mxjob-controller", str(CHART), "--namespace", restricted],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    objects = [d for d in yaml.safe_load_all(done.stdout) if d]
    assert refusals(apiserver, restricted, objects) == {}


def test_admission_runs_on_the_dry_run_and_refuses_metacontrollers_release_as_it_is(
    apiserver: ApiServer, restricted: str
) -> None:
    """Without the overlay's patch, Metacontroller's release StatefulSet is refused: the dry
    run is admitted by PodSecurity, not waved through."""
    refused = refusals(apiserver, restricted, documents(RELEASE_COPY))
    assert list(refused) == ["statefulset-metacontroller"]
    message = refused["statefulset-metacontroller"]
    assert 'violates PodSecurity "restricted:latest"' in message
    for check in ("allowPrivilegeEscalation != false", "unrestricted capabilities",
                  "runAsNonRoot != true", "seccompProfile"):  # fmt: skip
        assert check in message, message
