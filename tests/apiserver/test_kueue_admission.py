"""No MXJob runs outside its Kueue admission (docs/kueue.md), on the real Kueue v0.17 built from
its module, the real Metacontroller under each apply strategy, the hook, and the kueue
component's ValidatingAdmissionPolicies on the real API server. Every pod and Workload event of
a namespace is recorded while a job is edited, and replayed in etcd's order: at no point do the
live pods ask for more than the ClusterQueue's quota, nor a job's pods of a pod set outnumber
what its admitted Workloads allow. The test plays the kubelet."""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from localcluster.kubelet import Kubelet
from localcluster.rest import KubeError, Rest
from localcluster.stack import release_0_1_0_flags, shipped_flags
from localcluster.waiting import wait_for
from tests.apiserver.test_kueue import (
    KUEUE,
    QUEUE_LABEL,
    cluster_queue,
    flavor,
    is_true,
    local_queue,
    mxjob,
    pod_names,
    queued,
    replica,
    workloads,
)
from tests.support.kueue_stack import KueueStack, StartKueue, kueue_metacontroller
from tests.support.kustomize import hook_objects
from tests.support.scenario import Job, apply_job

POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
STRATEGIES = {"dynamic-apply": release_0_1_0_flags, "server-side-apply": shipped_flags}
QUOTA = 4  # CPUs of each test's ClusterQueue; every pod asks for whole CPUs
LIVE = ("Pending", "Running", "Unknown")


@pytest.fixture(scope="module")
def base(start_kueue: StartKueue) -> Iterator[KueueStack]:
    """The API server with Kueue, the hook and the component's admission policies."""
    policies = [d for d in hook_objects("kueue") if d["kind"] in POLICY_KINDS]
    with start_kueue("kueue-admission", objects=policies) as running:
        yield running


SHIPPED = "server-side-apply"


@pytest.fixture(scope="module")
def stack(
    request: pytest.FixtureRequest, base: KueueStack, metacontroller_binary: Path
) -> Iterator[KueueStack]:
    """`base` with Metacontroller under the apply strategy a test asks for (indirect
    parametrization), else the shipped one."""
    flags = STRATEGIES[getattr(request, "param", SHIPPED)]()
    with kueue_metacontroller(base, metacontroller_binary, flags):
        yield base


@dataclass
class History:
    """Every pod and Workload event of one namespace, in etcd's order once `stopped`."""

    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, event: dict[str, Any]) -> None:
        obj = event["object"]
        with self.lock:
            self.events.append((int(obj["metadata"]["resourceVersion"]), event["type"], obj))

    def replay(self) -> list[tuple[int, dict[str, int], dict[tuple[str, str], int]]]:
        """After each event: the live pods' CPUs, and per (job, pod set) the live pods beyond
        what the job's admitted Workloads allow (0 when within)."""
        pods: dict[str, dict[str, Any]] = {}
        admitted: dict[str, dict[str, Any]] = {}
        # A finished job's Workload stays while any of its pods may still run, so its live
        # pods are held to it too (docs/kueue.md).
        out = []
        with self.lock:
            ordered = sorted(self.events, key=lambda e: e[0])
        for version, kind, obj in ordered:
            store = pods if obj["kind"] == "Pod" else admitted
            name = obj["metadata"]["name"]
            store.pop(name, None)
            if kind != "DELETED" and (obj["kind"] == "Pod" or _admitted(obj)):
                store[name] = obj
            live = [p for p in pods.values() if p.get("status", {}).get("phase") in LIVE]
            cpus = {"cpu": sum(_cpus(p) for p in live)}
            out.append((version, cpus, _beyond(live, admitted.values())))
        return out

    def gone(self, kind: str, name: str) -> int:
        """The resourceVersion at which the object was deleted."""
        return self._first(kind, name, lambda event, obj: event == "DELETED")

    def first_deletion(self, kind: str, name: str) -> int:
        """The resourceVersion at which the object was first marked for deletion or gone."""
        return self._first(
            kind, name,
            lambda event, obj: event == "DELETED" or bool(obj["metadata"].get("deletionTimestamp")),
        )  # fmt: skip

    def _first(self, kind: str, name: str, when: Callable[[str, dict[str, Any]], bool]) -> int:
        """The first resourceVersion at which an event of the object matches `when`."""
        with self.lock:
            return min(
                version for version, event, obj in self.events
                if obj["kind"] == kind and obj["metadata"]["name"] == name and when(event, obj)
            )  # fmt: skip


