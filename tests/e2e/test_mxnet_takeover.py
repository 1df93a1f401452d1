"""End to end: MXNet jobs whose pods the real training-operator v1.8.1 made go on training across
the switch (docs/migrating-from-training-operator.md, the takeover).

Real here, as in tests/e2e/test_mxnet_e2e.py: kube-apiserver and etcd on loopback, the real
Metacontroller v4.17.2 with the shipped flags, the hook, MXNet 1.9.1 with ps-lite, one OS process
per pod (the kubelet double, e2e/kubelet.py); and training-operator v1.8.1 from its release
manifests (localcluster/training_operator.py), which makes the jobs' pods and Services and
gives them their variables. Then training-operator stops, its webhook entry goes, the takeover
claims the children, our CRD replaces its, and Metacontroller starts:
- the quick start's parameter-server job, training when the switch happens, trains to the end
  without a restart: the same pods, every epoch on both workers, the same weights;
- a worker of a kvstore job, whose pod runs but has not joined ps-lite yet (`--hold-worker`),
  killed after the switch, is replaced by the hook and the replacement joins the cluster
  training-operator started: every worker pulls the right sums (ps-lite cannot take back a
  worker that joined and died: docs/e2e.md).
"""

import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e import trained
from e2e.cluster import preflight
from e2e.jobs import example, mxjob
from e2e.kubelet import LocalKubelet
from e2e.runner import true_conditions
from localcluster import training_operator as to
from localcluster.crds import MXJOB_CRD
from localcluster.ports import free_port
from localcluster.rest import Rest, path
from localcluster.stack import Stack, real_stack, shipped_flags
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.mxnet_runs import JOB_TIMEOUT, by_worker_id, kvstore_result

pytestmark = pytest.mark.mxnet

# Enough for the switch (about 12 s) to happen while the workers train (about 0.1 s an epoch).
EPOCHS = 500
TRAIN, KV = "trained", "kv"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The real stack without Metacontroller running, training-operator installed beside it."""
    with fail_on_cluster_error():
        preflight()
        workdir = tmp_path_factory.mktemp("takeover")
        with real_stack(workdir, lambda line: None) as running, to.certificates():
            yield running


def states(kube: Rest, namespace: str, name: str) -> list[str]:
    return true_conditions(kube.get(path("mxjobs", namespace, name)).get("status"))


def epochs(log: str) -> int:
    return len(trained.accuracies(log))


def train_job() -> dict[str, Any]:
    job = example("dist-cpu.yaml", TRAIN, free_port())
    (worker,) = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    worker["args"] = [*worker.get("args", []), f"--epochs={EPOCHS}"]
    return job


def test_jobs_training_operator_started_train_on_across_the_switch(
    stack: Stack, tmp_path: Path
) -> None:
    server = stack.apiserver
    release = to.obtain(lambda line: None)
    webhook_port = free_port()
    to.install(server, release, webhook_port)
    namespace = f"switch-{uuid.uuid4().hex[:6]}"
    server.kubectl("create", "namespace", namespace)
    flag = tmp_path / "worker-1-may-join"
    held = ["--hold-worker", "1", "--hold-file", str(flag)]
    kv = mxjob(KV, "kvstore", free_port(), "ExitCode", held)
    kv["metadata"]["name"] = KV
    with Rest(server) as kube, LocalKubelet(kube, namespace, tmp_path, JOB_TIMEOUT) as kubelet:
        with to.run(release, server, stack.workdir, webhook_port, []):
            for job in (train_job(), kv):
                server.kubectl("create", f"-n={namespace}", "-f", "-", input=yaml.safe_dump(job))
            wait_for(lambda: epochs(kubelet.log(f"{TRAIN}-worker-0")), "training under way",
                     timeout=JOB_TIMEOUT, until=lambda n: n >= 1)  # fmt: skip
            # The held worker prints only once MXNet is imported: later than the training, at times.
            wait_for(lambda: "holding" in kubelet.log(f"{KV}-worker-1"), "the kv worker held",
                     timeout=JOB_TIMEOUT)  # fmt: skip
        pods_then = pod_uids(server, namespace)
        server.kubectl("delete", "validatingwebhookconfiguration", to.WEBHOOKS)
        taken = subprocess.run(
            [sys.executable, "-m", "app", "takeover", "-n", namespace, "--no-operator-check"],
            cwd=REPO, capture_output=True, text=True, timeout=60,
            env={"KUBECONFIG": str(server.kubeconfig), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        assert taken.returncode == 0, taken.stderr
        server.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(MXJOB_CRD))
        with stack.metacontroller(shipped_flags()):
            wait_for(lambda: "restartCount" in (kube.get(path("mxjobs", namespace, TRAIN))
                     .get("status") or {}), "the trained job synced by the hook")  # fmt: skip
            at_switch = epochs(kubelet.log(f"{TRAIN}-worker-0"))
            wait_for(lambda: "restartCount" in (kube.get(path("mxjobs", namespace, KV))
                     .get("status") or {}), "the kv job synced by the hook")  # fmt: skip
            kubelet.kill(f"{KV}-worker-1", signal.SIGKILL)
            flag.touch()
            for name in (TRAIN, KV):
                wait_for(lambda n=name: states(kube, namespace, n), f"{name} finished",  # type: ignore[misc]
                         timeout=JOB_TIMEOUT, until=lambda s: "Succeeded" in s)  # fmt: skip
            kubelet.wait_idle(60)
        kubelet.check()
        the_training_went_on(kubelet, pods_then, at_switch)
        the_replacement_joined(kubelet, kube, namespace)


def pod_uids(server: Any, namespace: str) -> dict[str, str]:
    pods = server.get("pods", f"-n={namespace}")["items"]
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}


def the_training_went_on(kubelet: LocalKubelet, pods_then: dict[str, str], at_switch: int) -> None:
    """Every epoch on both workers, the switch during them, no pod of the job made again."""
    assert 1 <= at_switch < EPOCHS, at_switch
    logs = [kubelet.log(f"{TRAIN}-worker-{i}") for i in range(2)]
    assert all(trained.learned(log, EPOCHS) for log in logs), logs
    assert trained.digests(logs[0]) == trained.digests(logs[1])
    started = {r.pod for r in kubelet.reports if r.pod.startswith(f"{TRAIN}-")}
    assert started == {n for n in pods_then if n.startswith(f"{TRAIN}-")}, "a pod made again"


def the_replacement_joined(kubelet: LocalKubelet, kube: Rest, namespace: str) -> None:
    victim, replacement = f"{KV}-worker-1", f"{KV}-worker-1-r1"
    assert "is connected" not in kubelet.log(victim)
    results = {}
    for name in (f"{KV}-worker-0", replacement):
        lines = [line for line in kubelet.log(name).splitlines() if line.startswith("{")]
        results[name] = yaml.safe_load(lines[-1])
    assert by_worker_id(results, "ok", "worker_id", "expected", "pulled") == {
        "0": kvstore_result("0"),
        "1": kvstore_result("1"),
    }
    status = kube.get(path("mxjobs", namespace, KV))["status"]
    assert status["restartCount"] == 1
    victim_reports = [str(r) for r in kubelet.reports if r.pod == victim]
    assert "Failed (exit 137)" in victim_reports, victim_reports
