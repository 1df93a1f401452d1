"""Kueue's `waitForPodsReady` with the Workload-status writer (docs/kueue.md): the real Kueue
(short timeout, requeuing with backoff), the real Metacontroller with the kueue overlay's
CompositeController, the hook and `python -m app kueue-status`, on an API server of this
module's own. The test plays the kubelet: it starts a job's pods, or never does. The writer runs
under its component's RBAC and admission policy, which the last tests show narrow."""

import calendar
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.kubelet import Kubelet
from localcluster.rest import KubeError, Rest
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.kueue_objects import (
    KUEUE,
    is_true,
    mxjob,
    namespace,
    plain_queues,
    pod_names,
    workload_of,
)
from tests.support.kueue_stack import KueueStack, StartKueue, kueue_metacontroller
from tests.support.rbac import can_i
from tests.support.scenario import Job, apply_job

TIMEOUT = 10
LIMIT = 2  # requeues after a PodsReady timeout; the next timeout deactivates the Workload
# Kueue's backoff before the n-th requeue: base * 2^(n-1), at most the max (seconds).
PODS_READY = {
    "timeout": f"{TIMEOUT}s",
    "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 1,
                          "backoffMaxSeconds": 2, "backoffLimitCount": LIMIT},
}  # fmt: skip


@pytest.fixture(scope="module")
def stack(start_kueue: StartKueue, metacontroller_binary: Path) -> Iterator[KueueStack]:
    """Kueue with `waitForPodsReady`, and the writer as its component's ServiceAccount."""
    with (
        start_kueue("kueue-pods-ready", PODS_READY) as running,
        kueue_metacontroller(running, metacontroller_binary),
    ):
        yield running


def queue(stack: KueueStack, name: str) -> str:
    """A namespace whose LocalQueue `lq` feeds a ClusterQueue of one CPU."""
    ns = namespace(stack, name)
    plain_queues(stack, ns, name, "1", "lq")
    return ns


def condition(wl: dict[str, Any], ctype: str) -> dict[str, Any]:
    found = [c for c in wl.get("status", {}).get("conditions", []) if c["type"] == ctype]
    return found[0] if found else {}


def test_a_job_whose_pods_run_is_not_evicted(stack: KueueStack) -> None:
    """Its pods started, the writer sets PodsReady and Kueue's timeout passes without an
    eviction; the job then succeeds on its first pod."""
    ns = queue(stack, "pods-ready-runs")
    job = apply_job(stack.apiserver, stack.rest, ns, mxjob("runs", "lq"))
    (pod,) = wait_for(lambda: pod_names(job), "the admitted job's pod")
    uid = stack.rest.get(f"/api/v1/namespaces/{ns}/pods/{pod}")["metadata"]["uid"]
    Kubelet(stack.rest, ns).run(pod)
    ready = wait_for(
        lambda: condition(workload_of(stack, ns, "runs"), "PodsReady"), "PodsReady True",
        until=lambda c: c.get("status") == "True",
    )  # fmt: skip
    assert ready["reason"] == "Started"
    admitted = condition(workload_of(stack, ns, "runs"), "Admitted")["lastTransitionTime"]
    past = calendar.timegm(time.strptime(admitted, "%Y-%m-%dT%H:%M:%SZ")) + 2 * TIMEOUT + 1

    def unevicted_past_the_timeout() -> tuple[bool, bool]:
        evicted = condition(workload_of(stack, ns, "runs"), "Evicted").get("status") == "True"
        assert not evicted, workload_of(stack, ns, "runs")
        return time.time() > past, evicted

    wait_for(unevicted_past_the_timeout, "twice Kueue's timeout passed", until=lambda v: v[0])
    Kubelet(stack.rest, ns).exit(pod, 0)
    wait_for(lambda: is_true(job, "Succeeded"), "the job succeeded")
    assert stack.rest.get(f"/api/v1/namespaces/{ns}/pods/{pod}")["metadata"]["uid"] == uid
    assert not is_true(job, "Restarting")


