"""The TTL controller (manifests/components/ttl-controller) beside the real Metacontroller and
hook, with kube-controller-manager's garbage collector (scripts/kube-controllers) and the
component's own RBAC: a finished job with a TTL is deleted on time with its children, one without
stays, a restart mid-TTL and a second replica change neither, a recreated job of the same name is
never deleted, and without the component the hook still removes the children at the TTL."""

import asyncio
import functools
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, AsyncClient, KubeConfig

from app.controllers.ttl.deleter import delete_if_uid
from localcluster.apiserver import ApiServer
from localcluster.crds import install_crds
from localcluster.kubelet import Kubelet
from localcluster.rest import KubeError, Rest
from localcluster.waiting import wait_for
from tests.support.controllers import GARBAGE_COLLECTOR, kube_controllers
from tests.support.resources import CONTROLLER_UID
from tests.support.scenario import CHILD_LISTS, CREATED, Job, State, apply_job, manifest, run_job
from tests.support.ttl_controller import TtlController, account_kubeconfig, rbac, run_ttl_controller

from .conftest import RealStack

TTL = 5
# "Within a second or two of its TTL": completionTime is stamped to the second, so a job may be
# due up to a second after it really finished; the lateness measured is in docs/lifecycle.md.
LATE = 2.0
SUCCEEDED = CREATED | {"Succeeded": "MXJobSucceeded"}
# Where the component's ServiceAccount lives (the hook's namespace in an install).
SYSTEM = "mxjob-system"


@pytest.fixture(scope="module")
def garbage_collector(
    apiserver: ApiServer, go_tool: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """What deletes a deleted job's children in a cluster (ownerReferences)."""
    log = tmp_path_factory.mktemp("ttl-gc") / "gc.log"
    with kube_controllers(go_tool("kube-controllers"), apiserver, log, GARBAGE_COLLECTOR):
        yield


@pytest.fixture
def kubeconfig(apiserver: ApiServer, tmp_path: Path) -> Path:
    """The component's RBAC applied, and a kubeconfig with its ServiceAccount's token. The
    controller acts on every MXJob of the cluster with a TTL and the tests count what it
    deletes, so such jobs that earlier tests left are deleted first."""
    delete_jobs_with_a_ttl(apiserver)
    apiserver.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}})
    return account_kubeconfig(apiserver, SYSTEM, tmp_path / "ttl-controller.kubeconfig")


def delete_jobs_with_a_ttl(apiserver: ApiServer) -> None:
    """Delete the MXJobs that set ttlSecondsAfterFinished (the others, some large, stay: the
    garbage collector would spend minutes on their children)."""
    listed = apiserver.kubectl("get", "mxjobs.kubeflow.org", "-A", "-o", "json", check=False)
    # Before any test installed the CRD there is no job to delete.
    if "doesn't have a resource type" in listed.stderr:
        return
    assert listed.returncode == 0, listed.stderr
    for job in json.loads(listed.stdout)["items"]:
        if "ttlSecondsAfterFinished" in (job["spec"].get("runPolicy") or {}):
            meta = job["metadata"]
            apiserver.kubectl(
                "delete", "mxjobs.kubeflow.org", meta["name"], "-n", meta["namespace"],
                "--ignore-not-found", "--wait=true",
            )  # fmt: skip


StartController = Callable[[], AbstractContextManager[TtlController]]
FinishJob = Callable[[dict[str, Any]], Job]


@pytest.fixture
def start_controller(kubeconfig: Path, tmp_path: Path) -> StartController:
    """`start_controller()`: one more TTL controller of the component's ServiceAccount."""
    return functools.partial(run_ttl_controller, kubeconfig, tmp_path)


@pytest.fixture
def controller(start_controller: StartController) -> Iterator[TtlController]:
    with start_controller() as running:
        yield running


@pytest.fixture
def finish_job(real_stack: RealStack, rest: Rest, namespace: str) -> FinishJob:
    """`finish_job(document)`: the job applied to the real stack and run to Succeeded."""
    return functools.partial(finish, real_stack, rest, namespace)


def single(name: str, **run_policy: Any) -> dict[str, Any]:
    """examples/single-worker.yaml named `name`, its pods kept once it succeeds."""
    job = manifest("examples/single-worker.yaml")
    job["metadata"]["name"] = name
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "None"} | run_policy
    return job


def finish(stack: RealStack, rest: Rest, namespace: str, document: dict[str, Any]) -> Job:
    """The job run to Succeeded, its worker kept."""
    job = run_job(stack.apiserver, rest, namespace, document)
    worker = f"{job.name}-worker-0"
    Kubelet(rest, namespace).exit(worker, 0)
    job.reaches(State(SUCCEEDED, {worker: "Succeeded"}, (worker,)), "succeeded, worker kept")
    return job


def due(job: Job, ttl: int) -> datetime:
    completed = datetime.fromisoformat(job.status()["completionTime"])
    return completed + timedelta(seconds=ttl)


def exists(job: Job) -> bool:
    try:
        job.get()
    except KubeError as error:
        if error.status_code == 404:
            return False
        raise
    return True


def children(rest: Rest, namespace: str, uid: str) -> list[str]:
    """`Kind/name` of every object labelled as a child of the job with `uid`."""
    selector = f"?labelSelector={CONTROLLER_UID}%3D{uid}"
    return sorted(
        f"{kind}/{child['metadata']['name']}"
        for kind, path in CHILD_LISTS.items()
        for child in rest.get(path.format(namespace) + selector)["items"]
    )


