"""The golden cases of the policies and job kinds: restarts and the backoff limit, deadlines,
suspension, the TTL, tune and BytePS jobs, legacy v1 specs, gang scheduling and the replica
Services annotation."""

import copy
from typing import Any

from tests.support import golden_life as g
from tests.support import jobs as s


@g.case
def worker_killed_restarting() -> g.Case:
    return g.life({}, g.every(g.RUNNING), g.WORKER_1_KILLED, parent=g.with_policy({}))


@g.case
def worker_replacement_running() -> g.Case:
    replaced = g.WORKER_1_KILLED | {"mnist-worker-1-r1": g.RUNNING}
    return g.life(
        {}, g.every(g.RUNNING), g.WORKER_1_KILLED, replaced, replaced, parent=g.with_policy({})
    )


@g.case
def backoff_limit_exceeded() -> g.Case:
    again = g.WORKER_1_KILLED | {"mnist-worker-1-r1": g.KILLED}
    return g.life(
        {}, g.every(g.RUNNING), g.WORKER_1_KILLED, again, parent=g.with_policy({"backoffLimit": 1})
    )


@g.case
def deadline_counting_down() -> g.Case:
    return g.life({}, g.every(g.RUNNING), parent=g.with_policy({"activeDeadlineSeconds": 100}))


@g.case
def deadline_exceeded() -> g.Case:
    job = g.with_policy({"activeDeadlineSeconds": 100})
    _req, answer, _ = g.replay(job, {}, g.every(g.RUNNING), g.every(g.RUNNING))
    return s.step(job, answer, g.every(g.RUNNING), s.later(100), g.CONFIG_MAPS)[0], s.later(100)


@g.case
def deadline_exceeded_cleanup() -> g.Case:
    job = g.with_policy({"activeDeadlineSeconds": 100, "cleanPodPolicy": "None"})
    _, answer, _ = g.replay(job, {}, g.every(g.RUNNING), g.every(g.RUNNING))
    _, answer = s.step(job, answer, g.every(g.RUNNING), s.later(100), g.CONFIG_MAPS)
    return s.step(job, answer, g.every(g.RUNNING), s.later(101), g.CONFIG_MAPS)[0], s.later(101)


def _suspended() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    job = g.with_policy({})
    _, answer, _ = g.replay(job, {}, g.every(g.RUNNING))
    stopped = copy.deepcopy(job)
    stopped["spec"]["runPolicy"]["suspend"] = True
    return job, stopped, s.step(stopped, answer, g.every(g.RUNNING), s.later(90), g.CONFIG_MAPS)[1]


@g.case
def suspended() -> g.Case:
    job = g.with_policy({})
    _, answer, _ = g.replay(job, {}, g.every(g.RUNNING))
    stopped = copy.deepcopy(job)
    stopped["spec"]["runPolicy"]["suspend"] = True
    return s.step(stopped, answer, g.every(g.RUNNING), s.later(90), g.CONFIG_MAPS)[0], s.later(90)


@g.case
def resumed() -> g.Case:
    job, _, answer = _suspended()
    return s.request(job | {"status": answer["status"]}, others=g.none_of(g.CONFIG_MAPS)), s.later(
        600
    )