def test_a_job_whose_pods_never_start_is_evicted_requeued_then_deactivated(
    stack: KueueStack, figure: Callable[[str], None]
) -> None:
    """No pod of it ever runs: Kueue evicts it at the timeout, the hook stops its pods, the
    writer clears the reservation, and Kueue requeues the same Workload after its backoff,
    `requeueState.count` counting; the job says it was evicted and waits. Past the limit the
    Workload is deactivated and kept, and the job waits for it to be activated again."""
    ns = queue(stack, "pods-ready-stuck")
    job: Job = apply_job(stack.apiserver, stack.rest, ns, mxjob("stuck", "lq"))
    wait_for(lambda: pod_names(job), "the admitted job's pod")
    first = workload_of(stack, ns, "stuck")
    uid = first["metadata"]["uid"]
    started = time.monotonic()
    evicted_twice(stack, ns, job, uid)
    figure(f"two PodsReady-timeout evictions ({TIMEOUT} s each) and a requeue: "
           f"{time.monotonic() - started:.1f} s")  # fmt: skip
    assert workload_of(stack, ns, "stuck")["metadata"]["uid"] == uid
    deactivated_then_active_again(stack, ns, job, uid)
    figure(f"deactivated past backoffLimitCount {LIMIT}, reactivated and admitted again: "
           f"{time.monotonic() - started:.1f} s from the first pod")  # fmt: skip


def evicted_twice(stack: KueueStack, ns: str, job: Job, uid: str) -> None:
    """Kueue evicts the job at the timeout, the writer clears the reservation, and Kueue
    requeues the same Workload: twice. Meanwhile the job says it was evicted, and why."""
    said: set[tuple[str, str]] = set()

    def count() -> int:
        """The Workload's eviction count; meanwhile, what the job's Queued condition said."""
        state = workload_of(stack, ns, "stuck").get("status", {}).get("requeueState") or {}
        cond = job.condition("Queued") or {}
        said.add((cond.get("reason", ""), cond.get("message", "")))
        return int(state.get("count", 0))

    wait_for(count, "the first eviction counted", until=lambda n: n >= 1)
    wl = wait_for(
        lambda: workload_of(stack, ns, "stuck"), "the reservation cleared",
        until=lambda w: condition(w, "QuotaReserved").get("status") == "False",
    )  # fmt: skip
    assert wl["metadata"]["uid"] == uid
    assert "admission" not in wl["status"]
    assert condition(wl, "Evicted")["reason"] == "PodsReadyTimeout"
    wait_for(count, "a second eviction after the requeue", until=lambda n: n >= 2)
    # Between an eviction and the next admission (Kueue's backoff: 1 s, then 2 s).
    evicted = [message for reason, message in said if reason == "MXJobEvicted"]
    assert evicted, said
    assert all("(PodsReadyTimeout)" in message for message in evicted), evicted


def deactivated_then_active_again(stack: KueueStack, ns: str, job: Job, uid: str) -> None:
    """The next timeout is past the limit: Kueue deactivates the Workload and no longer queues
    it. The job stops, says why and how to go on, and keeps that Workload; active again, it is
    queued and admitted, on the same Workload (docs/kueue.md)."""
    inactive = wait_for(
        lambda: workload_of(stack, ns, "stuck"), "the Workload deactivated",
        until=lambda w: w["spec"].get("active") is False,
    )  # fmt: skip
    assert inactive["metadata"]["uid"] == uid
    told = wait_for(lambda: job.condition("Queued") or {}, "the job told",
                    until=lambda c: c.get("reason") == "MXJobDeactivated")  # fmt: skip
    assert "RequeuingLimitExceeded" in told["message"], told
    assert f"until its Workload {inactive['metadata']['name']} is active again" in told["message"]
    wait_for(lambda: pod_names(job), "its pods stopped", until=lambda names: names == [])
    wait_for(
        lambda: workload_of(stack, ns, "stuck"), "the reservation cleared",
        until=lambda w: condition(w, "QuotaReserved").get("status") == "False",
    )  # fmt: skip
    # As docs/kueue.md says: active again, it is queued and admitted, on the same Workload.
    stack.apiserver.kubectl(
        "patch", "workload", inactive["metadata"]["name"], "-n", ns, "--type=merge",
        "--patch", '{"spec": {"active": true}}',
    )  # fmt: skip
    wait_for(lambda: pod_names(job), "its pods again once it is active")
    assert workload_of(stack, ns, "stuck")["metadata"]["uid"] == uid


