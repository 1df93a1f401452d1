"""The `training.kubeflow.org/replica-services` annotation through the real Metacontroller and
the hook: `scheduler` gives a job the Scheduler's Service alone; set on a running job it
removes the other Services and leaves the pods as they are, and `all` brings them back; a
value of neither is an invalid spec that keeps the children as they are."""

from typing import Any

from localcluster.kubelet import Kubelet
from localcluster.rest import Rest
from localcluster.waiting import wait_for

# The scenario vocabulary every real-stack job test shares (one import list, as in
# test_metacontroller_ha.py).
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
from tests.support.scenario import run_job as run_default

from .conftest import RealStack

ANNOTATION = "training.kubeflow.org/replica-services"
DIST = "mnist-dist-cpu"
SCHEDULER_ONLY = (f"{DIST}-scheduler-0",)


def dist_cpu(services: str | None = None) -> dict[str, Any]:
    """examples/dist-cpu.yaml (a Scheduler, 2 Servers, 2 Workers), annotated with `services`."""
    job = manifest("examples/dist-cpu.yaml")
    if services is not None:
        job["metadata"].setdefault("annotations", {})[ANNOTATION] = services
    return job


def pod_uids(job: Job) -> dict[str, str]:
    """Each pod of the job by name, with its uid: a pod made anew has another."""
    return {
        key: child["metadata"]["uid"]
        for key, child in job.children().items()
        if key.startswith("Pod/")
    }


def test_a_scheduler_only_job_runs_with_one_service(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    job = apply_job(real_stack.apiserver, rest, namespace, dist_cpu("scheduler"))
    names = tuple(expected_children(dist_cpu()))
    job.reaches(State(CREATED, pods("Pending", *names), SCHEDULER_ONLY), "created")

    Kubelet(rest, namespace).run(*names)

    job.reaches(State(RUNNING, pods("Running", *names), SCHEDULER_ONLY), "running")
    assert sorted(k for k in job.children() if not k.startswith("Pod/")) == [
        f"ConfigMap/{DIST}-mx-config",
        f"Service/{DIST}-scheduler-0",
    ]


def test_switching_a_running_job_keeps_its_pods(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    job = run_default(real_stack.apiserver, rest, namespace, dist_cpu())
    names = tuple(expected_children(dist_cpu()))
    running = pods("Running", *names)
    before = pod_uids(job)
    assert len(before) == 5

    job.apply(dist_cpu("scheduler"))
    job.reaches(State(RUNNING, running, SCHEDULER_ONLY), "the other Services removed")
    assert pod_uids(job) == before

    job.apply(dist_cpu("all"))
    job.reaches(State(RUNNING, running, names), "every Service back")
    assert pod_uids(job) == before

    job.apply(dist_cpu("none"))
    wait_for(lambda: job.condition("InvalidSpec"), "InvalidSpec", until=lambda c: c is not None)
    invalid = job.condition("InvalidSpec")
    assert invalid is not None
    assert invalid["status"] == "True"
    assert (
        f"metadata.annotations['{ANNOTATION}']: must be 'all' or 'scheduler'"
        in (invalid["message"])
    )
    assert job.state() == State(RUNNING | {"InvalidSpec": "MXJobInvalidSpec"}, running, names)
    assert pod_uids(job) == before
