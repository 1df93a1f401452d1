"""Kubeflow's Python SDK (kubeflow-training 1.8.1, `TrainingClient`) drives MXJobs on the real
stack: the loopback API server with our CRD, the real Metacontroller and the real hook. The test
plays the kubelet (pod status through the status subresource).

The SDK reads every MXJob into its generated model `KubeflowOrgV1MXJobSpec`, whose `run_policy`
setter raises "Invalid value for `run_policy`, must not be `None`" (client-side validation, on by
default): without `spec.runPolicy` in the stored object, `get_job`, `list_jobs` and
`wait_for_job_conditions` fail with "Failed to get MXJob". Our CRD defaults `spec.runPolicy` to
`{}`, so every job the API server returns has one."""

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubeflow.training import (
    KubeflowOrgV1MXJob,
    KubeflowOrgV1MXJobSpec,
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1RunPolicy,
    TrainingClient,
)
from kubeflow.training.api_client import ApiClient
from kubeflow.training.utils.utils import FakeResponse
from kubernetes.client import V1Container, V1ObjectMeta, V1PodSpec, V1PodTemplateSpec

from localcluster.apiserver import ApiServer, Binaries, cluster
from localcluster.crds import MXJOB_CRD
from localcluster.kubelet import Kubelet
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support import REPO

from .conftest import RealStack

MXJOB = "MXJob"
WAIT = 60  # seconds for a condition; a sync takes well under one on this stack
POLL = 1


def without_run_policy(example: str) -> dict[str, Any]:
    """An example manifest with its `spec.runPolicy` taken out."""
    job: dict[str, Any] = yaml.safe_load((REPO / "examples" / example).read_text())
    job["spec"].pop("runPolicy", None)
    return job


@pytest.fixture
def sdk(real_stack: RealStack, namespace: str) -> Iterator[TrainingClient]:
    """A TrainingClient pointed at the loopback API server through its kubeconfig."""
    client = TrainingClient(
        config_file=str(real_stack.apiserver.kubeconfig), namespace=namespace, job_kind=MXJOB
    )
    yield client
    client.custom_api.api_client.close()


@pytest.fixture
def kubelet(real_stack: RealStack, rest: Rest, namespace: str) -> Kubelet:
    return Kubelet(rest, namespace)


def wait_for_pods(kubelet: Kubelet, count: int) -> dict[str, str]:
    return wait_for(kubelet.phases, f"{count} pods", WAIT, until=lambda found: len(found) == count)


def conditions(job: KubeflowOrgV1MXJob) -> list[tuple[str, str, str]]:
    return [(c.type, c.status, c.reason) for c in job.status.conditions]


def test_the_sdk_model_needs_run_policy_and_the_crd_supplies_it(
    real_stack: RealStack, namespace: str
) -> None:
    """The cause, pinned: the SDK cannot read a body without runPolicy; the API server, given a
    manifest without one, stores and returns `runPolicy: {}`, which the SDK reads."""
    manifest = without_run_policy("dist-cpu.yaml")
    with pytest.raises(ValueError, match="Invalid value for `run_policy`, must not be `None`"):
        ApiClient().deserialize(FakeResponse(manifest), "KubeflowOrgV1MXJob")
    manifest["metadata"]["namespace"] = namespace
    real_stack.apiserver.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    stored = real_stack.apiserver.get("mxjob", manifest["metadata"]["name"], f"-n={namespace}")
    assert stored["spec"]["runPolicy"] == {}
    job = ApiClient().deserialize(FakeResponse(stored), "KubeflowOrgV1MXJob")
    assert job.spec.run_policy == KubeflowOrgV1RunPolicy()