def _succeeded(run_policy: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    job = g.with_policy(run_policy)
    finished = g.every(g.RUNNING) | g.every(g.DONE, "scheduler-0", "worker-0", "worker-1")
    _, answer, _ = g.replay(job, {}, g.every(g.RUNNING), finished)
    return job, answer


@g.case
def ttl_waiting() -> g.Case:
    job, answer = _succeeded({"ttlSecondsAfterFinished": 600, "cleanPodPolicy": "None"})
    finished = g.every(g.RUNNING) | g.every(g.DONE, "scheduler-0", "worker-0", "worker-1")
    return s.step(job, answer, finished, s.later(120), g.CONFIG_MAPS)[0], s.later(120)


@g.case
def ttl_expired() -> g.Case:
    job, answer = _succeeded({"ttlSecondsAfterFinished": 600, "cleanPodPolicy": "None"})
    finished = g.every(g.RUNNING) | g.every(g.DONE, "scheduler-0", "worker-0", "worker-1")
    return s.step(job, answer, finished, s.later(90 + 600), g.CONFIG_MAPS)[0], s.later(90 + 600)


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


@g.case
def tune_job_running() -> g.Case:
    running = {f"auto-tuning-{p}": g.RUNNING for p in TUNE}
    return g.life({}, running, parent=_tune())


@g.case
def tune_job_succeeded() -> g.Case:
    running = {f"auto-tuning-{p}": g.RUNNING for p in TUNE}
    return g.life({}, running, running | {"auto-tuning-tuner-0": g.DONE}, parent=_tune())


@g.case
def byteps_new_job() -> g.Case:
    spec = s.train_spec(servers=1, workers=2)
    for rtype, replica in spec["mxReplicaSpecs"].items():
        mxnet = replica["template"]["spec"]["containers"][0]
        mxnet["image"] = "bytepsimage/mxnet"
        mxnet["command"] = ["bpslaunch"]
        if rtype == "Worker":
            mxnet["args"] = ["python3", "/usr/local/byteps/example/mxnet/train_imagenet_byteps.py"]
            mxnet["resources"] = {"limits": {"nvidia.com/gpu": 8}}
    return g.life(parent=s.mxjob(spec, "byteps-mxnet-job"))


@g.case
def single_worker_succeeded() -> g.Case:
    job = s.mxjob({"mxReplicaSpecs": {"Worker": s.replica(1)}}, "mnist")
    return g.life({}, {"mnist-worker-0": g.RUNNING}, {"mnist-worker-0": g.DONE}, parent=job)


@g.case
def legacy_v1_new_job() -> g.Case:
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
    return g.life(parent=s.mxjob(spec, "mxnet-job"))


def _gang() -> dict[str, Any]:
    return g.with_policy(
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


@g.case
def volcano_new_job() -> g.Case:
    return g.life(parent=_gang(), child_types=(VOLCANO, *g.CONFIG_MAPS))


@g.case
def volcano_running() -> g.Case:
    return g.life({}, g.every(g.RUNNING), parent=_gang(), child_types=(VOLCANO, *g.CONFIG_MAPS))


@g.case
def scheduler_plugins_new_job() -> g.Case:
    return g.life(parent=_gang(), child_types=(PLUGINS, *g.CONFIG_MAPS))


REPLICA_SERVICES = "training.kubeflow.org/replica-services"


def _annotated(job: dict[str, Any], value: str) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["metadata"]["annotations"] = {REPLICA_SERVICES: value}
    return job


@g.case
def replica_services_scheduler_running() -> g.Case:
    return g.life({}, g.every(g.RUNNING), parent=_annotated(g.train_job(), "scheduler"))


def _switched(*values: str) -> g.Case:
    """A running job whose replica-services annotation is set to each value in turn, once a
    minute from its third sync on, each answer's children observed by the next sync."""
    req, answer, at = g.replay(g.train_job(), {}, g.every(g.RUNNING))
    for n, value in enumerate(values, start=1):
        at = s.later(60 + 60 * n)
        req, answer = s.step(
            _annotated(g.train_job(), value), answer, g.every(g.RUNNING), at, g.CONFIG_MAPS
        )
    return req, at


@g.case
def replica_services_switched_to_scheduler() -> g.Case:
    return _switched("scheduler")


@g.case
def replica_services_switched_back_to_all() -> g.Case:
    return _switched("scheduler", "all")


@g.case
def replica_services_invalid_value() -> g.Case:
    return _switched("none")


VOLCANO = "PodGroup.scheduling.volcano.sh/v1beta1"
PLUGINS = "PodGroup.scheduling.x-k8s.io/v1alpha1"
