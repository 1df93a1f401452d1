"""Queueing under the real Kueue (docs/kueue.md): Kueue v0.17 built from its module, the real
Metacontroller with the CompositeController of manifests/overlays/kueue, and the hook, on an
API server of this module's own (its CompositeController is not the one the other tests use).
The test plays the kubelet. Quota, preemption, flavors, and bad input: a queue that does not
exist, a job larger than any quota, a Workload deleted by hand, labels edited on running jobs."""

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.kubelet import Kubelet
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.controllers import AGGREGATION, kube_controllers
from tests.support.kueue_stack import KueueStack, StartKueue, kueue_metacontroller
from tests.support.kustomize import hook_objects
from tests.support.scenario import Job, apply_job, manifest

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
TOLERATION = {"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def stack(start_kueue: StartKueue, metacontroller_binary: Path) -> Iterator[KueueStack]:
    with start_kueue("kueue") as running, kueue_metacontroller(running, metacontroller_binary):
        yield running


def namespace(stack: KueueStack, name: str) -> str:
    stack.apiserver.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
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


def workloads(stack: KueueStack, ns: str) -> dict[str, dict[str, Any]]:
    items = stack.rest.get(f"{KUEUE}/namespaces/{ns}/workloads")["items"]
    return {w["metadata"]["name"]: w for w in items}


def workload_of(stack: KueueStack, ns: str, job: str) -> dict[str, Any]:
    """The job's one Workload (named for its pod sets), or {} when it has none."""
    found = [
        w for w in workloads(stack, ns).values()
        if w["metadata"]["labels"].get("training.kubeflow.org/job-name") == job
    ]  # fmt: skip
    assert len(found) <= 1, [w["metadata"]["name"] for w in found]
    return found[0] if found else {}


def pod_names(job: Job) -> list[str]:
    return sorted(job.state().pods)


def queued(job: Job) -> dict[str, Any] | None:
    return job.condition("Queued")


def last_condition(job: Job) -> str:
    """What `kubectl get mxj` shows in its State column."""
    conditions = job.status().get("conditions") or [{}]
    return str(conditions[-1].get("type"))


def is_true(job: Job, ctype: str, reason: str | None = None) -> bool:
    cond = job.condition(ctype)
    return bool(cond and cond["status"] == "True" and reason in (None, cond["reason"]))


def test_two_jobs_one_quota(stack: KueueStack, figure: Callable[[str], None]) -> None:
    """A ClusterQueue that fits one job: one runs, the other waits and says so; when the
    first succeeds its quota returns and the second starts."""
    ns = namespace(stack, "kueue-quota")
    stack.apiserver.apply(
        flavor("plain", {}), cluster_queue("fits-one", {"plain": "1"}),
        local_queue("lq", ns, "fits-one"),
    )  # fmt: skip
    jobs = [
        apply_job(stack.apiserver, stack.rest, ns, mxjob(name, "lq")) for name in ("one", "two")
    ]
    wait_for(
        lambda: sorted(bool(pod_names(j)) for j in jobs),
        "one job admitted",
        until=lambda admitted: admitted == [False, True],
    )
    first, second = sorted(jobs, key=lambda j: not pod_names(j))
    message = wait_for(
        lambda: str((queued(second) or {}).get("message")),
        "the other says it waits for quota",
        until=lambda m: "insufficient unused quota" in m,
    )
    assert is_true(second, "Queued", "MXJobQueued")
    assert last_condition(second) == "Queued"
    assert "is queued in LocalQueue lq, waiting for Kueue to admit it" in message, message
    assert "startTime" not in second.status()
    assert pod_names(second) == []
    assert second.state().services == ()

    kubelet = Kubelet(stack.rest, ns)
    kubelet.run(f"{first.name}-worker-0")
    wait_for(lambda: is_true(first, "Running"), "the first runs")
    assert (queued(first) or {})["reason"] == "MXJobAdmitted"
    kubelet.exit(f"{first.name}-worker-0", 0)
    wait_for(lambda: is_true(first, "Succeeded"), "the first succeeds")
    succeeded = time.monotonic()
    wait_for(lambda: pod_names(second), "the second's first pod")
    figure(f"Kueue: first job Succeeded -> second job's first pod: "
           f"{time.monotonic() - succeeded:.2f} s")  # fmt: skip
    assert workload_of(stack, ns, first.name) == {}
    kubelet.run(f"{second.name}-worker-0")
    wait_for(lambda: is_true(second, "Running"), "the second runs")
    assert (queued(second) or {})["reason"] == "MXJobAdmitted"


def test_higher_priority_preempts_lower(stack: KueueStack, figure: Callable[[str], None]) -> None:
    """The lower job's pods go, it shows it was evicted, and it runs to Succeeded after the
    higher one, with no restart counted."""
    ns = namespace(stack, "kueue-preempt")
    classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": name}, "value": value}
        for name, value in (("mx-low", 100), ("mx-high", 1000))
    ]  # fmt: skip
    stack.apiserver.apply(
        *classes, flavor("plain", {}), cluster_queue("preempting", {"plain": "1"}, preempt=True),
        local_queue("lq", ns, "preempting"),
    )  # fmt: skip

    def policy(name: str) -> dict[str, Any]:
        return {"schedulingPolicy": {"priorityClass": name}}

    low = apply_job(stack.apiserver, stack.rest, ns, mxjob("low", "lq", **policy("mx-low")))
    kubelet = Kubelet(stack.rest, ns)
    wait_for(lambda: pod_names(low), "the low job admitted")
    assert workload_of(stack, ns, "low")["spec"]["priority"] == 100
    kubelet.run("low-worker-0")
    wait_for(lambda: is_true(low, "Running"), "the low job runs")

    applied = time.monotonic()
    high = apply_job(stack.apiserver, stack.rest, ns, mxjob("high", "lq", **policy("mx-high")))
    wait_for(lambda: is_true(low, "Queued", "MXJobEvicted"), "the low job evicted")
    assert last_condition(low) == "Queued"
    message = str((queued(low) or {})["message"])
    assert "evicted by Kueue (Preempted)" in message, message
    running = low.condition("Running") or {}
    assert (running.get("status"), running.get("reason")) == ("False", "MXJobEvicted")
    wait_for(lambda: low.state().pods == {} and low.state().services == (), "low pods gone")
    assert "startTime" not in low.status()

    wait_for(lambda: pod_names(high), "the high job admitted")
    figure(f"Kueue: higher-priority job applied -> its first pod, the lower one preempted: "
           f"{time.monotonic() - applied:.2f} s")  # fmt: skip
    kubelet.run("high-worker-0")
    kubelet.exit("high-worker-0", 0)
    wait_for(lambda: is_true(high, "Succeeded"), "the high job succeeds")

    wait_for(lambda: pod_names(low), "the low job admitted again")
    assert pod_names(low) == ["low-worker-0"]  # a first attempt, not a replacement
    kubelet.run("low-worker-0")
    kubelet.exit("low-worker-0", 0)
    wait_for(lambda: is_true(low, "Succeeded"), "the low job succeeds")
    conditions = {c["type"] for c in low.status()["conditions"]}
    assert "Restarting" not in conditions
    pod = stack.rest.get(f"/api/v1/namespaces/{ns}/pods/low-worker-0")
    assert pod["metadata"]["labels"]["training.kubeflow.org/replica-attempt"] == "0"
    assert "training.kubeflow.org/restarts-before" not in (pod["metadata"].get("annotations") or {})


