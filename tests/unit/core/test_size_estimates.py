"""The size rule's figures: its messages, the per-replica estimates against measured replicas,
and the remembered estimates and layout copies, bounded."""

import json

import pytest

from app.core.model import kinds
from app.core.model.errors import SpecError
from app.core.model.spec import MXJobSpec
from app.core.mxnet.layout import Layout
from app.core.validate import sizerule, validation
from app.core.validate.costs import MiB
from app.core.validate.validation import normalise
from tests.support import jobs as s
from tests.support.golden_cases import released_0_1_0
from tests.support.hooked import sync
from tests.support.size_shapes import (
    last_condition,
    template,
    train,
)


def test_parse_cost_message_names_the_rule_and_the_figures() -> None:
    make = train(shape="730-env-entries")
    with pytest.raises(SpecError) as refused:
        validation.validated_spec("a", make(189))
    cost = sizerule.sync_request_parse_cost("a", MXJobSpec.model_validate(normalise(make(189))))
    assert str(refused.value) == (
        "spec.mxReplicaSpecs: the size rule: with every pod running, a sync request of this "
        f"job would take about {cost // MiB} MiB to parse, more than 420 MiB; use fewer "
        "replicas or pod templates of fewer values (list entries, map keys)"
    )


def test_size_message_names_the_rule_and_the_figures() -> None:
    with pytest.raises(SpecError) as refused:
        validation.validated_spec("a", train(env_bytes=20_000)(1006))
    assert str(refused.value) == (
        "spec.mxReplicaSpecs: the size rule: with every pod running, a sync request of this "
        f"job would carry about {sizerule.sync_request_bytes('a', _spec(1006)) // 2**20} MiB, "
        "more than 48 MiB; use fewer replicas or smaller pod templates"
    )
    assert json.dumps(str(refused.value))


def _spec(n: int) -> MXJobSpec:
    return MXJobSpec.model_validate(train(env_bytes=20_000)(n))


# A running Worker's pod and Service of each template shape, as the real Metacontroller sends
# them under its default apply strategy (the larger of the two), measured by
# tests/apiserver/test_size_estimate.py on 2026-11-23: (bytes, parse_cost of
# app/core/validate/costs.py), the smallest shape's bytes not recorded. That test holds the
# estimates to the live figures, this one to the recorded ones without a server. Without the
# last-applied copies (server-side apply) each is smaller, 61,942 the smallest parse cost.
MEASURED = {
    "smallest": (None, 89_513),
    "730-env-entries": (96_565, 2_099_933),
    "20-kb-value": (47_622, 132_262),
    "400-ports": (165_905, 3_076_713),
    "400-volume-mounts": (65_402, 1_204_490),
    "1000-args": (27_317, 637_925),
    "400-labels": (22_705, 466_313),
    "three-sidecars": (12_614, 167_150),
}
MEASURED_BYTES = [(shape, size) for shape, (size, _) in MEASURED.items() if size is not None]
MEASURED_PARSE_COST = [(shape, cost) for shape, (_, cost) in MEASURED.items()]


@pytest.mark.parametrize(("shape", "measured"), MEASURED_BYTES)
def test_the_estimate_bounds_the_measured_replica(shape: str, measured: int) -> None:
    assert sizerule.replica_sync_bytes("a", template(shape)) >= measured


@pytest.mark.parametrize(("shape", "measured"), MEASURED_PARSE_COST)
def test_the_parse_cost_estimate_bounds_the_measured_replica(shape: str, measured: int) -> None:
    assert sizerule.replica_parse_cost("a", template(shape)) >= measured


