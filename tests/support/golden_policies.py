"""The golden cases of the policies and job kinds: restarts and the backoff limit, deadlines,
suspension, the TTL, tune and BytePS jobs, legacy v1 specs, gang scheduling and the replica
Services annotation."""

import copy
from typing import Any

from tests.support import jobs as s
from tests.support.golden_life import (
    CONFIG_MAPS,
    DONE,
    KILLED,
    RUNNING,
    WORKER_1_KILLED,
    Case,
    case,
    every,
    life,
    none_of,
    replay,
    train_job,
    with_policy,
)


@case
def worker_killed_restarting() -> Case:
    return life({}, every(RUNNING), WORKER_1_KILLED, parent=with_policy({}))


@case
def worker_replacement_running() -> Case:
    replaced = WORKER_1_KILLED | {"mnist-worker-1-r1": RUNNING}
    return life({}, every(RUNNING), WORKER_1_KILLED, replaced, replaced, parent=with_policy({}))


@case
def backoff_limit_exceeded() -> Case:
    again = WORKER_1_KILLED | {"mnist-worker-1-r1": KILLED}
    return life({}, every(RUNNING), WORKER_1_KILLED, again, parent=with_policy({"backoffLimit": 1}))


@case
def deadline_counting_down() -> Case:
    return life({}, every(RUNNING), parent=with_policy({"activeDeadlineSeconds": 100}))


@case
def deadline_exceeded() -> Case:
    job = with_policy({"activeDeadlineSeconds": 100})
    _req, answer, _ = replay(job, {}, every(RUNNING), every(RUNNING))
    return s.step(job, answer, every(RUNNING), s.later(100), CONFIG_MAPS)[0], s.later(100)


@case
def deadline_exceeded_cleanup() -> Case:
    job = with_policy({"activeDeadlineSeconds": 100, "cleanPodPolicy": "None"})
    _, answer, _ = replay(job, {}, every(RUNNING), every(RUNNING))
    _, answer = s.step(job, answer, every(RUNNING), s.later(100), CONFIG_MAPS)
    return s.step(job, answer, every(RUNNING), s.later(101), CONFIG_MAPS)[0], s.later(101)


def _suspended() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    job = with_policy({})
    _, answer, _ = replay(job, {}, every(RUNNING))
    stopped = copy.deepcopy(job)
    stopped["spec"]["runPolicy"]["suspend"] = True
    return job, stopped, s.step(stopped, answer, every(RUNNING), s.later(90), CONFIG_MAPS)[1]


@case
def suspended() -> Case:
    job = with_policy({})
    _, answer, _ = replay(job, {}, every(RUNNING))
    stopped = copy.deepcopy(job)
    stopped["spec"]["runPolicy"]["suspend"] = True
    return s.step(stopped, answer, every(RUNNING), s.later(90), CONFIG_MAPS)[0], s.later(90)


@case
def resumed() -> Case:
    job, _, answer = _suspended()
    return s.request(job | {"status": answer["status"]}, others=none_of(CONFIG_MAPS)), s.later(600)


