"""The MXJob CRD admits every example and legacy manifest and rejects each rule of
docs/behaviour.md#validation."""

from typing import Any, cast

import pytest

from app.core.model.errors import SpecError
from app.core.validate.validation import validated_spec
from tests.support import yamls
from tests.support.crd_admission import CRD_FILE, admission_errors, rules
from tests.support.crd_cases import INVALID, VALID

# Every rule evaluated by cel-python's interpreter: 0.1 to 0.3 s a job, most of it the size
# rules', 15 s for the cases (`make fast` leaves them to `make test`, which also checks each on
# the real API server: tests/apiserver/test_crd_admission.py).
CEL = pytest.mark.slow


@CEL
@pytest.mark.parametrize("doc", VALID)
def test_admitted(doc: dict[str, Any]) -> None:
    assert admission_errors(doc) == []


@pytest.mark.parametrize("doc", VALID)
def test_hook_accepts_what_the_crd_admits(doc: dict[str, Any]) -> None:
    validated_spec(doc["metadata"]["name"], doc["spec"])


@CEL
@pytest.mark.parametrize(("doc", "expected", "hook"), INVALID)
def test_rejected(doc: dict[str, Any], expected: list[str], hook: bool) -> None:
    assert admission_errors(doc) == sorted(expected)


@pytest.mark.parametrize(("doc", "expected", "hook"), [p for p in INVALID if p.values[2]])
def test_hook_rejects_what_the_crd_rejects(
    doc: dict[str, Any], expected: list[str], hook: bool
) -> None:
    with pytest.raises(SpecError):
        validated_spec(doc["metadata"]["name"], doc["spec"])


def test_every_cel_rule_is_exercised() -> None:
    messages = {" ".join(rule["message"].split()) for rule in rules()}
    rejected = {e.split(": ", 1)[1] for p in INVALID for e in cast(list[str], p.values[1])}
    assert messages - rejected == set()


def test_rule_reasons_keep_their_messages() -> None:
    # The API server reports FieldValueDuplicate without the rule's message.
    reasons = {rule.get("reason", "FieldValueInvalid") for rule in rules()}
    assert reasons <= {"FieldValueInvalid", "FieldValueRequired", "FieldValueForbidden"}


def test_resource_names_and_columns() -> None:
    crd = yamls.load(CRD_FILE.read_text())
    (version,) = crd["spec"]["versions"]
    assert crd["spec"]["names"] == {
        "kind": "MXJob",
        "listKind": "MXJobList",
        "plural": "mxjobs",
        "singular": "mxjob",
        "shortNames": ["mxj"],
        "categories": ["kubeflow"],
    }
    assert (crd["spec"]["scope"], version["subresources"]) == ("Namespaced", {"status": {}})
    assert [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]] == [
        ("State", ".status.conditions[-1:].type"),
        ("Workers", ".status.replicaStatuses.Worker.active"),
        ("Age", ".metadata.creationTimestamp"),
        ("Mode", ".spec.jobMode"),
    ]