def test_remembered_estimates_are_the_estimates_and_stay_bounded() -> None:
    """A job is validated at every sync: its templates' estimates are remembered, keyed by
    their JSON and the name's length, so a changed template or name is estimated anew, a
    template orjson cannot write is estimated every time, and the memory stays bounded."""
    sizerule._ESTIMATES.clear()
    shapes = [template(shape) for shape in ("smallest", "730-env-entries", "three-sidecars")]
    for shaped in shapes:
        for name in ("a", "a" * 32):
            direct = sizerule.replica_sync_bytes(name, shaped)
            assert sizerule._replica_estimates(name, shaped) == (
                direct,
                sizerule.replica_parse_cost(name, shaped),
            )
    assert len(sizerule._ESTIMATES) == 6
    huge = template("smallest")
    huge["metadata"] = {"annotations": {"n": "1"}, "x": 2**70}
    assert sizerule._replica_estimates("a", huge)[0] == sizerule.replica_sync_bytes("a", huge)
    assert len(sizerule._ESTIMATES) == 6
    for i in range(sizerule._ESTIMATES_MOST * 2):
        varied = template("smallest")
        varied["metadata"] = {"labels": {"i": str(i)}}
        sizerule._replica_estimates("a", varied)
    assert len(sizerule._ESTIMATES) <= sizerule._ESTIMATES_MOST


@pytest.mark.slow  # three syncs of a 3,000-replica job: a second or more
def test_a_released_job_over_its_layouts_bound_is_kept_and_can_be_suspended() -> None:
    """A job started by release 0.1.0 with more replicas than that layout's bound: refused as
    a bad edit (its children kept); suspended, it is judged in the layout its pods will be
    made in when it resumes, so the suspension takes effect, and it resumes in the shipped
    layout."""
    job = s.mxjob(train()(3000), "a")
    maps = (kinds.CONFIG_MAP_TYPE,)
    released = released_0_1_0(s.created(s.request(job, others={kinds.CONFIG_MAP_TYPE: []})))
    running = {p["metadata"]["name"]: s.pod_status("Running") for p in s.pods_of(released)}
    request, answer = s.step(job, released, running, s.later(30), maps)
    assert last_condition(answer) == ("InvalidSpec", "True", "MXJobInvalidSpec")
    assert len(answer["children"]) == 6001

    job["spec"]["runPolicy"] = {"suspend": True}
    request["parent"]["spec"] = job["spec"]
    suspended = sync(request, s.later(60))
    assert last_condition(suspended) == ("Suspended", "True", "MXJobSuspended")
    assert suspended["children"] == []

    job["spec"]["runPolicy"] = {"suspend": False}
    resumed = sync(
        s.request(job | {"status": suspended["status"]}, others={kinds.CONFIG_MAP_TYPE: []}),
        s.later(90),
    )
    assert "MXJobInvalidSpec" not in json.dumps(resumed["status"])
    first_pod = s.pods_of(resumed)[0]
    assert "envFrom" in first_pod["spec"]["containers"][0]


def test_remembered_layout_copies_are_the_walked_ones_and_stay_bounded() -> None:
    sizerule._LAYOUTS.clear()
    for n in (3, 500):
        for layout in (Layout.INLINE, Layout.CONFIG_MAP_KEYS):
            typed = MXJobSpec.model_validate(normalise(train()(n)))
            remembered = sizerule._layout_copies("a", typed, layout)
            assert remembered == sizerule._layout_walked("a", typed, layout)
            assert sizerule._layout_copies("a", typed, layout) is remembered
    assert len(sizerule._LAYOUTS) == 4
    long_label = s.train_spec(0, 1)
    long_label["mxReplicaSpecs"]["Worker"]["label"] = "x" * (sizerule._ESTIMATES_KEY_MOST + 1)
    typed = MXJobSpec.model_validate(normalise(long_label))
    sizerule._layout_copies("a", typed, Layout.INLINE)
    assert len(sizerule._LAYOUTS) == 4
    for n in range(sizerule._ESTIMATES_MOST * 2):
        typed = MXJobSpec.model_validate(normalise(train()(n + 3)))
        sizerule._layout_copies("a", typed, Layout.INLINE)
    assert len(sizerule._LAYOUTS) <= sizerule._ESTIMATES_MOST
