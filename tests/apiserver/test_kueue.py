"""Queueing under the real Kueue (docs/kueue.md): Kueue v0.17 built from its module, the real
Metacontroller with the CompositeController of manifests/overlays/kueue, and the hook, on an
API server of this module's own (its CompositeController is not the one the other tests use).
The test plays the kubelet. Quota, preemption, flavors, and bad input: a queue that does not
exist, a job larger than any quota, a Workload deleted by hand, labels edited on running jobs."""

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from localcluster.kubelet import Kubelet
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.controllers import AGGREGATION, kube_controllers
from tests.support.kueue_objects import (
    KUEUE,
    QUEUE_LABEL,
    cluster_queue,
    flavor,
    is_true,
    last_condition,
    local_queue,
    mxjob,
    namespace,
    plain_queues,
    pod_names,
    pods_of,
    priority,
    priority_class,
    queued,
    replica,
    running,
    workload_of,
)
from tests.support.kueue_stack import KueueStack, StartKueue, kueue_metacontroller
from tests.support.kustomize import hook_objects
from tests.support.rbac import can_i
from tests.support.scenario import Job, apply_job, manifest

TOLERATION = {"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def stack(start_kueue: StartKueue, metacontroller_binary: Path) -> Iterator[KueueStack]:
    with start_kueue("kueue") as running, kueue_metacontroller(running, metacontroller_binary):
        yield running


def test_two_jobs_one_quota(stack: KueueStack, figure: Callable[[str], None]) -> None:
    """A ClusterQueue that fits one job: one runs, the other waits and says so; when the
    first succeeds its quota returns and the second starts."""
    ns = namespace(stack, "kueue-quota")
    plain_queues(stack, ns, "fits-one", "1", "lq")
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
    classes = [priority_class("mx-low", 100), priority_class("mx-high", 1000)]
    stack.apiserver.apply(
        *classes, flavor("plain", {}), cluster_queue("preempting", {"plain": "1"}, preempt=True),
        local_queue("lq", ns, "preempting"),
    )  # fmt: skip

    low = apply_job(stack.apiserver, stack.rest, ns, mxjob("low", "lq", **priority("mx-low")))
    kubelet = Kubelet(stack.rest, ns)
    wait_for(lambda: pod_names(low), "the low job admitted")
    assert workload_of(stack, ns, "low")["spec"]["priority"] == 100
    kubelet.run("low-worker-0")
    wait_for(lambda: is_true(low, "Running"), "the low job runs")

    applied = time.monotonic()
    high = apply_job(stack.apiserver, stack.rest, ns, mxjob("high", "lq", **priority("mx-high")))
    evicted(low)
    wait_for(lambda: pod_names(high), "the high job admitted")
    figure(f"Kueue: higher-priority job applied -> its first pod, the lower one preempted: "
           f"{time.monotonic() - applied:.2f} s")  # fmt: skip
    kubelet.run("high-worker-0")
    kubelet.exit("high-worker-0", 0)
    wait_for(lambda: is_true(high, "Succeeded"), "the high job succeeds")
    runs_again_as_its_first_attempt(stack, ns, low, kubelet)


def evicted(low: Job) -> None:
    """The preempted job says it was evicted and waits, its pods and Services gone."""
    wait_for(lambda: is_true(low, "Queued", "MXJobEvicted"), "the low job evicted")
    assert last_condition(low) == "Queued"
    message = str((queued(low) or {})["message"])
    assert "evicted by Kueue (Preempted)" in message, message
    running = low.condition("Running") or {}
    assert (running.get("status"), running.get("reason")) == ("False", "MXJobEvicted")
    wait_for(lambda: low.state().pods == {} and low.state().services == (), "low pods gone")
    assert "startTime" not in low.status()


def runs_again_as_its_first_attempt(stack: KueueStack, ns: str, low: Job, kubelet: Kubelet) -> None:
    """Admitted again, the preempted job runs to Succeeded on a first attempt: no restart."""
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
    plain_queues(stack, ns, "small", "1", "small")
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
    plain_queues(stack, ns, "roomy", "10", "lq")
    kubelet = Kubelet(stack.rest, ns)
    queued_job = apply_job(stack.apiserver, stack.rest, ns, mxjob("queued", "lq"))
    plain = apply_job(stack.apiserver, stack.rest, ns, mxjob("plain", None))
    for job in (queued_job, plain):
        running(job, kubelet)
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods_of(stack, ns)}
    recreated = workload_deleted_by_hand(stack, ns)
    relabelled(stack, ns)
    assert workload_of(stack, ns, "plain") == {}
    assert workload_of(stack, ns, "queued")["metadata"]["uid"] == recreated
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods_of(stack, ns)} == uids
    for job in (queued_job, plain):
        assert is_true(job, "Running"), job.name


def workload_deleted_by_hand(stack: KueueStack, ns: str) -> str:
    """The queued job's Workload deleted by hand: recreated (its new uid), and the running
    pod stays."""
    first = workload_of(stack, ns, "queued")["metadata"]
    stack.rest.delete(f"{KUEUE}/namespaces/{ns}/workloads/{first['name']}")
    wait_for(
        lambda: workload_of(stack, ns, "queued").get("metadata", {}).get("uid"),
        "the Workload recreated",
        until=lambda uid: uid not in (None, first["uid"]),
    )
    return str(workload_of(stack, ns, "queued")["metadata"]["uid"])


def relabelled(stack: KueueStack, ns: str) -> None:
    """The label added to the running plain job: it runs on, unqueued. The label removed from
    the admitted job: it stays in its queue, on its Workload. Returns once each was synced."""
    before = {j: stack.hook.syncs(ns, j) for j in ("plain", "queued")}
    stack.apiserver.kubectl("label", "-n", ns, "mxjob/plain", f"{QUEUE_LABEL}=lq")
    stack.apiserver.kubectl("label", "-n", ns, "mxjob/queued", f"{QUEUE_LABEL}-")
    for name, count in before.items():

        def syncs(job: str = name) -> int:
            return stack.hook.syncs(ns, job)

        def more(seen: int, was: int = count) -> bool:
            return seen > was

        wait_for(syncs, f"a sync of the relabelled {name}", until=more)


def test_the_examples_queue_and_admit(stack: KueueStack) -> None:
    """examples/kueue/queues.yaml and job.yaml as docs/kueue.md applies them."""
    ns = namespace(stack, "kueue-examples")
    stack.apiserver.kubectl("apply", "-n", ns, "-f", str(REPO / "examples/kueue/queues.yaml"))
    job = apply_job(stack.apiserver, stack.rest, ns, manifest("examples/kueue/job.yaml"))
    wait_for(lambda: len(pod_names(job)), "the example job admitted", until=lambda n: n == 5)
    wait_for(lambda: is_true(job, "Created") and not is_true(job, "Queued"), "admitted, said")
    assert (queued(job) or {})["reason"] == "MXJobAdmitted"
    admission = workload_of(stack, ns, "mnist-queued")["status"]["admission"]
    assert admission["clusterQueue"] == "training"


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
        return can_i(stack.apiserver, user, "-n", ns, *what)

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