def lateness(job: Job, ttl: int) -> float:
    """Seconds between the job's due time and when it was seen gone (polled every 0.25 s)."""
    expected = due(job, ttl)
    wait_for(lambda: not exists(job), "the job deleted", timeout=ttl + 60)
    return (datetime.now(UTC) - expected).total_seconds()


def test_a_job_goes_on_time_with_its_children_and_one_without_a_ttl_stays(
    rest: Rest,
    namespace: str,
    garbage_collector: None,
    finish_job: FinishJob,
    controller: TtlController,
    figure: Callable[[str], None],
) -> None:
    kept = finish_job(single("no-ttl"))
    job = finish_job(single("with-ttl", ttlSecondsAfterFinished=TTL))
    uid = job.get()["metadata"]["uid"]
    expected = due(job, TTL)
    assert children(rest, namespace, uid), "the children are there until the TTL"

    late = lateness(job, TTL)
    wait_for(lambda: not children(rest, namespace, uid), "its children gone", 60)
    children_late = (datetime.now(UTC) - expected).total_seconds()
    figure(f"ttl-controller: job gone {late:.2f} s, children {children_late:.2f} s after due")
    assert 0 <= late < LATE, f"deleted {late:.2f} s after completionTime + ttl"
    assert controller.deleted() == 1
    # The job without a TTL: still there, finished, and no timer is counting it down.
    assert kept.state() == State(SUCCEEDED, {"no-ttl-worker-0": "Succeeded"}, ("no-ttl-worker-0",))
    assert controller.metric("mxjob_ttl_pending_jobs") == 0


def test_a_restart_mid_ttl_still_deletes_on_time(
    garbage_collector: None,
    finish_job: FinishJob,
    start_controller: StartController,
    figure: Callable[[str], None],
) -> None:
    ttl = 8  # room for a stop and a start before it is due on 2 loaded cores
    with start_controller() as first:
        job = finish_job(single("restarted", ttlSecondsAfterFinished=ttl))
        wait_for(lambda: first.metric("mxjob_ttl_pending_jobs"), "the timer armed")
    with start_controller() as second:
        restarted_before_due = datetime.now(UTC) < due(job, ttl)
        late = lateness(job, ttl)
        figure(f"ttl-controller restarted mid-TTL: job gone {late:.2f} s after due")
        assert restarted_before_due, "the restart took longer than the TTL: use a longer one"
        assert 0 <= late < LATE
        # The job is gone once the API server has deleted it; the controller counts its delete
        # when the answer reaches it, a moment later on a loaded machine.
        assert wait_for(second.deleted, "the delete counted by the restarted controller") == 1
        assert second.metric("mxjob_ttl_deletions_total", outcome="error") == 0


def test_two_replicas_delete_once(
    garbage_collector: None, finish_job: FinishJob, start_controller: StartController
) -> None:
    with start_controller() as one, start_controller() as other:
        job = finish_job(single("twice", ttlSecondsAfterFinished=TTL))
        assert 0 <= lateness(job, TTL) < LATE
        both = (one, other)
        wait_for(
            lambda: sum(c.metric("mxjob_ttl_pending_jobs") for c in both),
            "no timer left",
            until=lambda pending: pending == 0,
        )
        assert sum(c.deleted() for c in both) == 1
        assert sum(c.metric("mxjob_ttl_deletions_total", outcome="error") for c in both) == 0


def test_a_job_of_the_same_name_is_never_deleted(
    apiserver: ApiServer, rest: Rest, namespace: str, kubeconfig: Path
) -> None:
    """The delete carries the UID of the job that was timed: a job recreated under its name
    is another job (409 Conflict), and one already gone is 404."""
    install_crds(apiserver)
    job = apply_job(apiserver, rest, namespace, single("recreated"))
    uid = job.get()["metadata"]["uid"]

    async def delete(with_uid: str) -> int:
        async with AsyncClient(config=KubeConfig.from_file(kubeconfig)) as client:
            try:
                await delete_if_uid(client, namespace, job.name, with_uid)
            except ApiError as error:
                return error.status.code or 0
        return 200

    assert asyncio.run(delete("00000000-0000-0000-0000-000000000000")) == 409
    assert exists(job)
    assert asyncio.run(delete(uid)) == 200
    wait_for(lambda: not exists(job), "the job deleted")
    assert asyncio.run(delete(uid)) == 404


def test_without_the_component_the_hook_still_removes_the_children(
    real_stack: RealStack,
    rest: Rest,
    namespace: str,
    finish_job: FinishJob,
    start_controller: StartController,
) -> None:
    """The component deleted while a job's TTL runs (its process stopped, its RBAC deleted):
    the job's children still go at the TTL, the MXJob stays, and new jobs run."""
    ttl = 3
    with start_controller() as running:
        job = finish_job(single("orphaned", ttlSecondsAfterFinished=ttl))
        wait_for(lambda: running.metric("mxjob_ttl_pending_jobs"), "the timer armed")
    real_stack.apiserver.kubectl("delete", "-f", "-", input=yaml.safe_dump_all(rbac(SYSTEM)))

    job.reaches(State(SUCCEEDED, {}, ()), "children gone at the TTL, the job kept")
    assert datetime.now(UTC) >= due(job, ttl)
    after = run_job(real_stack.apiserver, rest, namespace, single("after"))
    assert after.state().conditions == CREATED | {"Running": "MXJobRunning"}
