"""`python -m app takeover` on the real API server (the session's): a job with children shaped
as training-operator v1.8.1 makes them, one object owned by something else and one already ours;
the dry run changes nothing, the run claims only the job's own, a second claims nothing, a
replaced object is not claimed, a ServiceAccount without `patch` gets one line naming it, and a
training-operator that runs MXJobs stops it first. The real switch: test_migration_v1_8.py."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client, KubeConfig

from app.controllers.takeover import cluster
from app.controllers.takeover.plan import Child, Verdict, claim_patch
from localcluster.apiserver import ApiServer, token_kubeconfig
from localcluster.crds import install_crds
from tests.support import REPO
from tests.support.resources import CONTROLLER_UID

JOB = "legacy"
OPERATOR = "mxjob-controller"
PODGROUP = "podgroups.scheduling.x-k8s.io"


@pytest.fixture(scope="module")
def crds(apiserver: ApiServer) -> None:
    install_crds(apiserver)


def labels(rtype: str, index: int) -> dict[str, str]:
    """training-operator v1.8.1's labels on an MXJob's pod and Service (GenLabels)."""
    return {
        "training.kubeflow.org/operator-name": OPERATOR,
        "training.kubeflow.org/job-name": JOB,
        "training.kubeflow.org/replica-type": rtype,
        "training.kubeflow.org/replica-index": str(index),
    }


def owned_by(job: dict[str, Any], kind: str = "MXJob") -> list[dict[str, Any]]:
    meta = job["metadata"]
    return [
        {"apiVersion": job["apiVersion"] if kind == "MXJob" else "apps/v1", "kind": kind,
         "name": meta["name"] if kind == "MXJob" else "web",
         "uid": meta["uid"] if kind == "MXJob" else "4d2a5e9c-0000-4000-8000-000000000001",
         "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip


def pod(name: str, rtype: str, index: int, owners: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels(rtype, index), "ownerReferences": owners},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "mxnet", "image": "docker.io/kubeflow/mxnet-gpu:latest"}]},
    }  # fmt: skip


def service(name: str, rtype: str, index: int, owners: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "labels": labels(rtype, index), "ownerReferences": owners},
        "spec": {"clusterIP": "None", "selector": labels(rtype, index),
                 "ports": [{"name": "mxjob-port", "port": 9091}]},
    }  # fmt: skip


@pytest.fixture
def legacy(apiserver: ApiServer, namespace: str, crds: None) -> dict[str, Any]:
    """A job with training-operator's children: its Scheduler and Worker pods and Services and
    its PodGroup; a pod of the job's labels owned by a ReplicaSet; a Service already ours."""
    apiserver.kubectl("create", f"-n={namespace}", "-f", "-", input=yaml.safe_dump(mxjob()))
    job = apiserver.get("mxjob", JOB, f"-n={namespace}")
    mine = owned_by(job)
    already = service(f"{JOB}-worker-0", "worker", 0, mine)
    already["metadata"]["labels"][CONTROLLER_UID] = job["metadata"]["uid"]
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": JOB, "labels": labels("worker", 0) , "ownerReferences": mine},
        "spec": {"minMember": 2},
    }  # fmt: skip
    objects = [
        pod(f"{JOB}-scheduler-0", "scheduler", 0, mine),
        pod(f"{JOB}-worker-0", "worker", 0, mine),
        service(f"{JOB}-scheduler-0", "scheduler", 0, mine),
        already,
        group,
        pod(f"{JOB}-worker-1", "worker", 1, owned_by(job, "ReplicaSet")),
    ]
    apiserver.kubectl("create", f"-n={namespace}", "-f", "-", input=yaml.safe_dump_all(objects))
    return job


def mxjob() -> dict[str, Any]:
    worker: dict[str, Any] = {
        "replicas": 2,
        "template": {"spec": {"containers": [{"name": "mxnet", "image": "mxnet:1.9.1"}]}},
    }
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": JOB},
        "spec": {"jobMode": "MXTrain",
                 "mxReplicaSpecs": {"Scheduler": worker | {"replicas": 1}, "Worker": worker}},
    }  # fmt: skip


