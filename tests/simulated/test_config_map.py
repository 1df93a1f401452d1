"""The job's ConfigMap over a job's life: it follows the spec, comes and goes with the pods,
and a job started by an earlier version keeps its pods: one whose pods carry their whole
MX_CONFIG once the CompositeController declares ConfigMaps, and one started by release 0.1.0
(its pods read the ConfigMap's keys `cluster` and `labels`) under this version; only a pod
created from then on reads the new layout."""

import json
from typing import Any

from app.core import reconcile
from app.core.mxnet import kubeenv, mxconfig
from tests.support import jobs as s
from tests.support.golden_cases import released_0_1_0
from tests.support.hooked import sync
from tests.support.simcluster import SimCluster

BEFORE = ("Pod.v1", "Service.v1")
AFTER = ("ConfigMap.v1", "Pod.v1", "Service.v1")
AFTER_KINDS = ("ConfigMap", "Pod", "Service")
ALL = [f"mnist-{p}" for p in ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1")]


def env_form(pod: dict[str, Any]) -> str:
    container = pod["spec"]["containers"][0]
    if "envFrom" in container:
        return "envFrom"
    first = container["env"][0]
    if first["name"] == "MX_CONFIG":
        return "inline"
    assert first["valueFrom"]["configMapKeyRef"]["key"] == "cluster"
    return "0.1.0"


def process_env(cluster: SimCluster, pod: str) -> dict[str, str]:
    maps = {c["metadata"]["name"]: c for c in cluster.children.get("ConfigMap.v1", {}).values()}
    container = cluster.pods()[pod]["spec"]["containers"][0]
    return kubeenv.resolve(container, maps)


def mx_config(cluster: SimCluster, pod: str) -> str:
    return process_env(cluster, pod)["MX_CONFIG"]


def replace_worker_1(cluster: SimCluster) -> None:
    """Worker 1 is killed (137), replaced under ExitCode, and its replacement runs."""
    cluster.exit("mnist-worker-1", 137)
    cluster.sync(after=5)
    cluster.run("mnist-worker-1-r1")
    cluster.sync(after=5)
    assert cluster.deleted == ["Pod.v1/mnist-worker-1"]


def test_an_upgraded_job_keeps_its_pods_and_replaces_a_failed_one_with_the_new_form() -> None:
    cluster = SimCluster(parent=s.mxjob(s.train_spec(policy="ExitCode")), child_types=BEFORE)
    cluster.sync()
    cluster.run()
    cluster.sync(after=5)
    inline = {name: mx_config(cluster, name) for name in ALL}

    cluster.child_types = AFTER
    for _ in range(3):
        cluster.sync(after=30)
    assert cluster.deleted == []
    assert cluster.names("ConfigMap.v1") == ["mnist-mx-config"]
    assert {n: env_form(p) for n, p in cluster.pods().items()} == dict.fromkeys(ALL, "inline")
    assert cluster.true_conditions() == {"Created": "MXJobCreated", "Running": "MXJobRunning"}

    replace_worker_1(cluster)
    assert env_form(cluster.pods()["mnist-worker-1-r1"]) == "envFrom"
    # The replacement reads, through the ConfigMap, what the pod it replaces read inline.
    assert mx_config(cluster, "mnist-worker-1-r1") == inline["mnist-worker-1"]
    assert json.loads(inline["mnist-worker-1"])["task"] == {"index": 1, "type": "worker"}


def test_the_configmap_follows_the_spec_and_goes_with_the_pods() -> None:
    job = s.mxjob(s.train_spec(servers=1, workers=1))
    cluster = SimCluster(parent=job)
    cluster.sync()
    cluster.run()
    cluster.sync(after=5)
    cluster.parent["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 2
    cluster.sync(after=5)
    data = cluster.children["ConfigMap.v1"]["mnist-mx-config"]["data"]
    workers = json.loads(data["MX_CONFIG_CLUSTER"])["worker"]
    assert [w["url"] for w in workers] == ["mnist-worker-0", "mnist-worker-1"]
    assert data["DMLC_NUM_WORKER"] == "2"
    assert process_env(cluster, "mnist-worker-1")["DMLC_NUM_WORKER"] == "2"
    assert mx_config(cluster, "mnist-worker-1").startswith(
        f'{{"cluster":{data["MX_CONFIG_CLUSTER"]},'
    )

    cluster.parent["spec"]["runPolicy"] = {"suspend": True}
    cluster.sync(after=5)
    assert (cluster.names("ConfigMap.v1"), cluster.names()) == ([], [])


def _as_released_0_1_0(cluster: SimCluster) -> None:
    """The job's ConfigMap and pods as release 0.1.0 wrote them."""
    stored = [*cluster.children["ConfigMap.v1"].values(), *cluster.pods().values()]
    for child in released_0_1_0({"children": stored})["children"]:
        group = cluster.children["ConfigMap.v1" if "data" in child else "Pod.v1"]
        group[child["metadata"]["name"]] = child


def test_a_job_of_release_0_1_0_keeps_its_pods_and_their_keys() -> None:
    cluster = SimCluster(parent=s.mxjob(s.train_spec(policy="ExitCode")))
    cluster.sync()
    _as_released_0_1_0(cluster)
    cluster.run()
    released = {name: process_env(cluster, name) for name in ALL}
    assert set(cluster.children["ConfigMap.v1"]["mnist-mx-config"]["data"]) == {
        "cluster",
        "labels",
    }

    for _ in range(3):
        cluster.sync(after=30)
    assert cluster.deleted == []
    assert {n: env_form(p) for n, p in cluster.pods().items()} == dict.fromkeys(ALL, "0.1.0")
    data = cluster.children["ConfigMap.v1"]["mnist-mx-config"]["data"]
    assert set(data) == {"cluster", "labels"}
    # A container that restarts in one of its pods finds its keys, and reads the same.
    assert {name: process_env(cluster, name) for name in ALL} == released
    assert cluster.true_conditions() == {"Created": "MXJobCreated", "Running": "MXJobRunning"}

    replace_worker_1(cluster)
    # The replacement is made as 0.1.0 made it: `envFrom` would also bring `cluster` and
    # `labels` in as variables while the ConfigMap keeps them.
    assert env_form(cluster.pods()["mnist-worker-1-r1"]) == "0.1.0"
    assert process_env(cluster, "mnist-worker-1-r1") == released["mnist-worker-1"]
    assert {name: process_env(cluster, name) for name in ALL if name != "mnist-worker-1"} == {
        name: env for name, env in released.items() if name != "mnist-worker-1"
    }


def test_the_old_keys_go_once_no_pod_reads_them() -> None:
    cluster = SimCluster(parent=s.mxjob(s.train_spec()))
    cluster.sync()
    _as_released_0_1_0(cluster)
    cluster.run()
    cluster.sync(after=5)
    assert "cluster" in cluster.children["ConfigMap.v1"]["mnist-mx-config"]["data"]

    cluster.parent["spec"]["runPolicy"] = {"suspend": True}
    cluster.sync(after=5)
    assert (cluster.names("ConfigMap.v1"), cluster.names()) == ([], [])
    cluster.parent["spec"]["runPolicy"] = {"suspend": False}
    cluster.sync(after=5)
    data = cluster.children["ConfigMap.v1"]["mnist-mx-config"]["data"]
    assert tuple(data) == mxconfig.JOB_ENV
    assert {n: env_form(p) for n, p in cluster.pods().items()} == dict.fromkeys(ALL, "envFrom")


def test_pods_without_their_configmap_ask_to_be_synced_again() -> None:
    """A ConfigMap of the job's ConfigMap name that is not its child keeps the job's own from
    being written, and its removal brings no sync: while the pods exist without the ConfigMap
    the answer asks for, the hook asks to be synced again (docs/security.md)."""
    parent = s.mxjob(s.train_spec(servers=1, workers=2))
    first = s.after_first(s.request(parent, others={"ConfigMap.v1": []}))
    created = sync(first, s.NOW)
    assert created["resyncAfterSeconds"] == 0
    kids = {kind: [c for c in created["children"] if c["kind"] == kind] for kind in AFTER_KINDS}
    parent = parent | {"status": created["status"]}
    waiting = s.request(parent, kids["Pod"], kids["Service"], {"ConfigMap.v1": []})
    assert sync(waiting, s.NOW)["resyncAfterSeconds"] == reconcile.CONFIG_MAP_RETRY_SECONDS
    written = s.request(parent, kids["Pod"], kids["Service"], {"ConfigMap.v1": kids["ConfigMap"]})
    assert sync(written, s.NOW)["resyncAfterSeconds"] == 0
