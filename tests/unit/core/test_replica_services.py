"""The `training.kubeflow.org/replica-services` annotation (docs/behaviour.md#replica-services):
which replicas get a headless Service, a bad value refused as an invalid spec, and switching a
running job."""

import copy
from typing import Any

import pytest

from app.core.children import builders
from app.core.model.spec import ReplicaType
from app.core.mxnet.names import ANNOTATION_REPLICA_SERVICES, ReplicaServices
from app.core.validate.validation import validated_spec
from tests.support import jobs as s
from tests.support.hooked import sync

CONFIG_MAPS: dict[str, list[dict[str, Any]]] = {"ConfigMap.v1": []}
ALL = ["mnist-scheduler-0", "mnist-server-0", "mnist-server-1", "mnist-worker-0", "mnist-worker-1"]


def annotated(job: dict[str, Any], value: Any) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["metadata"]["annotations"] = {"team": "a", ANNOTATION_REPLICA_SERVICES: value}
    return job


def train(value: Any = None, **spec: Any) -> dict[str, Any]:
    job = s.mxjob(s.train_spec(**spec))
    return job if value is None else annotated(job, value)


def created(job: dict[str, Any]) -> dict[str, Any]:
    """The answer that creates the job's children."""
    return s.created(s.request(job, others=CONFIG_MAPS))


def running(job: dict[str, Any], previous: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`job` synced with `previous`'s children observed, every pod running."""
    phases = {n: s.pod_status("Running") for n in s.names(s.pods_of(previous))}
    return s.step(job, previous, phases, s.later(60), tuple(CONFIG_MAPS))


def kinds(answer: dict[str, Any]) -> list[str]:
    return [c["kind"] for c in answer["children"]]


@pytest.mark.parametrize(
    ("value", "services"),
    [
        pytest.param(None, ALL, id="absent-every-replica"),
        pytest.param("all", ALL, id="all-every-replica"),
        pytest.param("scheduler", ["mnist-scheduler-0"], id="scheduler-its-own-only"),
    ],
)
def test_which_replicas_get_a_service(value: str | None, services: list[str]) -> None:
    answer = created(train(value))
    assert s.names(s.services_of(answer)) == services
    assert s.names(s.pods_of(answer)) == ALL
    assert kinds(answer) == ["ConfigMap"] + ["Pod"] * 5 + ["Service"] * len(services)


def test_scheduler_only_changes_nothing_but_the_services() -> None:
    default, scheduler = created(train()), created(train("scheduler"))
    assert [c for c in default["children"] if c["kind"] != "Service"] == [
        c for c in scheduler["children"] if c["kind"] != "Service"
    ]
    assert s.services_of(scheduler) == s.services_of(default)[:1]
    assert scheduler["status"] == default["status"]


def test_a_job_without_a_scheduler_gets_no_service() -> None:
    job = annotated(s.mxjob({"mxReplicaSpecs": {"Worker": s.replica(1)}}), "scheduler")
    answer = created(job)
    assert kinds(answer) == ["ConfigMap", "Pod"]


@pytest.mark.parametrize(
    ("services", "rtype", "has"),
    [
        pytest.param(ReplicaServices.ALL, ReplicaType.WORKER, True, id="all-worker"),
        pytest.param(ReplicaServices.SCHEDULER, ReplicaType.SCHEDULER, True, id="sched-sched"),
        pytest.param(ReplicaServices.SCHEDULER, ReplicaType.SERVER, False, id="sched-server"),
        pytest.param(ReplicaServices.SCHEDULER, ReplicaType.WORKER, False, id="sched-worker"),
    ],
)
def test_job_context_has_service(services: ReplicaServices, rtype: ReplicaType, has: bool) -> None:
    spec = validated_spec("mnist", s.train_spec())
    job = builders.job_context("mnist", "ns", spec, services=services)
    assert job.has_service(rtype) is has


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("none", id="unknown-word"),
        pytest.param("Scheduler", id="wrong-case"),
        pytest.param("", id="empty"),
        pytest.param(1, id="not-a-string"),
    ],
)
def test_a_bad_value_fails_a_new_job_naming_the_annotation(value: Any) -> None:
    answer = sync(s.request(train(value), others=CONFIG_MAPS), s.NOW)
    failed = answer["status"]["conditions"][-1]
    assert (failed["type"], failed["reason"]) == ("Failed", "MXJobInvalidSpec")
    assert failed["message"] == (
        "MXJob mnist has an invalid spec: metadata.annotations"
        f"['{ANNOTATION_REPLICA_SERVICES}']: must be 'all' or 'scheduler', got {value!r}."
    )
    assert answer["children"] == []


