"""The CRD admits the successPolicy values mxnet-operator v1beta1 had and refuses any other, as
the hook does (docs/behaviour.md#status)."""

from typing import Any

import pytest

from app.core.model.errors import SpecError
from app.core.validate.validation import validated_spec
from tests.support.crd_admission import admission_errors
from tests.support.crd_jobs import UNCHECKED, job


def with_policy(value: Any) -> dict[str, Any]:
    return job("dist-cpu.yaml", {"spec": {"successPolicy": value}})


@pytest.mark.parametrize("value", ["", "AllWorkers"], ids=repr)
def test_mxnet_operators_values_are_admitted(value: str) -> None:
    doc = with_policy(value)
    assert admission_errors(doc) == []
    validated_spec(doc["metadata"]["name"], doc["spec"])


@pytest.mark.parametrize("value", ["allWorkers", "Workers"], ids=repr)
def test_any_other_value_is_refused_by_both(value: str) -> None:
    doc = with_policy(value)
    assert admission_errors(doc) == [
        UNCHECKED,
        f"spec.successPolicy: {value!r} is not one of ['', 'AllWorkers']",
    ]
    with pytest.raises(SpecError):
        validated_spec(doc["metadata"]["name"], doc["spec"])