def _admitted(workload: dict[str, Any]) -> bool:
    conds = workload.get("status", {}).get("conditions") or []
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in conds)


def _cpus(pod: dict[str, Any]) -> int:
    return sum(
        int(c.get("resources", {}).get("requests", {}).get("cpu", "0"))
        for c in pod["spec"]["containers"]
    )


def _beyond(live: list[dict[str, Any]], admitted: Any) -> dict[tuple[str, str], int]:
    allowed: dict[tuple[str, str], int] = {}
    for workload in admitted:
        job = workload["metadata"]["labels"]["training.kubeflow.org/job-name"]
        for pod_set in workload["spec"]["podSets"]:
            key = (job, pod_set["name"])
            allowed[key] = allowed.get(key, 0) + pod_set["count"]
    running: dict[tuple[str, str], int] = {}
    for pod in live:
        labels = pod["metadata"]["labels"]
        key = (
            labels["training.kubeflow.org/job-name"],
            labels["training.kubeflow.org/replica-type"],
        )
        running[key] = running.get(key, 0) + 1
    return {k: n - allowed.get(k, 0) for k, n in running.items() if n > allowed.get(k, 0)}


@contextmanager
def recorded(rest: Rest, ns: str) -> Iterator[History]:
    """Watch the namespace's pods and Workloads from now until the block ends."""
    history = History()
    stop = threading.Event()
    failures: list[BaseException] = []
    threads = []
    for url in (f"/api/v1/namespaces/{ns}/pods", f"{KUEUE}/namespaces/{ns}/workloads"):
        items, version = rest.list(url)
        for item in items:
            kind = "Pod" if "/pods" in url else "Workload"
            history.add({"type": "ADDED", "object": {"kind": kind} | item})

        def follow(url: str = url, version: str = version) -> None:
            try:
                for event in rest.watch(url, version, stop):
                    history.add(event)
            except BaseException as error:  # reported by the test, not lost in a thread
                failures.append(error)

        threads.append(threading.Thread(target=follow, daemon=True))
    for thread in threads:
        thread.start()
    try:
        yield history
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
    assert not failures, failures


def assert_within_admission(history: History) -> int:
    """No moment above the quota or an admitted Workload's counts; the events replayed."""
    replayed = history.replay()
    for version, cpus, beyond in replayed:
        assert cpus["cpu"] <= QUOTA, f"at resourceVersion {version}: {cpus} of {QUOTA} CPUs"
        assert not beyond, f"at resourceVersion {version}: pods beyond admission {beyond}"
    return len(replayed)


def namespace(stack: KueueStack, name: str, labels: dict[str, str] | None = None) -> str:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    stack.apiserver.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    return name


def queues(stack: KueueStack, ns: str, *local: str) -> None:
    stack.apiserver.apply(
        flavor("plain", {}), cluster_queue(f"cq-{ns}", {"plain": str(QUOTA)}),
        *(local_queue(name, ns, f"cq-{ns}") for name in local),
    )  # fmt: skip


def job_of(name: str, workers: int, cpu: str = "1", queue: str | None = "lq") -> dict[str, Any]:
    """`workers` Workers of `cpu` CPUs each, and the Scheduler MXTrain needs, which asks for
    none."""
    job = mxjob(name, queue)
    job["spec"]["mxReplicaSpecs"]["Worker"] = replica(cpu, workers)
    scheduler = replica(cpu)
    del scheduler["template"]["spec"]["containers"][0]["resources"]
    job["spec"]["mxReplicaSpecs"]["Scheduler"] = scheduler
    return job


def patch_worker(stack: KueueStack, ns: str, name: str, workers: int, cpu: str) -> None:
    path = f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs/{name}"
    container = {"name": "mxnet", "image": "mxjob/mxnet:1.9.1",
                 "resources": {"requests": {"cpu": cpu}}}  # fmt: skip
    worker = {"replicas": workers, "template": {"spec": {"containers": [container]}}}
    stack.rest.merge_patch(path, {"spec": {"mxReplicaSpecs": {"Worker": worker}}})


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