def test_pods_carry_their_flavors(stack: KueueStack) -> None:
    """Two flavors: each pod gets the node labels and tolerations of the flavor its pod set
    was admitted on."""
    ns = namespace(stack, "kueue-flavors")
    stack.apiserver.apply(
        flavor("pool-a", {"pool": "a"}, [TOLERATION]), flavor("pool-b", {"pool": "b"}),
        cluster_queue("two-pools", {"pool-a": "1", "pool-b": "2"}),
        local_queue("lq", ns, "two-pools"),
    )  # fmt: skip
    job = mxjob("pools", "lq")
    job["spec"]["mxReplicaSpecs"] = {
        "Scheduler": replica("1"), "Server": replica("1"), "Worker": replica("1")
    }  # fmt: skip
    applied = apply_job(stack.apiserver, stack.rest, ns, job)
    wait_for(lambda: len(pod_names(applied)), "pods created", until=lambda n: n == 3)
    admission = workload_of(stack, ns, "pools")["status"]["admission"]
    assigned = {a["name"]: a["flavors"]["cpu"] for a in admission["podSetAssignments"]}
    assert set(assigned.values()) == {"pool-a", "pool-b"}, assigned
    expected = {
        "pool-a": ({"pool": "a"}, [TOLERATION]),
        "pool-b": ({"pool": "b"}, []),
    }
    for rtype, chosen in assigned.items():
        pod = stack.rest.get(f"/api/v1/namespaces/{ns}/pods/pools-{rtype}-0")
        selector, tolerations = expected[chosen]
        assert pod["spec"].get("nodeSelector") == selector, rtype
        # The API server's DefaultTolerationSeconds adds its node.kubernetes.io ones.
        added = [
            t for t in pod["spec"].get("tolerations", [])
            if not t["key"].startswith("node.kubernetes.io/")
        ]  # fmt: skip
        assert added == tolerations, rtype


