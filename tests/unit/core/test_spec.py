"""The typed MXJob spec (app/core/model/spec.py): replica types and their spellings, the defaults
a spec gets, what it refuses, and the counts and order it answers."""

from typing import Any

import pydantic
import pytest

from app.core.model.spec import (
    BY_LOWERED,
    ORDER,
    TRAIN_TYPES,
    TUNE_TYPES,
    CleanPodPolicy,
    MXJobSpec,
    ReplicaType,
    RestartPolicy,
    RunPolicy,
    SuccessPolicy,
)
from tests.support.jobs import replica, train_spec

T = ReplicaType
TEMPLATE = {"spec": {"containers": [{"name": "mxnet", "image": "x"}]}}


def test_replica_types_spellings_and_order() -> None:
    assert [(t.value, t.lowered, ORDER[t]) for t in ReplicaType] == [
        ("Scheduler", "scheduler", 0),
        ("Server", "server", 1),
        ("Worker", "worker", 2),
        ("TunerTracker", "tunertracker", 3),
        ("TunerServer", "tunerserver", 4),
        ("Tuner", "tuner", 5),
    ]
    assert (TRAIN_TYPES, TUNE_TYPES) == (
        (T.SCHEDULER, T.SERVER, T.WORKER),
        (T.TUNER_TRACKER, T.TUNER_SERVER, T.TUNER),
    )
    assert {t.lowered: t for t in ReplicaType} == BY_LOWERED
    assert len(BY_LOWERED) == 6


def test_a_minimal_spec_gets_the_defaults() -> None:
    spec = MXJobSpec.model_validate({"mxReplicaSpecs": {"Worker": {"template": TEMPLATE}}})
    assert spec.model_dump() == {
        "jobMode": "MXTrain",
        "mxReplicaSpecs": {
            T.WORKER: {
                "replicas": 1,
                "restartPolicy": RestartPolicy.NEVER,
                "template": TEMPLATE,
                "label": None,
            }
        },
        "runPolicy": {
            "cleanPodPolicy": CleanPodPolicy.RUNNING,
            "ttlSecondsAfterFinished": None,
            "activeDeadlineSeconds": None,
            "backoffLimit": None,
            "suspend": False,
            "schedulingPolicy": None,
        },
        "successPolicy": SuccessPolicy.DEFAULT,
    }


def test_fields_we_do_not_own_are_ignored_and_the_template_kept_whole() -> None:
    template = TEMPLATE | {"metadata": {"labels": {"a": "b"}}, "unknownField": 1}
    raw = {"mxReplicaSpecs": {"Worker": {"template": template, "extra": 1}}, "other": {}}
    spec = MXJobSpec.model_validate(raw)
    assert spec.mxReplicaSpecs[T.WORKER].template == template
    assert "other" not in spec.model_dump()
    with pytest.raises(pydantic.ValidationError):
        spec.jobMode = "MXTune"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        pytest.param({"mxReplicaSpecs": {"Worker": replica(-1)}}, ("mxReplicaSpecs", "Worker",
                     "replicas"), id="negative-replicas"),
        pytest.param({"mxReplicaSpecs": {"Worker": replica() | {"replicas": "2"}}},
                     ("mxReplicaSpecs", "Worker", "replicas"), id="replicas-as-text"),
        pytest.param({"mxReplicaSpecs": {"Chief": replica()}}, ("mxReplicaSpecs", "Chief",
                     "[key]"), id="unknown-replica-type"),
        pytest.param({"mxReplicaSpecs": {"Worker": replica(policy="Sometimes")}},
                     ("mxReplicaSpecs", "Worker", "restartPolicy"), id="unknown-restart-policy"),
        pytest.param({"jobMode": "MXServe", "mxReplicaSpecs": {}}, ("jobMode",),
                     id="unknown-job-mode"),
        pytest.param({"mxReplicaSpecs": {}, "runPolicy": {"suspend": "yes"}},
                     ("runPolicy", "suspend"), id="suspend-as-text"),
        pytest.param({"mxReplicaSpecs": {}, "runPolicy": {"schedulingPolicy": {"minAvailable": 0}}},
                     ("runPolicy", "schedulingPolicy", "minAvailable"), id="min-available-0"),
        pytest.param({"mxReplicaSpecs": {}, "runPolicy": {"backoffLimit": -1}},
                     ("runPolicy", "backoffLimit"), id="negative-backoff-limit"),
        pytest.param({}, ("mxReplicaSpecs",), id="no-replica-specs"),
    ],
)  # fmt: skip
def test_what_the_model_refuses(raw: dict[str, Any], where: tuple[str, ...]) -> None:
    with pytest.raises(pydantic.ValidationError) as err:
        MXJobSpec.model_validate(raw)
    assert [tuple(map(str, e["loc"])) for e in err.value.errors()] == [where]


@pytest.mark.parametrize(
    ("raw", "replicas", "types"),
    [
        pytest.param(train_spec(servers=2, workers=3), {T.SCHEDULER: 1, T.SERVER: 2,
                     T.WORKER: 3, T.TUNER: 0}, [T.SCHEDULER, T.SERVER, T.WORKER], id="train"),
        pytest.param({"mxReplicaSpecs": {"Worker": replica(0), "Scheduler": replica()}},
                     {T.SCHEDULER: 1, T.SERVER: 0, T.WORKER: 0, T.TUNER: 0},
                     [T.SCHEDULER, T.WORKER], id="canonical-order-not-the-specs"),
        pytest.param({"jobMode": "MXTune", "mxReplicaSpecs": {"Tuner": replica(),
                     "TunerServer": replica(2), "TunerTracker": replica()}},
                     {T.SCHEDULER: 0, T.SERVER: 0, T.WORKER: 0, T.TUNER: 1},
                     [T.TUNER_TRACKER, T.TUNER_SERVER, T.TUNER], id="tune"),
    ],
)  # fmt: skip
def test_replicas_and_types(
    raw: dict[str, Any], replicas: dict[ReplicaType, int], types: list[ReplicaType]
) -> None:
    spec = MXJobSpec.model_validate(raw)
    assert {t: spec.replicas(t) for t in replicas} == replicas
    assert spec.types() == types


def test_run_policy_defaults_are_one_shared_value() -> None:
    assert RunPolicy() == RunPolicy.model_validate({})
    assert MXJobSpec.model_validate({"mxReplicaSpecs": {}}).runPolicy == RunPolicy()
