"""Defaults and normalisation of a raw spec."""

from typing import Any

import pytest

from app.core.model.errors import SpecError
from app.core.model.spec import CleanPodPolicy, MXJobSpec, ReplicaType, RestartPolicy
from app.core.validate.validation import normalise
from tests.support.jobs import replica

TEMPLATE = replica()["template"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            {"mxReplicaSpecs": {"scheduler": {"template": TEMPLATE}}},
            {"runPolicy": {}, "mxReplicaSpecs": {"Scheduler": {"template": TEMPLATE}}},
            id="lower-case-key",
        ),
        pytest.param(
            {"mxReplicaSpecs": {"TUNERSERVER": {"template": TEMPLATE, "label": "gpu"}}},
            {
                "runPolicy": {},
                "mxReplicaSpecs": {"TunerServer": {"template": TEMPLATE, "label": "gpu"}},
            },
            id="upper-case-tune-key",
        ),
        pytest.param(
            {"cleanPodPolicy": "All", "backoffLimit": 3, "runPolicy": {"backoffLimit": 5}},
            {"runPolicy": {"cleanPodPolicy": "All", "backoffLimit": 5}},
            id="legacy-run-policy-runPolicy-wins",
        ),
        pytest.param(
            {"jobMode": "MXTune", "ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 5},
            {
                "jobMode": "MXTune",
                "runPolicy": {"ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 5},
            },
            id="legacy-timers",
        ),
    ],
)
def test_normalise(raw: dict[str, Any], expected: dict[str, Any]) -> None:
    assert normalise(raw) == expected


@pytest.mark.parametrize(
    ("raw", "problems"),
    [
        pytest.param(
            {"mxReplicaSpecs": {"Worker": {}, "worker": {}}},
            ["spec.mxReplicaSpecs.worker: duplicates replica type Worker"],
            id="same-type-twice",
        ),
        pytest.param(
            {"mxReplicaSpecs": {"Chief": {}}},
            [
                "spec.mxReplicaSpecs.Chief: unknown replica type (one of Scheduler, Server, "
                "Worker, TunerTracker, TunerServer, Tuner)"
            ],
            id="unknown-type",
        ),
        pytest.param([], ["spec: must be an object"], id="spec-not-an-object"),
    ],
)
def test_normalise_rejects(raw: Any, problems: list[str]) -> None:
    with pytest.raises(SpecError) as err:
        normalise(raw)
    assert err.value.problems == problems


def test_defaults_of_a_minimal_spec() -> None:
    spec = MXJobSpec.model_validate(
        normalise({"mxReplicaSpecs": {"Worker": {"template": TEMPLATE}}})
    )
    worker = spec.mxReplicaSpecs[ReplicaType.WORKER]
    assert (spec.jobMode, worker.replicas, worker.restartPolicy) == (
        "MXTrain",
        1,
        RestartPolicy.NEVER,
    )
    assert spec.runPolicy.cleanPodPolicy is CleanPodPolicy.RUNNING
    assert spec.runPolicy.suspend is False
    assert (spec.runPolicy.backoffLimit, spec.runPolicy.activeDeadlineSeconds) == (None, None)