def test_bad_input_gets_a_clear_status(stack: KueueStack) -> None:
    """A queue that does not exist and a job larger than any quota wait with Kueue's reason."""
    ns = namespace(stack, "kueue-bad")
    stack.apiserver.apply(
        flavor("plain", {}), cluster_queue("small", {"plain": "1"}),
        local_queue("small", ns, "small"),
    )  # fmt: skip
    nowhere = apply_job(stack.apiserver, stack.rest, ns, mxjob("nowhere", "no-such-queue"))
    huge = apply_job(stack.apiserver, stack.rest, ns, mxjob("huge", "small", cpu="4"))
    for job, words in ((nowhere, "LocalQueue no-such-queue doesn't exist"),
                       (huge, "couldn't assign flavors")):  # fmt: skip

        def told(j: Job = job, w: str = words) -> bool:
            return w in str((queued(j) or {}).get("message"))

        wait_for(told, words)
        assert last_condition(job) == "Queued"
        assert pod_names(job) == []
        workload = workload_of(stack, ns, job.name)
        reserved = next(c for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")
        assert reserved["message"] in str((queued(job) or {})["message"])


def test_label_edits_never_stop_a_running_job(stack: KueueStack) -> None:
    """Without the component's admission policies (not installed on this module's stack): a
    Workload deleted by hand is recreated and the pods stay; a label added to a running job
    leaves it running unqueued; a label removed from an admitted job leaves it running in the
    queue its Workload names."""
    ns = namespace(stack, "kueue-edits")
    stack.apiserver.apply(
        flavor("plain", {}), cluster_queue("roomy", {"plain": "10"}),
        local_queue("lq", ns, "roomy"),
    )  # fmt: skip
    kubelet = Kubelet(stack.rest, ns)
    queued_job = apply_job(stack.apiserver, stack.rest, ns, mxjob("queued", "lq"))
    plain = apply_job(stack.apiserver, stack.rest, ns, mxjob("plain", None))
    for job in (queued_job, plain):

        def has_pods(j: Job = job) -> list[str]:
            return pod_names(j)

        def runs(j: Job = job) -> bool:
            return is_true(j, "Running")

        wait_for(has_pods, f"{job.name} has pods")
        kubelet.run(f"{job.name}-worker-0")
        wait_for(runs, f"{job.name} runs")
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods_of(stack, ns)}

    # The Workload deleted by hand: recreated, and the running pod stays.
    first = workload_of(stack, ns, "queued")["metadata"]
    stack.rest.delete(f"{KUEUE}/namespaces/{ns}/workloads/{first['name']}")
    wait_for(
        lambda: workload_of(stack, ns, "queued").get("metadata", {}).get("uid"),
        "the Workload recreated",
        until=lambda uid: uid not in (None, first["uid"]),
    )
    recreated = workload_of(stack, ns, "queued")["metadata"]["uid"]

    # The label added to the running plain job: it runs on, unqueued. The label removed from
    # the admitted job: it stays in its queue, on its Workload.
    before = {j: stack.hook.syncs(ns, j) for j in ("plain", "queued")}
    stack.apiserver.kubectl("label", "-n", ns, "mxjob/plain", f"{QUEUE_LABEL}=lq")
    stack.apiserver.kubectl("label", "-n", ns, "mxjob/queued", f"{QUEUE_LABEL}-")
    for name, count in before.items():

        def syncs(job: str = name) -> int:
            return stack.hook.syncs(ns, job)

        def more(seen: int, was: int = count) -> bool:
            return seen > was

        wait_for(syncs, f"a sync of the relabelled {name}", until=more)
    assert workload_of(stack, ns, "plain") == {}
    assert workload_of(stack, ns, "queued")["metadata"]["uid"] == recreated
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods_of(stack, ns)} == uids
    for job in (queued_job, plain):
        assert is_true(job, "Running"), job.name