def job_workloads(stack: KueueStack, ns: str, name: str) -> list[dict[str, Any]]:
    return [
        w for w in workloads(stack, ns).values()
        if w["metadata"]["labels"]["training.kubeflow.org/job-name"] == name
    ]  # fmt: skip


def counts(workload: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["count"] for p in workload["spec"]["podSets"]}


QUEUED_EDITS = [
    pytest.param("up", 1, 3, "1", id="workers-up"),
    pytest.param("down", 3, 1, "1", id="workers-down"),
    pytest.param("requests", 1, 1, "3", id="requests-up"),
]


@pytest.mark.parametrize(("case", "workers", "edited", "cpu"), QUEUED_EDITS)
def test_a_queued_job_edited_is_admitted_as_edited(
    stack: KueueStack, case: str, workers: int, edited: int, cpu: str
) -> None:
    """A job waiting behind a full queue is edited: its Workload is replaced by one for the
    edited pod sets, and it is admitted and runs as edited, never beyond the quota."""
    ns = namespace(stack, f"kq-queued-{case}")
    queues(stack, ns, "lq")
    kubelet = Kubelet(stack.rest, ns)
    blocker = apply_job(stack.apiserver, stack.rest, ns, job_of("blocker", QUOTA))
    started(blocker, kubelet, QUOTA)
    with recorded(stack.rest, ns) as history:
        waiting = apply_job(stack.apiserver, stack.rest, ns, job_of("waiting", workers))
        wait_for(lambda: is_true(waiting, "Queued", "MXJobQueued"), "the job queued")
        wait_for(lambda: job_workloads(stack, ns, "waiting"), "its Workload")
        (old,) = job_workloads(stack, ns, "waiting")
        patch_worker(stack, ns, "waiting", edited, cpu)
        wait_for(
            lambda: [w["metadata"]["name"] for w in job_workloads(stack, ns, "waiting")],
            "the Workload replaced",
            until=lambda names: len(names) == 1 and names[0] != old["metadata"]["name"],
        )
        (new,) = job_workloads(stack, ns, "waiting")
        assert counts(new) == {"scheduler": 1, "worker": edited}
        (worker,) = (p for p in new["spec"]["podSets"] if p["name"] == "worker")
        requests = worker["template"]["spec"]["containers"][0]["resources"]
        assert requests == {"requests": {"cpu": cpu}}
        assert pod_names(waiting) == []
        finish(blocker, kubelet)
        started(waiting, kubelet, edited)
        finish(waiting, kubelet)
    assert assert_within_admission(history) > 0


ADMITTED_EDITS = [
    pytest.param("dynamic-apply", "up-dynamic", 2, 3, "1", id="dynamic-apply-workers-up"),
    pytest.param(SHIPPED, "up", 2, 3, "1", id="server-side-apply-workers-up"),
    pytest.param(SHIPPED, "down", 2, 1, "1", id="server-side-apply-workers-down"),
    pytest.param(SHIPPED, "requests", 2, 2, "2", id="server-side-apply-requests-up"),
]


@pytest.mark.parametrize(("stack", "case", "workers", "edited", "cpu"), ADMITTED_EDITS,
                         indirect=["stack"])  # fmt: skip
def test_an_admitted_job_edited_stops_and_queues_again(
    stack: KueueStack, case: str, workers: int, edited: int, cpu: str
) -> None:
    """Two running jobs fill the quota; one is edited. Its pods stop before its Workload
    goes; the new Workload waits for room, and the job runs as edited once admitted."""
    ns = namespace(stack, f"kq-admitted-{case}")
    queues(stack, ns, "lq")
    kubelet = Kubelet(stack.rest, ns)
    other = apply_job(stack.apiserver, stack.rest, ns, job_of("other", QUOTA - workers))
    started(other, kubelet, QUOTA - workers)
    edited_job = apply_job(stack.apiserver, stack.rest, ns, job_of("edited", workers))
    started(edited_job, kubelet, workers)
    (old,) = job_workloads(stack, ns, "edited")
    old_pods = pod_names(edited_job)
    with recorded(stack.rest, ns) as history:
        patch_worker(stack, ns, "edited", edited, cpu)
        wait_for(
            lambda: [w["metadata"]["name"] for w in job_workloads(stack, ns, "edited")],
            "the old Workload replaced once the pods are gone",
            until=lambda names: len(names) == 1 and names[0] != old["metadata"]["name"],
        )
        fits = edited * int(cpu) <= workers
        if not fits:
            message = wait_for(
                lambda: str((queued(edited_job) or {}).get("message")),
                "it says why it waits",
                until=lambda m: "no longer matches the pod sets Kueue admitted" in m,
            )
            assert "LocalQueue lq" in message
            assert pod_names(edited_job) == []
            finish(other, kubelet)
        started(edited_job, kubelet, edited)
        (new,) = job_workloads(stack, ns, "edited")
        assert counts(new) == {"scheduler": 1, "worker": edited}
        finish(edited_job, kubelet)
    assert assert_within_admission(history) > 0
    # The old Workload, and its quota, went only once every pod it admitted was going.
    released = history.first_deletion("Workload", old["metadata"]["name"])
    assert all(history.first_deletion("Pod", name) < released for name in old_pods)


