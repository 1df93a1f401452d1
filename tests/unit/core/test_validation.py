"""The contract's validation (docs/behaviour.md#validation): every rule, with the message that
names the field. The refused train specs are a table in
tests/support/invalid_train_specs.py."""

import copy
from typing import Any

import pytest

from app.core.model.errors import SpecError
from app.core.validate.validation import validated_spec
from tests.support.invalid_train_specs import INVALID_TRAIN
from tests.support.jobs import replica, train_spec
from tests.support.spec_edits import Edit, dropping, setting, tune_spec


@pytest.mark.parametrize(("name", "edit", "problem"), INVALID_TRAIN)
def test_invalid_train_spec(name: str, edit: Edit | None, problem: str) -> None:
    spec = copy.deepcopy(train_spec())
    if edit:
        edit(spec)
    with pytest.raises(SpecError) as err:
        validated_spec(name, spec)
    assert any(p.startswith(problem) for p in err.value.problems), err.value.problems


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        pytest.param(
            dropping("mxReplicaSpecs.TunerTracker"),
            "spec.mxReplicaSpecs.TunerTracker.replicas: an MXTune job needs exactly one TunerTracker",
            id="no-tracker",
        ),
        pytest.param(
            setting("mxReplicaSpecs.Tuner.replicas", 2),
            "spec.mxReplicaSpecs.Tuner.replicas: an MXTune job needs exactly one Tuner",
            id="two-tuners",
        ),
        pytest.param(
            setting("mxReplicaSpecs.Worker", replica()),
            "spec.mxReplicaSpecs: jobMode MXTune allows only TunerTracker, TunerServer, Tuner, got ['Worker']",
            id="tune-with-worker",
        ),
    ],
)
def test_invalid_tune_spec(edit: Edit, problem: str) -> None:
    spec = tune_spec()
    edit(spec)
    with pytest.raises(SpecError) as err:
        validated_spec("tune", spec)
    assert err.value.problems == [problem]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(train_spec(), id="distributed"),
        pytest.param({"mxReplicaSpecs": {"Worker": replica()}}, id="single-worker"),
        pytest.param(
            {"mxReplicaSpecs": {"Scheduler": replica(), "Worker": replica(4)}}, id="no-servers"
        ),
        pytest.param(tune_spec(), id="tune"),
        pytest.param({"mxReplicaSpecs": {"worker": replica(0)}}, id="zero-replicas"),
    ],
)
def test_valid_specs(spec: dict[str, Any]) -> None:
    assert validated_spec("job", spec).mxReplicaSpecs


def test_longest_valid_name_fits_a_service_name() -> None:
    name = "a" * (63 - len("-scheduler-0"))
    assert validated_spec(name, {"mxReplicaSpecs": {"Scheduler": replica(), "Worker": replica()}})
    with pytest.raises(SpecError):
        validated_spec(
            name + "a", {"mxReplicaSpecs": {"Scheduler": replica(), "Worker": replica()}}
        )
