"""What the real-Kueue tests build and read on their stack (tests/support/kueue_stack.py):
namespaces, ResourceFlavors, ClusterQueues and LocalQueues, MXJobs of one or more Workers asking
for CPUs, the jobs' Workloads and pods, their Queued condition, and the moves the tests make as
the kubelet and as a user (start, finish, edit, suspend, relabel)."""

from collections.abc import Sequence
from typing import Any

from localcluster.kubelet import Kubelet
from localcluster.rest import KubeError
from localcluster.waiting import wait_for
from tests.support.kueue_stack import KueueStack
from tests.support.scenario import Job

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_LABEL = "training.kubeflow.org/job-name"


def namespace(stack: KueueStack, name: str, labels: dict[str, str] | None = None) -> str:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    stack.apiserver.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    return name


def flavor(name: str, labels: dict[str, str], tolerations: Sequence[Any] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": labels}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def cluster_queue(name: str, quotas: dict[str, str], preempt: bool = False) -> dict[str, Any]:
    """A ClusterQueue over CPU, one flavor after the other (`quotas`: flavor → CPUs)."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [
                    {"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]}
                    for f, q in quotas.items()
                ],
            }
        ],
    }
    if preempt:
        spec["preemption"] = {"withinClusterQueue": "LowerPriority"}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def local_queue(name: str, ns: str, cq: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}}  # fmt: skip


def plain_queues(stack: KueueStack, ns: str, cq: str, cpus: str, *local: str) -> None:
    """A ClusterQueue `cq` of `cpus` CPUs on one flavor without node labels, and the
    LocalQueues `local` of namespace `ns` that feed it."""
    stack.apiserver.apply(
        flavor("plain", {}), cluster_queue(cq, {"plain": cpus}),
        *(local_queue(name, ns, cq) for name in local),
    )  # fmt: skip


def replica(cpu: str, replicas: int = 1) -> dict[str, Any]:
    container = {"name": "mxnet", "image": "mxjob/mxnet:1.9.1",
                 "resources": {"requests": {"cpu": cpu}}}  # fmt: skip
    return {"replicas": replicas, "restartPolicy": "Never",
            "template": {"spec": {"containers": [container]}}}  # fmt: skip


def mxjob(name: str, queue: str | None, cpu: str = "1", **run_policy: Any) -> dict[str, Any]:
    """A job of one Worker asking for `cpu`, in LocalQueue `queue`."""
    meta: dict[str, Any] = {"name": name}
    if queue:
        meta["labels"] = {QUEUE_LABEL: queue}
    spec: dict[str, Any] = {"jobMode": "MXTrain", "mxReplicaSpecs": {"Worker": replica(cpu)}}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": meta, "spec": spec}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value}  # fmt: skip


def priority(name: str) -> dict[str, Any]:
    """The run policy of a job of PriorityClass `name`."""
    return {"schedulingPolicy": {"priorityClass": name}}


def job_of(name: str, workers: int, cpu: str = "1", queue: str | None = "lq") -> dict[str, Any]:
    """`workers` Workers of `cpu` CPUs each, and the Scheduler MXTrain needs, which asks for
    none."""
    job = mxjob(name, queue)
    job["spec"]["mxReplicaSpecs"]["Worker"] = replica(cpu, workers)
    scheduler = replica(cpu)
    del scheduler["template"]["spec"]["containers"][0]["resources"]
    job["spec"]["mxReplicaSpecs"]["Scheduler"] = scheduler
    return job


def workloads(stack: KueueStack, ns: str) -> dict[str, dict[str, Any]]:
    items = stack.rest.get(f"{KUEUE}/namespaces/{ns}/workloads")["items"]
    return {w["metadata"]["name"]: w for w in items}


def job_workloads(stack: KueueStack, ns: str, name: str) -> list[dict[str, Any]]:
    return [w for w in workloads(stack, ns).values() if w["metadata"]["labels"][JOB_LABEL] == name]


def workload_of(stack: KueueStack, ns: str, job: str) -> dict[str, Any]:
    """The job's one Workload (named for its pod sets), or {} when it has none."""
    found = [
        w for w in workloads(stack, ns).values() if w["metadata"]["labels"].get(JOB_LABEL) == job
    ]
    assert len(found) <= 1, [w["metadata"]["name"] for w in found]
    return found[0] if found else {}


def counts(workload: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["count"] for p in workload["spec"]["podSets"]}


def pod_names(job: Job) -> list[str]:
    return sorted(job.state().pods)


def pods_of(stack: KueueStack, ns: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = stack.rest.get(f"/api/v1/namespaces/{ns}/pods")["items"]
    return items


def queued(job: Job) -> dict[str, Any] | None:
    return job.condition("Queued")


def last_condition(job: Job) -> str:
    """What `kubectl get mxj` shows in its State column."""
    conditions = job.status().get("conditions") or [{}]
    return str(conditions[-1].get("type"))


def is_true(job: Job, ctype: str, reason: str | None = None) -> bool:
    cond = job.condition(ctype)
    return bool(cond and cond["status"] == "True" and reason in (None, cond["reason"]))


def running(job: Job, kubelet: Kubelet) -> None:
    """A job of one Worker: its pod created and started, the job Running."""
    wait_for(lambda: pod_names(job), f"{job.name} has pods")
    kubelet.run(f"{job.name}-worker-0")
    wait_for(lambda: is_true(job, "Running"), f"{job.name} runs")


def started(job: Job, kubelet: Kubelet, workers: int) -> None:
    """Wait for the job's pods (its Workers and Scheduler), start them, and wait until it
    runs."""
    count = workers + 1
    wait_for(lambda: len(pod_names(job)), f"{job.name}: {count} pods", until=lambda n: n == count)
    kubelet.run(*pod_names(job))
    wait_for(lambda: is_true(job, "Running"), f"{job.name} runs")


def finish(job: Job, kubelet: Kubelet) -> None:
    """Every pod of the job exits 0 (those its clean-up already removed are skipped)."""
    for name in pod_names(job):
        try:
            kubelet.exit(name, 0)
        except KubeError as error:
            if error.status_code != 404:
                raise
    wait_for(lambda: is_true(job, "Succeeded"), f"{job.name} succeeds")


def patch_worker(stack: KueueStack, ns: str, name: str, workers: int, cpu: str) -> None:
    path = f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs/{name}"
    container = {"name": "mxnet", "image": "mxjob/mxnet:1.9.1",
                 "resources": {"requests": {"cpu": cpu}}}  # fmt: skip
    worker = {"replicas": workers, "template": {"spec": {"containers": [container]}}}
    stack.rest.merge_patch(path, {"spec": {"mxReplicaSpecs": {"Worker": worker}}})


def refusal(stack: KueueStack, ns: str, job: str, *change: str) -> str:
    """The API server's refusal of a label change to the job (empty if it is accepted)."""
    done = stack.apiserver.kubectl(
        "label", "--overwrite", "-n", ns, f"mxjob/{job}", *change, check=False
    )
    return "" if done.returncode == 0 else done.stderr


def suspend(stack: KueueStack, ns: str, job: str, value: bool) -> None:
    path = f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs/{job}"
    stack.rest.merge_patch(path, {"spec": {"runPolicy": {"suspend": value}}})