def _succeeded(run_policy: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    job = with_policy(run_policy)
    finished = every(RUNNING) | every(DONE, "scheduler-0", "worker-0", "worker-1")
    _, answer, _ = replay(job, {}, every(RUNNING), finished)
    return job, answer


@case
def ttl_waiting() -> Case:
    job, answer = _succeeded({"ttlSecondsAfterFinished": 600, "cleanPodPolicy": "None"})
    finished = every(RUNNING) | every(DONE, "scheduler-0", "worker-0", "worker-1")
    return s.step(job, answer, finished, s.later(120), CONFIG_MAPS)[0], s.later(120)


@case
def ttl_expired() -> Case:
    job, answer = _succeeded({"ttlSecondsAfterFinished": 600, "cleanPodPolicy": "None"})
    finished = every(RUNNING) | every(DONE, "scheduler-0", "worker-0", "worker-1")
    return s.step(job, answer, finished, s.later(90 + 600), CONFIG_MAPS)[0], s.later(90 + 600)


def _tune() -> dict[str, Any]:
    tracker = s.replica(1)
    server = s.replica(2) | {"label": "2080ti"}
    tuner = s.replica(1, metadata={"annotations": {"tuner-server-key": "2080ti"}})
    spec = {
        "jobMode": "MXTune",
        "mxReplicaSpecs": {"TunerTracker": tracker, "TunerServer": server, "Tuner": tuner},
    }
    return s.mxjob(spec, "auto-tuning")


TUNE = ("tunertracker-0", "tunerserver-0", "tunerserver-1", "tuner-0")


@case
def tune_job_running() -> Case:
    running = {f"auto-tuning-{p}": RUNNING for p in TUNE}
    return life({}, running, parent=_tune())


@case
def tune_job_succeeded() -> Case:
    running = {f"auto-tuning-{p}": RUNNING for p in TUNE}
    return life({}, running, running | {"auto-tuning-tuner-0": DONE}, parent=_tune())


@case
def byteps_new_job() -> Case:
    spec = s.train_spec(servers=1, workers=2)
    for rtype, replica in spec["mxReplicaSpecs"].items():
        mxnet = replica["template"]["spec"]["containers"][0]
        mxnet["image"] = "bytepsimage/mxnet"
        mxnet["command"] = ["bpslaunch"]
        if rtype == "Worker":
            mxnet["args"] = ["python3", "/usr/local/byteps/example/mxnet/train_imagenet_byteps.py"]
            mxnet["resources"] = {"limits": {"nvidia.com/gpu": 8}}
    return life(parent=s.mxjob(spec, "byteps-mxnet-job"))


@case
def single_worker_succeeded() -> Case:
    job = s.mxjob({"mxReplicaSpecs": {"Worker": s.replica(1)}}, "mnist")
    return life({}, {"mnist-worker-0": RUNNING}, {"mnist-worker-0": DONE}, parent=job)


@case
def legacy_v1_new_job() -> Case:
    spec = {
        "jobMode": "MXTrain",
        "cleanPodPolicy": "All",
        "backoffLimit": 3,
        "mxReplicaSpecs": {
            "scheduler": s.replica(1, "Never"),
            "server": s.replica(1, "Never"),
            "worker": s.replica(1, "Never"),
        },
    }
    return life(parent=s.mxjob(spec, "mxnet-job"))


def _gang() -> dict[str, Any]:
    return with_policy(
        {
            "schedulingPolicy": {
                "minAvailable": 3,
                "queue": "research",
                "priorityClass": "high",
                "minResources": {"cpu": "3", "memory": "6Gi"},
                "scheduleTimeoutSeconds": 120,
            }
        },
        "Never",
    )


@case
def volcano_new_job() -> Case:
    return life(parent=_gang(), child_types=(VOLCANO, *CONFIG_MAPS))


@case
def volcano_running() -> Case:
    return life({}, every(RUNNING), parent=_gang(), child_types=(VOLCANO, *CONFIG_MAPS))


@case
def scheduler_plugins_new_job() -> Case:
    return life(parent=_gang(), child_types=(PLUGINS, *CONFIG_MAPS))


REPLICA_SERVICES = "training.kubeflow.org/replica-services"


def _annotated(job: dict[str, Any], value: str) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["metadata"]["annotations"] = {REPLICA_SERVICES: value}
    return job


@case
def replica_services_scheduler_running() -> Case:
    return life({}, every(RUNNING), parent=_annotated(train_job(), "scheduler"))


def _switched(*values: str) -> Case:
    """A running job whose replica-services annotation is set to each value in turn, once a
    minute from its third sync on, each answer's children observed by the next sync."""
    req, answer, at = replay(train_job(), {}, every(RUNNING))
    for n, value in enumerate(values, start=1):
        at = s.later(60 + 60 * n)
        req, answer = s.step(
            _annotated(train_job(), value), answer, every(RUNNING), at, CONFIG_MAPS
        )
    return req, at


@case
def replica_services_switched_to_scheduler() -> Case:
    return _switched("scheduler")


@case
def replica_services_switched_back_to_all() -> Case:
    return _switched("scheduler", "all")


@case
def replica_services_invalid_value() -> Case:
    return _switched("none")


VOLCANO = "PodGroup.scheduling.volcano.sh/v1beta1"
PLUGINS = "PodGroup.scheduling.x-k8s.io/v1alpha1"
