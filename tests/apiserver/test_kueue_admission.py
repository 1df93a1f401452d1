"""No MXJob runs outside its Kueue admission (docs/kueue.md), on the real Kueue v0.17 built from
its module, the real Metacontroller under each apply strategy, the hook, and the kueue
component's ValidatingAdmissionPolicies on the real API server. Every pod and Workload event of
a namespace is recorded while a job is edited, and replayed in etcd's order: at no point do the
live pods ask for more than the ClusterQueue's quota, nor a job's pods of a pod set outnumber
what its admitted Workloads allow. The test plays the kubelet."""

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from localcluster.kubelet import Kubelet
from localcluster.stack import release_0_1_0_flags, shipped_flags
from localcluster.waiting import wait_for
from tests.support.kueue_history import History, recorded, within_admission
from tests.support.kueue_objects import (
    QUEUE_LABEL,
    counts,
    finish,
    is_true,
    job_of,
    job_workloads,
    local_queue,
    namespace,
    patch_worker,
    plain_queues,
    pod_names,
    queued,
    refusal,
    started,
    suspend,
)
from tests.support.kueue_stack import KueueStack, StartKueue, kueue_metacontroller
from tests.support.kustomize import hook_objects
from tests.support.scenario import apply_job

POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
STRATEGIES = {"dynamic-apply": release_0_1_0_flags, "server-side-apply": shipped_flags}
QUOTA = 4  # CPUs of each test's ClusterQueue; every pod asks for whole CPUs


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


def queues(stack: KueueStack, ns: str, *local: str) -> None:
    plain_queues(stack, ns, f"cq-{ns}", str(QUOTA), *local)


def assert_within_admission(history: History) -> int:
    """No moment above the quota or an admitted Workload's counts; the events replayed."""
    return within_admission(history, QUOTA)


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