def pods_of(stack: KueueStack, ns: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = stack.rest.get(f"/api/v1/namespaces/{ns}/pods")["items"]
    return items


def test_the_examples_queue_and_admit(stack: KueueStack) -> None:
    """examples/kueue/queues.yaml and job.yaml as docs/kueue.md applies them."""
    ns = namespace(stack, "kueue-examples")
    stack.apiserver.kubectl("apply", "-n", ns, "-f", str(REPO / "examples/kueue/queues.yaml"))
    job = apply_job(stack.apiserver, stack.rest, ns, manifest("examples/kueue/job.yaml"))
    wait_for(lambda: len(pod_names(job)), "the example job admitted", until=lambda n: n == 5)
    wait_for(lambda: is_true(job, "Created") and not is_true(job, "Queued"), "admitted, said")
    assert (queued(job) or {})["reason"] == "MXJobAdmitted"
    assert workload_of(stack, ns, "mnist-queued")["status"]["admission"]["clusterQueue"] == (
        "training"
    )


def test_kueue_batch_users_may_run_mxjobs(
    stack: KueueStack, go_tool: Callable[[str], Path], tmp_path: Path
) -> None:
    """The component's MXJob roles land in Kueue's own aggregated batch roles, filled by the
    real aggregation controller: a batch user of a namespace may run MXJobs there."""
    kueue_roles = [yaml.safe_load(p.read_text()) for p in sorted(stack.rbac.glob("*.yaml"))]
    ours = [
        d for d in hook_objects("kueue")
        if d["kind"] == "ClusterRole" and d.get("aggregationRule") is None
        and "rbac.kueue.x-k8s.io/batch-admin" in d["metadata"].get("labels", {})
    ]  # fmt: skip
    assert len(ours) == 2
    stack.apiserver.apply(*kueue_roles, *ours)
    ns = namespace(stack, "kueue-rbac")
    stack.apiserver.kubectl(
        "-n", ns, "create", "rolebinding", "dana", "--clusterrole=batch-user-role", "--user=dana"
    )  # fmt: skip

    def can(user: str, *what: str) -> bool:
        done = stack.apiserver.kubectl(
            f"--as={user}", "-n", ns, "auth", "can-i", *what, check=False
        )  # fmt: skip
        return done.stdout.strip() == "yes"

    # Nothing fills an aggregated role but the controller: no MXJobs until it runs.
    assert not can("dana", "create", "mxjobs.kubeflow.org")
    log = tmp_path / "aggregation.log"
    with kube_controllers(go_tool("kube-controllers"), stack.apiserver, log, AGGREGATION):
        wait_for(
            lambda: can("dana", "create", "mxjobs.kubeflow.org"),
            f"batch-user-role lets dana create MXJobs (log: {log})",
            60,
        )
    assert can("dana", "delete", "mxjobs.kubeflow.org")
    assert can("dana", "get", "mxjobs.kubeflow.org", "--subresource=status")
    assert not can("dana", "update", "mxjobs.kubeflow.org", "--subresource=status")
    assert not can("erin", "create", "mxjobs.kubeflow.org")