def takeover(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "takeover", *args], cwd=REPO, capture_output=True,
        text=True, timeout=60, env={"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def state(server: ApiServer, namespace: str) -> dict[str, tuple[str, str | None]]:
    """Every object of the namespace by kind/name: its resourceVersion and controller-uid."""
    found: dict[str, tuple[str, str | None]] = {}
    for kind in ("pods", "services", PODGROUP):
        for obj in server.get(kind, f"-n={namespace}")["items"]:
            meta = obj["metadata"]
            label = (meta.get("labels") or {}).get(CONTROLLER_UID)
            found[f"{kind}/{meta['name']}"] = (meta["resourceVersion"], label)
    return found


def listing(namespace: str, verb: str) -> list[str]:
    where = f"{namespace}/{JOB}"
    return [
        f"{where}: {verb} pod {JOB}-scheduler-0",
        f"{where}: {verb} pod {JOB}-worker-0",
        f"{where}: leaves pod {JOB}-worker-1 alone: its controller is ReplicaSet web, not this job",
        f"{where}: {verb} service {JOB}-scheduler-0",
        f"{where}: service {JOB}-worker-0 is already the job's",
        f"{where}: {verb} podgroup.scheduling.x-k8s.io {JOB}",
    ]


CLAIMED = {f"pods/{JOB}-scheduler-0", f"pods/{JOB}-worker-0", f"services/{JOB}-scheduler-0",
           f"{PODGROUP}/{JOB}"}  # fmt: skip


def test_dry_run_then_run_then_again(
    apiserver: ApiServer, namespace: str, legacy: dict[str, Any]
) -> None:
    uid = legacy["metadata"]["uid"]
    before = state(apiserver, namespace)
    dry = takeover(apiserver.kubeconfig, "-n", namespace, "--no-operator-check", "--dry-run")
    assert (dry.returncode, dry.stderr) == (0, "")
    assert dry.stdout.splitlines() == [
        *listing(namespace, "would claim"),
        "takeover: 1 MXJobs; 4 objects to claim, 1 already ours, 1 left alone",
    ]
    assert state(apiserver, namespace) == before, "a dry run changes nothing"

    done = takeover(apiserver.kubeconfig, "-n", namespace, "--no-operator-check")
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert [line for line in lines if ": claimed " not in line] == [
        *[line for line in listing(namespace, "x") if ": x " not in line],
        "takeover: 1 MXJobs; 4 objects claimed, 1 already ours, 1 left alone",
    ]
    assert sorted(line for line in lines if ": claimed " in line) == sorted(
        line.replace(": x ", ": claimed ") for line in listing(namespace, "x") if ": x " in line
    )
    after = state(apiserver, namespace)
    assert {k for k, (_, label) in after.items() if label == uid} == {
        *CLAIMED,
        f"services/{JOB}-worker-0",
    }
    changed = {k for k in after if after[k][0] != before[k][0]}
    assert changed == CLAIMED, "only the claimed objects were written"

    again = takeover(apiserver.kubeconfig, "-n", namespace, "--no-operator-check")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == (
        "takeover: 1 MXJobs; 0 objects claimed, 5 already ours, 1 left alone"
    )
    assert state(apiserver, namespace) == after, "idempotent"


def test_an_object_replaced_under_its_name_is_not_claimed(
    apiserver: ApiServer, namespace: str, legacy: dict[str, Any]
) -> None:
    """The claim tests the uid it listed: a pod deleted and made again meanwhile (as
    training-operator replaces a pod) is the next listing's to judge."""
    name = f"{JOB}-scheduler-0"
    listed = apiserver.get("pod", name, f"-n={namespace}")["metadata"]["uid"]
    replacement = apiserver.get("pod", name, f"-n={namespace}")
    apiserver.kubectl("delete", "pod", name, f"-n={namespace}", "--grace-period=0", "--force")
    apiserver.kubectl(
        "create", f"-n={namespace}", "-f", "-",
        input=yaml.safe_dump(pod(name, "scheduler", 0, replacement["metadata"]["ownerReferences"])),
    )  # fmt: skip
    stale = Child("pod", namespace, name, listed, f"{namespace}/{JOB}",
                  legacy["metadata"]["uid"], Verdict.CLAIM)  # fmt: skip
    client = Client(KubeConfig.from_file(apiserver.kubeconfig))
    try:
        with pytest.raises(cluster.Changed):
            cluster.claim(client, stale, claim_patch(stale))
    finally:
        client.close()
    now = apiserver.get("pod", name, f"-n={namespace}")["metadata"]
    assert now["uid"] != listed
    assert CONTROLLER_UID not in now["labels"]


READ_ONLY = [
    {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods", "services"], "verbs": ["list"]},
    {"apiGroups": ["scheduling.x-k8s.io", "scheduling.volcano.sh"], "resources": ["podgroups"],
     "verbs": ["list"]},
]  # fmt: skip


@pytest.fixture
def read_only(apiserver: ApiServer, namespace: str, tmp_path: Path) -> Path:
    """A kubeconfig of a ServiceAccount that may list the job and its children, not patch."""
    account = "lister"
    apiserver.kubectl("create", "serviceaccount", account, f"-n={namespace}")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": account, "namespace": namespace}, "rules": READ_ONLY}  # fmt: skip
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": account, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }  # fmt: skip
    apiserver.apply(role, binding)
    return token_kubeconfig(apiserver, namespace, account, tmp_path / "lister.kubeconfig")


def test_a_refused_permission_is_one_line_naming_it(
    apiserver: ApiServer, namespace: str, legacy: dict[str, Any], read_only: Path
) -> None:
    before = state(apiserver, namespace)
    refused = takeover(read_only, "-n", namespace, "--no-operator-check")
    assert refused.returncode == 1
    (line,) = refused.stderr.splitlines()
    assert line.startswith(
        f"python -m app takeover: forbidden: the takeover needs 'patch' on pods in namespace "
        f"{namespace} ("
    ), line
    assert 'cannot patch resource "pods"' in line, line
    assert state(apiserver, namespace) == before
    assert takeover(read_only, "-n", namespace, "--no-operator-check", "--dry-run").returncode == 0


def training_operator(args: list[str] | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "training-operator", "image": "kubeflow/training-operator"}
    if args is not None:
        container["args"] = args
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "training-operator"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "to"}},
                 "template": {"metadata": {"labels": {"app": "to"}},
                              "spec": {"containers": [container]}}},
    }  # fmt: skip