HOLD = "mxjob-controller.test/hold"  # a finalizer of the test's: the pod stays, being deleted


def test_a_finished_job_holds_its_quota_until_its_pods_are_gone(
    stack: KueueStack, figure: Callable[[str], None]
) -> None:
    """A job decided by its Scheduler while its Workers run: `cleanPodPolicy` (Running) stops
    the Workers; while one is still being deleted, the job's Workload and its quota stay and
    the next job waits; once it is gone, the next job is admitted."""
    ns = namespace(stack, "kq-finish")
    queues(stack, ns, "lq")
    kubelet = Kubelet(stack.rest, ns)
    first = apply_job(stack.apiserver, stack.rest, ns, job_of("first", QUOTA))
    started(first, kubelet, QUOTA)
    (admitted,) = job_workloads(stack, ns, "first")
    held = f"/api/v1/namespaces/{ns}/pods/first-worker-0"
    stack.rest.merge_patch(held, {"metadata": {"finalizers": [HOLD]}})
    with recorded(stack.rest, ns) as history:
        second = apply_job(stack.apiserver, stack.rest, ns, job_of("second", 1))
        wait_for(
            lambda: str((queued(second) or {}).get("message")),
            "the second waits for quota",
            until=lambda m: "insufficient unused quota" in m,
        )
        kubelet.exit("first-scheduler-0", 0)
        wait_for(lambda: is_true(first, "Succeeded"), "the first succeeds")
        # cleanPodPolicy Running: the exited Scheduler stays, the running Workers go.
        wait_for(
            lambda: pod_names(first), "the running Workers stopped, one held being deleted",
            until=lambda names: names == ["first-scheduler-0", "first-worker-0"],
        )  # fmt: skip
        assert stack.rest.get(held)["metadata"].get("deletionTimestamp")
        # Kueue admits a waiting job within a second of a quota's return (docs/kueue.md): five
        # seconds of a held pod and no admission is the quota kept.
        time.sleep(5)
        assert pod_names(second) == []
        assert [w["metadata"]["name"] for w in job_workloads(stack, ns, "first")] == [
            admitted["metadata"]["name"]
        ]
        stack.rest.merge_patch(held, {"metadata": {"finalizers": None}})
        gone = time.monotonic()
        wait_for(lambda: job_workloads(stack, ns, "first"), "the first's Workload gone",
                 until=lambda found: found == [])  # fmt: skip
        started(second, kubelet, 1)
        figure(f"Kueue: a finished job's last pod gone -> the next job running: "
               f"{time.monotonic() - gone:.2f} s")  # fmt: skip
        finish(second, kubelet)
    assert assert_within_admission(history) > 0
    released = history.first_deletion("Workload", admitted["metadata"]["name"])
    assert history.gone("Pod", "first-worker-0") < released


def refusal(stack: KueueStack, ns: str, job: str, *change: str) -> str:
    """The API server's refusal of a label change to the job (empty if it is accepted)."""
    done = stack.apiserver.kubectl(
        "label", "--overwrite", "-n", ns, f"mxjob/{job}", *change, check=False
    )
    return "" if done.returncode == 0 else done.stderr


def suspend(stack: KueueStack, ns: str, job: str, value: bool) -> None:
    path = f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs/{job}"
    stack.rest.merge_patch(path, {"spec": {"runPolicy": {"suspend": value}}})


