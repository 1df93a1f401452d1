"""The size rule's CEL form in the CRD: generated from the hook's rule, admitting the largest
job the hook admits and refusing beyond, within a known slack."""

from typing import Any

import pytest

from app.core.model.errors import SpecError
from app.core.model.spec import MXJobSpec
from app.core.mxnet import mxconfig
from app.core.validate import sizerule, validation
from tests.support import jobs as s
from tests.support import yamls
from tests.support.cel_size_rule import rule, sync_rule
from tests.support.crd_admission import CRD_FILE, cel_errors
from tests.support.size_shapes import (
    BY_MX_CONFIG,
    LARGEST,
    MakeSpec,
    train,
)

# Each a CEL evaluation of the size rules on a job near their bound by cel-python's interpreter,
# 0.3 to 1.5 s: `make test` runs them, `make fast` leaves them (tests/unit/core/test_size_rule.py
# checks the hook's own rule there).
CEL = pytest.mark.slow
CEL_MESSAGE = "spec.mxReplicaSpecs: the size rule: MX_CONFIG, which lists every replica"
CEL_SYNC_MESSAGE = "spec.mxReplicaSpecs: the size rule: once every pod runs, a sync request"


def test_the_crd_holds_the_generated_cel_rules() -> None:
    crd = yamls.load(CRD_FILE.read_text())
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert {rule(), sync_rule()} <= {r["rule"] for r in root["x-kubernetes-validations"]}


@CEL
@pytest.mark.parametrize(("name", "make", "most"), LARGEST)
def test_cel_admits_the_largest_job_the_hook_admits(name: str, make: MakeSpec, most: int) -> None:
    assert cel_errors(s.mxjob(make(most), name)) == []


@CEL
def test_cel_refuses_a_sync_too_large_even_without_the_templates() -> None:
    """3,200 Workers of four containers, a job named `a`: 3,200 x (9,500 + 3 x 2,100 + 22)
    bytes are more than 48 MiB, whatever the templates hold; MX_CONFIG would fit."""
    spec = train(sidecars=3)(3200)
    errors = cel_errors(s.mxjob(spec, "a"))
    assert [e.split(";")[0] for e in errors] == [
        f"{CEL_SYNC_MESSAGE} of this job would carry more than 48 MiB, even before its pod "
        "templates are counted"
    ]
    with pytest.raises(SpecError, match="the size rule: with every pod running"):
        validation.validated_spec("a", spec)


def _cel_refuses(name: str, spec: dict[str, Any]) -> bool:
    errors = cel_errors(s.mxjob(spec, name))
    return any(e.startswith(CEL_MESSAGE) for e in errors)


# The CEL rule leaves out the labels map and the commas between types: at most this many
# bytes under the hook's count for these jobs.
CEL_SLACK = 120


@CEL
@pytest.mark.parametrize(("name", "make", "most"), BY_MX_CONFIG)
def test_cel_admits_what_the_hook_admits_and_refuses_beyond(
    name: str, make: MakeSpec, most: int
) -> None:
    assert not _cel_refuses(name, make(most))
    beyond = next(
        n
        for n in range(most + 1, most + 20)
        if mxconfig.mx_config_bytes(name, MXJobSpec.model_validate(make(n)))
        > sizerule.MAX_MX_CONFIG + CEL_SLACK
    )
    assert _cel_refuses(name, make(beyond))
