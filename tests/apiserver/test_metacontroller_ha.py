"""Two real Metacontroller processes with the with-metacontroller overlay's flags, leader
election among them (its `--leader-election`, namespace and id), on an API server of their own
with the real hook. The same life of two jobs (a 100-worker job, and a small one submitted
while no replica leads) runs twice: once untouched, for reference, and once with the leader
killed (SIGKILL, as a lost node) while the big job's children are being created, and again,
with a fresh standby started meanwhile, while its pods change phase. What it shows:
1. the standby takes over each time (the time from the kill to its lease is printed);
2. every job ends exactly as in the reference run (conditions, pods and their phases,
   Services);
3. over the whole run no pod is deleted and no pod name is created twice (a watch of every
   pod event);
4. what a failover costs under server-side apply: the new leader applies each Service and
   ConfigMap of every job on the server once (its cache of what it applied starts empty) and
   no pod; the reference run, over the same steps, applies nothing (the API server's audit
   log)."""

import copy
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from localcluster.apiserver import Binaries, cluster
from localcluster.crds import install_crds
from localcluster.kubelet import Kubelet
from localcluster.realstack import install_controller, serve_hook
from localcluster.rest import Rest
from localcluster.stack import install_adoption_guard
from localcluster.waiting import wait_for
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.kustomize import shipped_access
from tests.support.metacontroller_ha import (
    TAKEOVER,
    Cluster,
    applies,
    kill_leader,
    taken_over,
    watch_pods,
)
from tests.support.scenario import (
    CREATED,
    RUNNING,
    Job,
    State,
    apply_job,
    expected_children,
    manifest,
    pods,
)

WORKERS = 100  # 103 pods, 103 Services and a ConfigMap: creation takes seconds
SUCCEEDED = CREATED | {"Succeeded": "MXJobSucceeded"}  # Running goes False


@pytest.fixture(scope="module")
def ha(
    k8s_binaries: Binaries, metacontroller_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("metacontroller-ha")
    with fail_on_cluster_error():
        audit = workdir / "audit.log"
        with (
            cluster(k8s_binaries, workdir, audit_log=audit) as server,
            Rest(server) as rest,
            ExitStack() as stack,
        ):
            install_crds(server)
            server.kubectl("create", "namespace", "metacontroller")  # the lease's namespace
            hook = stack.enter_context(serve_hook(workdir))
            install_controller(server, hook.url)
            install_adoption_guard(server)
            kubeconfig = shipped_access(server)
            found = Cluster(server, rest, metacontroller_binary, workdir, audit, stack, kubeconfig)
            stop = threading.Event()
            watcher = threading.Thread(target=watch_pods, args=(rest, found.events, stop))
            watcher.start()
            stack.callback(watcher.join)
            stack.callback(stop.set)
            first = found.start_replica()
            wait_for(found.leader, "the first replica leads", TAKEOVER, lambda r: r is first)
            found.start_replica()
            yield found
            refused = [line for r in found.replicas for line in r.refusals()]
            assert refused == [], "a request outside the shipped role"


def big_job() -> dict[str, Any]:
    """examples/dist-cpu.yaml with 100 Workers and one Server, keeping every pod when it ends
    (so that any deletion seen is a fault)."""
    job = copy.deepcopy(manifest("examples/dist-cpu.yaml"))
    job["metadata"]["name"] = "big"
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "None"}
    job["spec"]["mxReplicaSpecs"]["Server"]["replicas"] = 1
    job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = WORKERS
    return job


def small_job() -> dict[str, Any]:
    job = copy.deepcopy(manifest("examples/dist-cpu.yaml"))
    job["metadata"]["name"] = "small"
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "None"}
    return job


def now() -> datetime:
    return datetime.now(UTC)


def children(*namespaces: str) -> set[tuple[str, str, str]]:
    """Every Service and ConfigMap of both jobs in `namespaces`, as `applies` names them."""
    return {
        (resource, namespace, name)
        for namespace in namespaces
        for job in (big_job(), small_job())
        for resource, name in [("services", n) for n in names(job)]
        + [("configmaps", f"{job['metadata']['name']}-mx-config")]
    }


def logged(audit: Path, since: datetime, expected: set[tuple[str, str, str]]) -> None:
    """Wait until an apply of each of `expected` received after `since` is in the audit log,
    so that none of them is still in flight when the next phase starts."""
    wait_for(
        lambda: expected - set(applies(audit, since)), "the applies logged", 60,
        lambda missing: not missing,
    )  # fmt: skip


