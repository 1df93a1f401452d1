"""Whole lives of MXJobs through the real Metacontroller and the hook, each from `kubectl apply`
to its final state, with the test playing the kubelet: success and clean-up by cleanPodPolicy,
a SIGKILLed worker replaced and a crash failing the job, the backoff limit, the active deadline
on time, suspend and resume, the TTL, successPolicy AllWorkers, and a tune job."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localcluster.kubelet import Kubelet
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support.scenario import CREATED, RUNNING, Job, State, manifest, pods, run_job

from .conftest import RealStack

DIST = "mnist-dist-cpu"
ALL = tuple(f"{DIST}-{r}" for r in ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1"))
SERVERS = (f"{DIST}-server-0", f"{DIST}-server-1")
# In MXNet's order: the workers finish, then the scheduler (whose exit decides the job).
FINISHERS = (f"{DIST}-worker-0", f"{DIST}-worker-1", f"{DIST}-scheduler-0")
RESTARTING = CREATED | {"Restarting": "MXJobRestarting"}
SUCCEEDED = CREATED | {"Succeeded": "MXJobSucceeded"}
# How late a timer may fire. Measured: 0.1 to 3.7 s on 2 loaded cores, of which up to 1 s by
# design (times are stamped to the second); nothing else syncs a job at rest (no periodic
# resync), so a hook that forgot resyncAfterSeconds fails this.
LATE = 10


def dist_cpu(**run_policy: Any) -> dict[str, Any]:
    """examples/dist-cpu.yaml with these runPolicy fields changed."""
    job = manifest("examples/dist-cpu.yaml")
    job["spec"]["runPolicy"] |= run_policy
    return job


def message(job: Job, ctype: str) -> str:
    condition = job.condition(ctype)
    assert condition is not None, ctype
    return str(condition["message"])


def changed_at(job: Job, ctype: str) -> str:
    condition = job.condition(ctype)
    assert condition is not None, ctype
    return str(condition["lastTransitionTime"])


def seconds(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


@pytest.mark.parametrize(
    ("policy", "kept"),
    [
        pytest.param("Running", pods("Succeeded", *FINISHERS), id="Running-removes-the-servers"),
        pytest.param("All", {}, id="All-removes-every-pod"),
        pytest.param(
            "None", pods("Running", *SERVERS) | pods("Succeeded", *FINISHERS), id="None-keeps-all"
        ),
    ],
)
def test_success_then_clean_up_by_policy(
    real_stack: RealStack, rest: Rest, namespace: str, policy: str, kept: dict[str, str]
) -> None:
    job = run_job(real_stack.apiserver, rest, namespace, dist_cpu(cleanPodPolicy=policy))

    for name in FINISHERS:
        Kubelet(rest, namespace).exit(name, 0)

    job.reaches(State(SUCCEEDED, dict(sorted(kept.items())), tuple(sorted(kept))), "cleaned up")
    status = job.status()
    assert status["completionTime"] == changed_at(job, "Succeeded")
    assert status["replicaStatuses"]["Worker"] == {"active": 0, "succeeded": 2, "failed": 0}


def test_all_workers_success_waits_for_the_workers_not_the_scheduler(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    """successPolicy AllWorkers: the Scheduler's exit neither ends the job nor, under
    cleanPodPolicy Running, takes its Workers down; the last Worker's success ends it."""
    document = dist_cpu(cleanPodPolicy="Running")
    document["spec"]["successPolicy"] = "AllWorkers"
    job = run_job(real_stack.apiserver, rest, namespace, document)
    kubelet = Kubelet(rest, namespace)
    scheduler = f"{DIST}-scheduler-0"

    kubelet.exit(scheduler, 0)
    wait_for(lambda: job.status()["replicaStatuses"]["Scheduler"]["succeeded"], "the exit seen")
    assert job.state() == State(RUNNING, pods("Running", *ALL) | {scheduler: "Succeeded"}, ALL)

    for name in FINISHERS[:2]:
        kubelet.exit(name, 0)
    kept = pods("Succeeded", *FINISHERS)
    job.reaches(State(SUCCEEDED, dict(sorted(kept.items())), tuple(sorted(kept))), "cleaned up")