def rolled_out(server: ApiServer, namespace: str) -> None:
    """The Deployment's status as its controller writes it once the rollout is done (this
    API server runs no Deployment controller)."""
    generation = server.get("deployment", "training-operator", f"-n={namespace}")["metadata"]
    status = {"observedGeneration": generation["generation"], "replicas": 1,
              "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}  # fmt: skip
    server.kubectl(
        "patch", "deployment", "training-operator", f"-n={namespace}", "--subresource=status",
        "--type=merge", "-p", yaml.safe_dump({"status": status}),
    )  # fmt: skip


def test_a_training_operator_that_runs_mxjobs_stops_the_takeover(
    apiserver: ApiServer, namespace: str, legacy: dict[str, Any]
) -> None:
    operator = f"--operator={namespace}/training-operator"
    apiserver.kubectl(
        "create", f"-n={namespace}", "-f", "-", input=yaml.safe_dump(training_operator(None))
    )
    rolled_out(apiserver, namespace)
    before = state(apiserver, namespace)
    refused = takeover(apiserver.kubeconfig, "-n", namespace, operator)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"takeover: training-operator ({namespace}/training-operator) may still run MXJobs: "
        "its Deployment enables every job kind (no --enable-scheme leaves mxjob out)",
        "takeover: nothing changed; do step 2 of the switch first (or --no-operator-check)",
    ]
    assert refused.stdout == ""
    assert state(apiserver, namespace) == before

    restarted = training_operator(["--enable-scheme=tfjob", "--enable-scheme=pytorchjob"])
    apiserver.kubectl("apply", f"-n={namespace}", "-f", "-", input=yaml.safe_dump(restarted))
    rolling = takeover(apiserver.kubeconfig, "-n", namespace, operator)
    assert rolling.returncode == 1
    assert "its Deployment's rollout is not finished" in rolling.stderr, rolling.stderr
    rolled_out(apiserver, namespace)
    done = takeover(apiserver.kubeconfig, "-n", namespace, operator)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].endswith("4 objects claimed, 1 already ours, 1 left alone")