def test_a_manifest_without_run_policy_through_its_whole_life(
    real_stack: RealStack, namespace: str, sdk: TrainingClient, kubelet: Kubelet
) -> None:
    """Submitted as YAML (kubectl), then followed and deleted with the SDK: get, list, wait for
    Created, Running and Succeeded while the kubelet runs and finishes the pods, delete."""
    manifest = without_run_policy("dist-cpu.yaml")
    name = manifest["metadata"]["name"]
    manifest["metadata"]["namespace"] = namespace
    real_stack.apiserver.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))

    created = sdk.wait_for_job_conditions(
        name, expected_conditions={"Created"}, wait_timeout=WAIT, polling_interval=POLL
    )
    assert conditions(created) == [("Created", "True", "MXJobCreated")]
    assert created.spec.run_policy == KubeflowOrgV1RunPolicy()
    assert sorted(created.spec.mx_replica_specs) == ["Scheduler", "Server", "Worker"]
    assert [j.metadata.name for j in sdk.list_jobs()] == [name]

    assert wait_for_pods(kubelet, 5)
    kubelet.run()
    sdk.wait_for_job_conditions(
        name, expected_conditions={"Running"}, wait_timeout=WAIT, polling_interval=POLL
    )
    assert sdk.is_job_running(name)
    # The Scheduler makes the job Running; the Workers' pods may be reported a sync later.
    workers = wait_for(lambda: _active_workers(sdk.get_job(name), 2), "2 active Workers", WAIT)
    assert workers is not None
    assert workers.status.replica_statuses["Worker"].active == 2

    for pod in ("worker-0", "worker-1", "scheduler-0"):  # the Scheduler decides success
        kubelet.exit(f"{name}-{pod}", 0)
    done = sdk.wait_for_job_conditions(name, wait_timeout=WAIT, polling_interval=POLL)
    assert sdk.is_job_succeeded(name)
    assert conditions(done)[-1] == ("Succeeded", "True", "MXJobSucceeded")
    assert done.status.completion_time is not None

    sdk.delete_job(name)
    gone = real_stack.apiserver.kubectl("get", "mxjob", name, f"-n={namespace}", check=False)
    assert "NotFound" in gone.stderr
    with pytest.raises(RuntimeError, match=f"Failed to get MXJob: {namespace}/{name}"):
        sdk.get_job(name)


def sdk_job(name: str, namespace: str) -> KubeflowOrgV1MXJob:
    """A single-Worker MXJob built with the SDK's models, as its documentation builds jobs.
    `run_policy` is required by the model itself (client side); an empty one means defaults."""
    container = V1Container(name="mxnet", image="mxjob/mxnet:1.9.1", command=["python3"])
    template = V1PodTemplateSpec(spec=V1PodSpec(containers=[container]))
    worker = KubeflowOrgV1ReplicaSpec(replicas=1, restart_policy="OnFailure", template=template)
    spec = KubeflowOrgV1MXJobSpec(
        job_mode="MXTrain", mx_replica_specs={"Worker": worker}, run_policy=KubeflowOrgV1RunPolicy()
    )
    return KubeflowOrgV1MXJob(
        api_version="kubeflow.org/v1",
        kind=MXJOB,
        metadata=V1ObjectMeta(name=name, namespace=namespace),
        spec=spec,
    )


def test_a_job_created_with_the_sdk(namespace: str, sdk: TrainingClient, kubelet: Kubelet) -> None:
    name = "sdk-single"
    sdk.create_job(sdk_job(name, namespace))
    sdk.wait_for_job_conditions(
        name, expected_conditions={"Created"}, wait_timeout=WAIT, polling_interval=POLL
    )
    assert sdk.is_job_created(name)
    assert list(wait_for_pods(kubelet, 1)) == [f"{name}-worker-0"]
    kubelet.run()
    sdk.wait_for_job_conditions(
        name, expected_conditions={"Running"}, wait_timeout=WAIT, polling_interval=POLL
    )
    kubelet.exit(f"{name}-worker-0", 0)
    done = sdk.wait_for_job_conditions(name, wait_timeout=WAIT, polling_interval=POLL)
    assert conditions(done)[-1] == ("Succeeded", "True", "MXJobSucceeded")
    assert sdk.get_job_pod_names(name) == [f"{name}-worker-0"]
    sdk.delete_job(name)
    assert sdk.list_jobs() == []