def test_the_queue_label_rules_hold_at_admission(
    stack: KueueStack,
) -> None:
    """As Kueue's job webhook has them: the label cannot change while the job is not
    suspended, and cannot be removed where a default LocalQueue exists."""
    ns = namespace(stack, "kq-labels")
    queues(stack, ns, "lq", "other")
    kubelet = Kubelet(stack.rest, ns)
    job = apply_job(stack.apiserver, stack.rest, ns, job_of("labelled", 1))
    started(job, kubelet, 1)
    # The policies become active a moment after they are created: wait for the first refusal.
    told = wait_for(
        lambda: refusal(stack, ns, "labelled", f"{QUEUE_LABEL}=other", "--dry-run=server"),
        "the admission policy in force",
        until=bool,
    )
    assert "cannot change from 'lq' to 'other' while the MXJob is not suspended" in told, told
    assert "set spec.runPolicy.suspend to true first" in told, told
    assert "cannot change from 'lq' to ''" in refusal(stack, ns, "labelled", f"{QUEUE_LABEL}-")
    plain = apply_job(stack.apiserver, stack.rest, ns, job_of("plain", 1, queue=None))
    assert "cannot change from '' to 'lq'" in refusal(stack, ns, "plain", f"{QUEUE_LABEL}=lq")

    suspend(stack, ns, "labelled", True)
    assert refusal(stack, ns, "labelled", f"{QUEUE_LABEL}=other") == ""
    # Removal, suspended: refused only once the namespace has a default LocalQueue.
    assert refusal(stack, ns, "labelled", f"{QUEUE_LABEL}-", "--dry-run=server") == ""
    stack.apiserver.apply(local_queue("default", ns, f"cq-{ns}"))
    told = wait_for(
        lambda: refusal(stack, ns, "labelled", f"{QUEUE_LABEL}-", "--dry-run=server"),
        "the default-queue policy in force",
        until=bool,
    )
    assert f"cannot be removed in namespace {ns}, which has a default LocalQueue" in told, told
    assert plain.get()["metadata"].get("labels", {}).get(QUEUE_LABEL) is None


def test_a_job_without_the_label_queues_in_the_default_local_queue(
    stack: KueueStack,
) -> None:
    ns = namespace(stack, "kq-default")
    queues(stack, ns, "default")
    kubelet = Kubelet(stack.rest, ns)
    with recorded(stack.rest, ns) as history:
        blocker = apply_job(stack.apiserver, stack.rest, ns, job_of("blocker", QUOTA, queue=None))
        started(blocker, kubelet, QUOTA)
        second = apply_job(stack.apiserver, stack.rest, ns, job_of("second", 1, queue=None))
        wait_for(lambda: is_true(second, "Queued", "MXJobQueued"), "the second waits")
        wait_for(lambda: job_workloads(stack, ns, "second"), "its Workload")
        assert "LocalQueue default" in str((queued(second) or {})["message"])
        assert pod_names(second) == []
        (wl,) = job_workloads(stack, ns, "second")
        assert wl["spec"]["queueName"] == "default"
        finish(blocker, kubelet)
        started(second, kubelet, 1)
    assert assert_within_admission(history) > 0


def test_a_namespace_that_holds_jobs_without_a_queue(
    stack: KueueStack,
) -> None:
    """manageJobsWithoutQueueName's equivalent: the namespace label holds such jobs."""
    hold = {"kueue.mxjob-controller.kubeflow.org/manage-jobs-without-queue-name": "true"}
    ns = namespace(stack, "kq-held", hold)
    queues(stack, ns, "lq")
    held = apply_job(stack.apiserver, stack.rest, ns, job_of("held", 1, queue=None))
    wait_for(lambda: is_true(held, "Queued", "MXJobNoQueue"), "the job held")
    assert pod_names(held) == []
    assert job_workloads(stack, ns, "held") == []
    # Suspended, labelled and resumed, it queues and runs.
    suspend(stack, ns, "held", True)
    assert refusal(stack, ns, "held", f"{QUEUE_LABEL}=lq") == ""
    suspend(stack, ns, "held", False)
    wait_for(lambda: len(pod_names(held)), "the labelled job admitted", until=lambda n: n == 2)