def test_the_writers_rbac_allows_what_it_does_and_no_more(stack: KueueStack) -> None:
    """The kueue-status component's ClusterRole and binding, on the real API server."""
    writer = REPO / "manifests" / "components" / "kueue-status" / "writer.yaml"
    rbac = [d for d in yaml.safe_load_all(writer.read_text()) if d["kind"] != "Deployment"]
    stack.apiserver.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mxjob-system"}}, *rbac
    )
    who = "system:serviceaccount:mxjob-system:mxjob-controller-kueue-status"

    def can(*what: str) -> bool:
        return can_i(stack.apiserver, who, *what, "-A")

    workloads_ = "workloads.kueue.x-k8s.io"
    for verb in ("get", "list", "watch"):
        assert can(verb, workloads_), verb
        assert can(verb, "pods"), verb
    assert can("patch", workloads_, "--subresource=status")
    for verb in ("create", "update", "patch", "delete"):
        assert not can(verb, workloads_), verb
        assert not can(verb, "pods"), verb
    assert not can("update", workloads_, "--subresource=status")
    assert not can("get", "mxjobs.kubeflow.org")


WRITER = "mxjob-controller-kueue-status"  # the component's ServiceAccount, in mxjob-system
ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [
        {"name": "main", "count": 1, "flavors": {"cpu": "plain"}, "resourceUsage": {"cpu": "1"}}
    ],
}


@dataclass(frozen=True)
class Token:
    """The API server as a client with another bearer token sees it (`Rest`'s `Server`)."""

    url: str
    token: str
    ca_cert: Path


def hand_made(name: str, ns: str, owner: str | None) -> dict[str, Any]:
    """A Workload no job of the hook's made (so the writer ignores it), in a LocalQueue that does
    not exist (so Kueue never admits it); controlled by an MXJob of UID `owner`, if given."""
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
                                    "name": "gone", "uid": owner, "controller": True}]  # fmt: skip
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    pod_set = {"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta,
            "spec": {"queueName": "nowhere", "podSets": [pod_set]}}  # fmt: skip


def condition_set(ctype: str, status: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(old: dict[str, Any]) -> dict[str, Any]:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        new = {"type": ctype, "status": status, "reason": "Test", "message": "planted",
               "lastTransitionTime": now}  # fmt: skip
        kept = [c for c in old.get("conditions", []) if c["type"] != ctype]
        return old | {"conditions": [*kept, new]}

    return change


def as_writer(stack: KueueStack, writer: Rest, ns: str, name: str, change: Any) -> str:
    """`change` of the Workload's status, a merge patch of its status subresource as the writer
    sends it (conditional on the resourceVersion; Kueue may write in between: then again),
    with the writer's own token: '' if the API server took it, else its refusal."""
    url = f"{KUEUE}/namespaces/{ns}/workloads/{name}"
    for _ in range(10):
        workload = stack.rest.get(url)
        patch = {"metadata": {"resourceVersion": workload["metadata"]["resourceVersion"]},
                 "status": change(workload.get("status", {}))}  # fmt: skip
        try:
            writer.merge_patch(f"{url}/status", patch)
        except KubeError as error:
            if error.status_code != 409:
                return str(error)
            continue
        return ""
    raise AssertionError(f"Workload {name} kept changing")


def test_the_writers_admission_policy_narrows_its_rbac(stack: KueueStack) -> None:
    """The kueue-status component's ValidatingAdmissionPolicy, applied with its RBAC as the
    stack started (the writer's own patches above went through it): with the writer's token,
    no status write to a Workload no MXJob controls; to one an MXJob controls, PodsReady and
    QuotaReserved False, but no QuotaReserved True, no other condition, no admission set, no
    other field of the status."""
    ns = namespace(stack, "writer-policy")
    stack.apiserver.apply(hand_made("kueues", ns, None), hand_made("mxjobs", ns, str(uuid.uuid4())))
    made = stack.apiserver.kubectl("create", "token", WRITER, "-n", "mxjob-system").stdout
    server = stack.apiserver
    with Rest(Token(server.url, made.strip(), server.ca_cert)) as writer:
        ready = condition_set("PodsReady", "False")
        refused = wait_for(lambda: as_writer(stack, writer, ns, "kueues", ready),
                           "the policy in force", until=bool)  # fmt: skip
        assert "may only write the status of a Workload an MXJob controls" in refused, refused
        assert as_writer(stack, writer, ns, "mxjobs", ready) == ""
        for change, message in (
            (condition_set("QuotaReserved", "True"), "QuotaReserved and Admitted to False only"),
            (condition_set("Evicted", "True"), "every other condition stays as it was"),
            (lambda s: s | {"admission": ADMISSION}, "may remove a Workload's admission, never"),
            (lambda s: s | {"requeueState": {"count": 9}}, "only status.conditions and status.a"),
        ):
            refused = as_writer(stack, writer, ns, "mxjobs", change)
            assert message in refused, refused
        assert as_writer(stack, writer, ns, "mxjobs", condition_set("QuotaReserved", "False")) == ""