def legacy(spec: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def edit(job: dict[str, Any]) -> None:
        job["spec"].update(copy.deepcopy(spec))

    return edit


@pytest.mark.parametrize(
    ("edit", "stored_run_policy", "suspended"),
    [
        pytest.param(legacy({"suspend": True}), {}, True, id="legacy-field-alone-still-applies"),
        pytest.param(
            legacy({"suspend": True, "runPolicy": {"suspend": False}}),
            {"suspend": False},
            False,
            id="run-policy-wins-over-the-legacy-field",
        ),
    ],
)
def test_defaulting_keeps_the_legacy_placement(
    real_stack: RealStack,
    namespace: str,
    sdk: TrainingClient,
    kubelet: Kubelet,
    edit: Callable[[dict[str, Any]], None],
    stored_run_policy: dict[str, Any],
    suspended: bool,
) -> None:
    """mxnet-operator v1 manifests put run-policy fields directly under spec. The defaulted
    `runPolicy: {}` sets no field, so a legacy field still applies; where both are set,
    spec.runPolicy wins, as without the default."""
    manifest = without_run_policy("single-worker.yaml")
    edit(manifest)
    name = manifest["metadata"]["name"]
    manifest["metadata"]["namespace"] = namespace
    real_stack.apiserver.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    job = sdk.wait_for_job_conditions(
        name, expected_conditions={"Created"}, wait_timeout=WAIT, polling_interval=POLL
    )
    stored = real_stack.apiserver.get("mxjob", name, f"-n={namespace}")["spec"]
    assert (stored["runPolicy"], stored["suspend"]) == (stored_run_policy, True)
    if suspended:
        job = wait_for(lambda: _suspended(sdk.get_job(name)), "the Suspended condition", WAIT)
        assert conditions(job)[-1] == ("Suspended", "True", "MXJobSuspended")
        assert kubelet.phases() == {}
    else:
        assert list(wait_for_pods(kubelet, 1)) == [f"{name}-worker-0"]
        assert "Suspended" not in {c.type for c in sdk.get_job(name).status.conditions}


def _active_workers(job: KubeflowOrgV1MXJob, count: int) -> KubeflowOrgV1MXJob | None:
    return job if job.status.replica_statuses["Worker"].active == count else None


def _suspended(job: KubeflowOrgV1MXJob) -> KubeflowOrgV1MXJob | None:
    return job if "Suspended" in {c.type for c in job.status.conditions} else None


def test_the_sdk_default_job_mode_is_refused(namespace: str, sdk: TrainingClient) -> None:
    """The SDK's model defaults `job_mode` to '' and sends it; the CRD accepts only MXTrain and
    MXTune, so a job built without `job_mode` is refused (docs/sdk.md: always pass it)."""
    job = sdk_job("sdk-no-mode", namespace)
    job.spec = KubeflowOrgV1MXJobSpec(
        mx_replica_specs=job.spec.mx_replica_specs, run_policy=KubeflowOrgV1RunPolicy()
    )
    assert ApiClient().sanitize_for_serialization(job)["spec"]["jobMode"] == ""
    with pytest.raises(RuntimeError, match=f"Failed to create MXJob: {namespace}/sdk-no-mode"):
        sdk.create_job(job)
    assert sdk.list_jobs() == []


def run_policy_schema(crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    schema: dict[str, Any] = spec["properties"]["runPolicy"]
    return schema


def test_a_job_stored_before_the_default_is_read_after_the_crd_is_applied(
    k8s_binaries: Binaries, tmp_path: Path
) -> None:
    """On an API server of its own: a CRD without the default (an older install) stores a job
    without runPolicy, which the SDK cannot read; once the shipped CRD is applied, the same
    stored job is read with `runPolicy: {}` (the API server defaults what it reads from etcd)."""
    shipped = yaml.safe_load(MXJOB_CRD.read_text())
    older = copy.deepcopy(shipped)
    assert run_policy_schema(older).pop("default") == {}
    manifest = without_run_policy("single-worker.yaml")
    manifest["metadata"]["namespace"] = "default"
    name = manifest["metadata"]["name"]
    with cluster(k8s_binaries, tmp_path) as server:
        server.apply(older)
        # Not `kubectl wait`: it fails on a CRD whose status has no conditions yet.
        wait_for(lambda: _established(server), "the CRD established", WAIT)
        server.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
        client = TrainingClient(
            config_file=str(server.kubeconfig), namespace="default", job_kind=MXJOB
        )
        try:
            assert "runPolicy" not in server.get("mxjob", name)["spec"]
            with pytest.raises(RuntimeError, match=f"Failed to get MXJob: default/{name}"):
                client.get_job(name)
            server.apply(shipped)
            job = wait_for(lambda: _read(client, name), "the stored job read with runPolicy")
            assert job is not None
            assert job.spec.run_policy == KubeflowOrgV1RunPolicy()
        finally:
            client.custom_api.api_client.close()


def _established(server: ApiServer) -> bool | None:
    found = server.get("crd", "mxjobs.kubeflow.org").get("status", {}).get("conditions")
    return any(c["type"] == "Established" and c["status"] == "True" for c in found or []) or None


def _read(client: TrainingClient, name: str) -> KubeflowOrgV1MXJob | None:
    try:
        return client.get_job(name)
    except RuntimeError:
        return None
