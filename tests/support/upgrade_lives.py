"""The upgrade test's jobs (tests/apiserver/test_upgrade.py): four lives in the states a cluster
has at any moment (running, restarted once, suspended, finished with its TTL pending), and each
run to its end."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from localcluster.apiserver import ApiServer
from localcluster.kubelet import Kubelet
from localcluster.realstack import Hook
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support.scenario import CREATED, RUNNING, Job, State, manifest, pods, run_job

SUCCEEDED = CREATED | {"Succeeded": "MXJobSucceeded"}
SUSPENDED = CREATED | {"Suspended": "MXJobSuspended"}


def single(name: str, **run_policy: Any) -> dict[str, Any]:
    """examples/single-worker.yaml named `name`, replaced on a SIGKILL (restartPolicy ExitCode)."""
    job = manifest("examples/single-worker.yaml")
    job["metadata"]["name"] = name
    job["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    job["spec"]["runPolicy"] = run_policy
    return job


def worker(job: str, attempt: int = 0) -> str:
    return f"{job}-worker-0" + (f"-r{attempt}" if attempt else "")


def restarted_once(server: ApiServer, rest: Rest, namespace: str, name: str) -> Job:
    """A job whose worker was SIGKILLed and replaced, the replacement running."""
    job = run_job(server, rest, namespace, single(name))
    kubelet = Kubelet(rest, namespace)
    kubelet.exit(worker(name), 137)
    wait_for(lambda: worker(name, 1) in job.state().pods, "a replacement")
    kubelet.run(worker(name, 1))
    job.reaches(State(RUNNING, pods("Running", worker(name, 1)), (worker(name),)), "running")
    return job


@dataclass(frozen=True)
class Lives:
    running: Job
    restarted: Job
    suspended: Job
    finished: Job
    suspend: dict[str, Any]  # the suspended job's manifest as applied

    def all(self) -> tuple[Job, ...]:
        return (self.running, self.restarted, self.suspended, self.finished)


def start_lives(server: ApiServer, rest: Rest, namespace: str, ttl: int) -> Lives:
    """Four jobs: running, restarted once, suspended, and finished with a TTL of `ttl` s pending."""
    kubelet = Kubelet(rest, namespace)
    running = run_job(server, rest, namespace, single("running"))
    restarted = restarted_once(server, rest, namespace, "restarted")
    document = single("suspended")
    suspended = run_job(server, rest, namespace, document)
    document["spec"]["runPolicy"]["suspend"] = True
    suspended.apply(document)
    suspended.reaches(State(SUSPENDED, {}, ()), "suspended")
    finished = run_job(
        server,
        rest,
        namespace,
        single("finished", cleanPodPolicy="None", ttlSecondsAfterFinished=ttl),
    )
    kubelet.exit(worker("finished"), 0)
    kept = State(SUCCEEDED, pods("Succeeded", worker("finished")), (worker("finished"),))
    finished.reaches(kept, "finished, its TTL pending")
    return Lives(running, restarted, suspended, finished, document)


def synced_by(hook: Hook, jobs: tuple[Job, ...]) -> None:
    """Wait until `hook` has answered a sync of every job (Metacontroller syncs each at start)."""
    for job in jobs:
        wait_for(lambda: hook.syncs(job.namespace, job.name), f"{job.name} synced")  # noqa: B023


def restarts(job: Job) -> int | None:
    count: int | None = job.status().get("restartCount")
    return count


def finish(lives: Lives, rest: Rest, namespace: str, ttl: int) -> datetime:
    """Every job run to its end, as under one release; returns when the TTL (`ttl` s) was due."""
    kubelet = Kubelet(rest, namespace)
    due = datetime.fromisoformat(lives.finished.status()["completionTime"]) + timedelta(seconds=ttl)
    kubelet.exit(worker("running"), 0)
    lives.running.reaches(
        State(SUCCEEDED, pods("Succeeded", worker("running")), (worker("running"),)), "succeeded"
    )
    kubelet.exit(worker("restarted", 1), 0)
    lives.restarted.reaches(
        State(SUCCEEDED, pods("Succeeded", worker("restarted", 1)), (worker("restarted"),)),
        "the replacement succeeded",
    )
    lives.suspend["spec"]["runPolicy"]["suspend"] = False
    lives.suspended.apply(lives.suspend)
    resumed = (worker("suspended"),)
    lives.suspended.reaches(State(CREATED, pods("Pending", *resumed), resumed), "resumed")
    kubelet.run(*resumed)
    lives.suspended.reaches(State(RUNNING, pods("Running", *resumed), resumed), "running")
    kubelet.exit(worker("suspended"), 0)
    lives.suspended.reaches(State(SUCCEEDED, pods("Succeeded", *resumed), resumed), "succeeded")
    lives.finished.reaches(State(SUCCEEDED, {}, ()), "TTL expired", timeout=ttl + 60)
    return due
