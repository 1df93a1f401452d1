"""The job's ConfigMap over a job's life: it follows the spec, comes and goes with the pods,
and a job started by the previous version (each pod with its whole MX_CONFIG) keeps its pods
once the CompositeController declares ConfigMaps, only a pod created from then on reading it."""

import json
from typing import Any

from app import kubeenv
from tests import support as s
from tests.simcluster import SimCluster

BEFORE = ("Pod.v1", "Service.v1")
AFTER = ("ConfigMap.v1", "Pod.v1", "Service.v1")
ALL = [f"mnist-{p}" for p in ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1")]


def env_form(pod: dict[str, Any]) -> str:
    first = pod["spec"]["containers"][0]["env"][0]
    return "inline" if first["name"] == "MX_CONFIG" else "configmap"


def mx_config(cluster: SimCluster, pod: str) -> str:
    maps = {c["metadata"]["name"]: c for c in cluster.children.get("ConfigMap.v1", {}).values()}
    container = cluster.pods()[pod]["spec"]["containers"][0]
    return kubeenv.resolve(container, maps)["MX_CONFIG"]


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

    cluster.exit("mnist-worker-1", 137)
    cluster.sync(after=5)
    cluster.run("mnist-worker-1-r1")
    cluster.sync(after=5)
    assert cluster.deleted == ["Pod.v1/mnist-worker-1"]
    assert env_form(cluster.pods()["mnist-worker-1-r1"]) == "configmap"
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
    workers = json.loads(data["cluster"])["worker"]
    assert [w["url"] for w in workers] == ["mnist-worker-0", "mnist-worker-1"]
    assert mx_config(cluster, "mnist-worker-1").startswith(f'{{"cluster":{data["cluster"]},')

    cluster.parent["spec"]["runPolicy"] = {"suspend": True}
    cluster.sync(after=5)
    assert (cluster.names("ConfigMap.v1"), cluster.names()) == ([], [])