def names(job: dict[str, Any]) -> tuple[str, ...]:
    return tuple(expected_children(job))


def end_state(job: Job) -> State:
    """The job's conditions, pods with their phases, and Services. (Not its replica counts:
    the status is kept as it was when the job succeeded, which the kubelet's pace decides.)"""
    return job.state()


@dataclass
class Run:
    """What one life of the two jobs left: each job's end state, the seconds each takeover
    took, and the server-side applies over the second half (from before the pods change to
    the end)."""

    ends: dict[str, State]
    takeovers: list[float]
    applied: Counter[tuple[str, str, str]]  # (resource, namespace, name): applies


def life(ha: Cluster, namespace: str, kill: bool) -> Run:
    """Both jobs from submission to success; with `kill`, the leader is killed twice."""
    server, rest = ha.server, ha.rest
    server.kubectl("create", "namespace", namespace)
    ha.namespaces.append(namespace)
    takeovers = []
    pods_path = f"/api/v1/namespaces/{namespace}/pods"

    def count() -> int:
        return len(rest.list(pods_path)[0])

    big, small = big_job(), small_job()
    started = now()
    big_run = apply_job(server, rest, namespace, big)
    if kill:
        wait_for(count, "the big job's first pods", until=lambda n: n > 0)
        failover = kill_leader(ha)
        started = now()
        assert count() < len(names(big)), "killed while the children were being created"
    small_run = apply_job(server, rest, namespace, small)  # while no replica leads
    if kill:
        _, took = taken_over(ha, failover)
        takeovers.append(took)
        ha.start_replica()  # the StatefulSet's replacement: the next standby
    for job, run in ((big, big_run), (small, small_run)):
        run.reaches(State(CREATED, pods("Pending", *names(job)), names(job)), "created", 300)

    # Every apply of the first half is logged before the second starts: the creations (and,
    # after a takeover, the new leader's applies of every job on the server) are all in.
    logged(ha.audit, started, children(*ha.namespaces))
    before = now()
    kubelet = Kubelet(rest, namespace)
    starting = threading.Thread(target=kubelet.run)
    starting.start()
    if kill:
        wait_for(kubelet.phases, "the first pods running", until=lambda p: "Running" in p.values())
        failover = kill_leader(ha)
    starting.join()
    if kill:
        _, took = taken_over(ha, failover)
        takeovers.append(took)
    for job, run in ((big, big_run), (small, small_run)):
        run.reaches(State(RUNNING, pods("Running", *names(job)), names(job)), "running", 300)
    for name in sorted(kubelet.phases()):
        kubelet.exit(name, 0)
    for job, run in ((big, big_run), (small, small_run)):
        run.reaches(State(SUCCEEDED, pods("Succeeded", *names(job)), names(job)), "done", 300)
    ends = {run.name: end_state(run) for run in (big_run, small_run)}
    return Run(ends, takeovers, applies(ha.audit, before))


def test_the_standby_takes_over_and_every_job_ends_as_without_the_kill(
    ha: Cluster, figure: Callable[[str], None]
) -> None:
    reference = life(ha, "reference", kill=False)
    failed_over = life(ha, "failover", kill=True)

    assert failed_over.ends == reference.ends
    for took in failed_over.takeovers:
        figure(f"Metacontroller failover: the standby leads {took:.1f} s after the kill")
    assert len(failed_over.takeovers) == 2

    created = Counter((ns, name) for kind, ns, name, _ in ha.events if kind == "ADDED")
    assert [key for key, n in created.items() if n > 1] == [], "a pod name created twice"
    assert [e for e in ha.events if e[0] in ("DELETED", "DELETING")] == [], "a pod deleted"
    every = sum(len(names(j)) for j in (big_job(), small_job()))
    assert Counter(ns for ns, _ in created) == {"reference": every, "failover": every}

    # The reference run's second half applies nothing; in the failover run's, the new leader
    # applies every Service and ConfigMap of every job on the server, the reference run's
    # finished ones too (the same number of times each), and no pod.
    assert reference.applied == Counter()
    every_child = children("reference", "failover")
    assert set(failed_over.applied) == every_child
    (times,) = set(failed_over.applied.values())
    assert times == 1, "each once"
    figure(
        f"failover cost: {len(every_child)} Services and ConfigMaps applied {times} times each "
        f"by the new leader, no pod"
    )