def test_scheduler_is_refused_for_a_tune_job() -> None:
    spec = {
        "jobMode": "MXTune",
        "mxReplicaSpecs": {"TunerTracker": s.replica(1), "Tuner": s.replica(1)},
    }
    answer = sync(s.request(annotated(s.mxjob(spec), "scheduler")), s.NOW)
    failed = answer["status"]["conditions"][-1]
    assert failed["reason"] == "MXJobInvalidSpec"
    assert "'scheduler' needs an MXTrain job" in failed["message"]
    assert "MXTune job has no Scheduler" in failed["message"]
    assert created(annotated(s.mxjob(spec), "all"))["children"]


def test_switching_a_running_job_changes_its_services_only() -> None:
    req, default = running(train(), created(train()))
    req, scheduler = running(train("scheduler"), default)
    # The request observed every Service: the answer leaves the others out, so Metacontroller
    # deletes them; the pods are asked for as they were.
    assert len(s.services_of(req_as_answer(req))) == 5
    assert s.names(s.services_of(scheduler)) == ["mnist-scheduler-0"]
    assert s.pods_of(scheduler) == s.pods_of(default)
    assert scheduler["status"] == default["status"]

    _, back = running(train("all"), scheduler)
    assert back["children"] == default["children"]
    assert back["status"] == default["status"]


def req_as_answer(req: dict[str, Any]) -> dict[str, Any]:
    """The request's observed children as a list, as `s.services_of` reads an answer."""
    return {"children": [c for kind in req["children"].values() for c in kind.values()]}


def test_a_bad_value_on_a_running_job_keeps_every_child() -> None:
    req, default = running(train(), created(train()))
    req, answer = running(train("none"), default)
    invalid = next(c for c in answer["status"]["conditions"] if c["type"] == "InvalidSpec")
    assert invalid["status"] == "True"
    assert f"['{ANNOTATION_REPLICA_SERVICES}']: must be" in invalid["message"]
    assert sorted(s.names(answer["children"])) == sorted(s.names(req_as_answer(req)["children"]))
    assert len(s.services_of(answer)) == 5


def test_a_finished_job_keeps_only_the_schedulers_service() -> None:
    job = train("scheduler")
    _, answer = running(job, created(job))
    done = {n: s.pod_status("Running") for n in ALL} | {
        "mnist-scheduler-0": s.pod_status("Succeeded", exit_code=0),
        "mnist-worker-0": s.pod_status("Succeeded", exit_code=0),
        "mnist-worker-1": s.pod_status("Succeeded", exit_code=0),
    }
    _, finished = s.step(job, answer, done, s.later(90), tuple(CONFIG_MAPS))
    assert any(c["type"] == "Succeeded" for c in finished["status"]["conditions"])
    assert s.names(s.services_of(finished)) == ["mnist-scheduler-0"]
    assert "mnist-worker-0" in s.names(s.pods_of(finished))


@pytest.mark.parametrize(
    ("value", "pod", "restarts"),
    [
        pytest.param("all", "mnist-worker-1-r1", 1, id="all-the-service-remembers"),
        pytest.param("scheduler", "mnist-worker-1", 0, id="scheduler-nothing-remembers"),
    ],
)
def test_a_worker_whose_every_pod_was_deleted(value: str, pod: str, restarts: int) -> None:
    job = train(value, policy="ExitCode")
    _, answer = running(job, created(job))
    killed = {n: s.pod_status("Running") for n in ALL} | {
        "mnist-worker-1": s.pod_status("Failed", exit_code=137)
    }
    _, answer = s.step(job, answer, killed, s.later(90), tuple(CONFIG_MAPS))
    replaced = killed | {"mnist-worker-1-r1": s.pod_status("Running")}
    _, answer = s.step(job, answer, replaced, s.later(120), tuple(CONFIG_MAPS))
    assert "mnist-worker-1-r1" in s.names(s.pods_of(answer))
    # Someone deletes worker 1's pod: the next sync sees none of its pods.
    gone = answer | {
        "children": [c for c in answer["children"] if c["metadata"]["name"] != "mnist-worker-1-r1"]
    }
    _, answer = s.step(job, gone, replaced, s.later(150), tuple(CONFIG_MAPS))
    workers = [n for n in s.names(s.pods_of(answer)) if n.startswith("mnist-worker-1")]
    assert workers == [pod]
    assert answer["status"]["restartCount"] == restarts