def test_sigkilled_worker_is_replaced_and_a_crash_fails_the_job(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    job = run_job(real_stack.apiserver, rest, namespace, dist_cpu())
    kubelet = Kubelet(rest, namespace)
    others = ALL[:4]

    kubelet.exit(f"{DIST}-worker-1", 137)
    replaced = pods("Running", *others) | {
        f"{DIST}-worker-1": "Failed",
        f"{DIST}-worker-1-r1": "Pending",
    }
    job.reaches(State(RESTARTING, replaced, ALL), "replacement asked for")
    assert "failed with exit code 137 (SIGKILL)" in message(job, "Restarting")

    kubelet.run(f"{DIST}-worker-1-r1")
    job.reaches(
        State(RUNNING, pods("Running", *others, f"{DIST}-worker-1-r1"), ALL),
        "replacement running, the failed attempt removed",
    )
    assert job.status()["restartCount"] == 1

    kubelet.exit(f"{DIST}-worker-0", 1)
    failed = State(
        CREATED | {"Failed": "MXJobFailed"},
        pods("Failed", f"{DIST}-worker-0"),
        (f"{DIST}-worker-0",),
    )
    job.reaches(failed, "failed, running pods removed")
    assert "Worker replica 0" in message(job, "Failed")
    assert "failed with exit code 1" in message(job, "Failed")
    # The replacement that carried the restart is gone; the finished job keeps its count.
    assert job.status()["restartCount"] == 1


def test_backoff_limit(real_stack: RealStack, rest: Rest, namespace: str) -> None:
    """backoffLimit 1: the first replacement is allowed, the second restart fails the job."""
    job = run_job(real_stack.apiserver, rest, namespace, dist_cpu(backoffLimit=1))
    kubelet = Kubelet(rest, namespace)
    kubelet.exit(f"{DIST}-worker-1", 137)
    wait_for(lambda: f"{DIST}-worker-1-r1" in job.state().pods, "the first replacement")
    kubelet.run(f"{DIST}-worker-1-r1")
    job.reaches(State(RUNNING, pods("Running", *ALL[:4], f"{DIST}-worker-1-r1"), ALL), "running")

    kubelet.exit(f"{DIST}-worker-1-r1", 137)

    last = f"{DIST}-worker-1-r1"
    failed = CREATED | {"Failed": "BackoffLimitExceeded"}
    job.reaches(
        State(failed, {last: "Failed"}, (f"{DIST}-worker-1",)), "failed, no second replacement"
    )
    assert "2 restarts > backoffLimit 1" in message(job, "Failed")
    assert job.status()["restartCount"] == 2


def test_active_deadline_fires_on_time(
    real_stack: RealStack, rest: Rest, namespace: str, figure: Callable[[str], None]
) -> None:
    """Nothing happens once the pods run; the hook's resyncAfterSeconds alone brings the sync
    that fails the job when activeDeadlineSeconds is up (nothing else would: no periodic resync)."""
    deadline = 12
    job = run_job(real_stack.apiserver, rest, namespace, dist_cpu(activeDeadlineSeconds=deadline))
    due = seconds(job.status()["startTime"]) + timedelta(seconds=deadline)

    wait_for(lambda: job.condition("Failed"), "the deadline", timeout=deadline + 60)
    seen = datetime.now(UTC)

    job.reaches(State(CREATED | {"Failed": "DeadlineExceeded"}, {}, ()), "running pods removed")
    decided = seconds(changed_at(job, "Failed"))
    late = (seen - due).total_seconds()
    figure(f"activeDeadlineSeconds {deadline}: Failed seen {late:.1f} s after startTime + deadline")
    assert decided >= due, "never before the deadline"
    assert late < LATE, f"the deadline fired {late:.1f} s late"


def test_suspend_and_resume(real_stack: RealStack, rest: Rest, namespace: str) -> None:
    """Resuming starts a new run: first attempts again, and restartCount from 0."""
    document = dist_cpu()
    job = run_job(real_stack.apiserver, rest, namespace, document)
    kubelet = Kubelet(rest, namespace)
    kubelet.exit(f"{DIST}-worker-1", 137)
    wait_for(lambda: f"{DIST}-worker-1-r1" in job.state().pods, "a replacement")
    kubelet.run(f"{DIST}-worker-1-r1")
    job.reaches(State(RUNNING, pods("Running", *ALL[:4], f"{DIST}-worker-1-r1"), ALL), "running")
    assert job.status()["restartCount"] == 1

    document["spec"]["runPolicy"]["suspend"] = True
    job.apply(document)
    job.reaches(State(CREATED | {"Suspended": "MXJobSuspended"}, {}, ()), "suspended")
    assert (job.condition("Running") or {}).get("reason") == "MXJobSuspended"
    assert "startTime" not in job.status()
    assert job.status()["restartCount"] == 0

    resumed_at = datetime.now(UTC).replace(microsecond=0)
    document["spec"]["runPolicy"]["suspend"] = False
    job.apply(document)
    job.reaches(State(CREATED, pods("Pending", *ALL), ALL), "resumed, pods back")
    assert (job.condition("Suspended") or {}).get("reason") == "MXJobResumed"
    assert seconds(job.status()["startTime"]) >= resumed_at
    Kubelet(rest, namespace).run(*ALL)
    job.reaches(State(RUNNING, pods("Running", *ALL), ALL), "running again")
    assert job.status()["restartCount"] == 0


def test_ttl_removes_every_child_and_keeps_the_job(
    real_stack: RealStack, rest: Rest, namespace: str, figure: Callable[[str], None]
) -> None:
    ttl = 6
    document = manifest("examples/single-worker.yaml")
    document["spec"]["runPolicy"] = {"cleanPodPolicy": "None", "ttlSecondsAfterFinished": ttl}
    job = run_job(real_stack.apiserver, rest, namespace, document)
    worker = "mnist-single-worker-0"

    Kubelet(rest, namespace).exit(worker, 0)
    wait_for(lambda: job.status().get("completionTime"), "completion")
    due = seconds(job.status()["completionTime"]) + timedelta(seconds=ttl)
    job.reaches(State(SUCCEEDED, {worker: "Succeeded"}, (worker,)), "finished, pods kept (None)")

    job.reaches(State(SUCCEEDED, {}, ()), "TTL expired", timeout=ttl + 60)
    late = (datetime.now(UTC) - due).total_seconds()
    figure(f"ttlSecondsAfterFinished {ttl}: children gone {late:.1f} s after completionTime + ttl")
    assert late >= 0, "never before the TTL"
    assert late < LATE, f"the TTL fired {late:.1f} s late"


def test_tune_job_is_decided_by_its_tuner(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    job = run_job(real_stack.apiserver, rest, namespace, manifest("examples/tune.yaml"))
    tuner = "auto-tuning-tuner-0"

    Kubelet(rest, namespace).exit(tuner, 0)

    job.reaches(
        State(SUCCEEDED, {tuner: "Succeeded"}, (tuner,)), "succeeded, tracker and server removed"
    )
