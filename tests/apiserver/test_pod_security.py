"""Every workload we ship passes the `restricted` Pod Security Standard, as the real API server's
PodSecurity admission decides: a pod made from each shipped Deployment's and StatefulSet's
template is created (server-side dry run, on which admission runs) in a namespace that enforces
`restricted`. The builds: the base, every overlay (Metacontroller as with-metacontroller patches
it), every component on standalone, and the Helm chart's default render. kube-state-metrics
has no case: we ship its configuration and RBAC, never its Deployment. Every example's pods, as
the hook makes them, are created there the same way."""

import subprocess
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.core.render import render_report
from localcluster.apiserver import ApiServer
from tests.support import REPO
from tests.support.kustomize import OVERLAYS, RELEASE_COPY, documents, with_components
from tests.support.overlays import LAYOUT
from tests.support.podsecurity_cases import EXAMPLES, JOB_EXAMPLES

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
    least one workload, or the case tests nothing. The build's PriorityClass is created first:
    the Priority admission plugin refuses a pod that names a class the cluster lacks."""
    workloads = [o for o in objects if o["kind"] in WORKLOADS]
    assert workloads, "no Deployment or StatefulSet in this build"
    classes = [o for o in objects if o["kind"] == "PriorityClass"]
    if classes:
        apiserver.apply(*classes)
    return refused_pods(apiserver, namespace, [pod_of(w, namespace) for w in workloads])


def refused_pods(
    apiserver: ApiServer, namespace: str, pods: list[dict[str, Any]]
) -> dict[str, str]:
    """Each pod the API server refuses in `namespace`, with its message."""
    refused = {}
    for pod in pods:
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


def example_pods(text: str, namespace: str) -> list[dict[str, Any]]:
    """The pods the hook makes for the MXJobs of `text` at their creation, in `namespace`."""
    rendered = render_report(text, datetime.now(UTC), namespace)
    assert rendered.invalid == []
    pods = [d for d in yaml.safe_load_all(rendered.text) if d["kind"] == "Pod"]
    assert pods, "the hook made no pod"
    return pods


def test_every_example_holds_a_job() -> None:
    names = [str(p.relative_to(EXAMPLES)) for p in JOB_EXAMPLES]
    assert names == ["dist-cpu.yaml", "dist-gpu.yaml", "kueue/job.yaml", "single-worker.yaml",
                     "tune.yaml"]  # fmt: skip


@pytest.mark.parametrize("example", JOB_EXAMPLES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_pod_of_the_example_passes_restricted(
    apiserver: ApiServer, restricted: str, example: Path
) -> None:
    pods = example_pods(example.read_text(), restricted)
    assert refused_pods(apiserver, restricted, pods) == {}


def without_security_context(job: dict[str, Any]) -> dict[str, Any]:
    """The job with no securityContext in any pod or container of its templates."""
    for replica in job["spec"]["mxReplicaSpecs"].values():
        spec = replica["template"]["spec"]
        spec.pop("securityContext")
        for container in spec["containers"]:
            container.pop("securityContext")
    return job


def test_an_example_without_its_security_context_is_refused(
    apiserver: ApiServer, restricted: str
) -> None:
    """The examples before they had one: each pod refused, so the case above can fail."""
    job = without_security_context(yaml.safe_load((EXAMPLES / "dist-cpu.yaml").read_text()))
    pods = example_pods(yaml.safe_dump(job), restricted)
    refused = refused_pods(apiserver, restricted, pods)
    assert sorted(refused) == sorted(p["metadata"]["name"] for p in pods)
    for message in refused.values():
        assert 'violates PodSecurity "restricted:latest"' in message
        for check in ("allowPrivilegeEscalation != false", "unrestricted capabilities",
                      "runAsNonRoot != true", "seccompProfile"):  # fmt: skip
            assert check in message, message
