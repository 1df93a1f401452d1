"""The size rule (app/core/validate/sizerule.py): MX_CONFIG fits a process's environment, a sync
fits the body limit and the parse budget. The CRD's CEL form: test_size_rule_cel.py; the size
estimates and messages: test_size_estimates.py."""

import subprocess
from typing import Any

import pytest

from app.core.children import builders
from app.core.model import kinds
from app.core.model.errors import SpecError
from app.core.model.spec import MXJobSpec
from app.core.mxnet import mxconfig
from app.core.mxnet.layout import Layout
from app.core.validate import costs, sizerule, validation
from app.core.validate.costs import MiB
from app.core.validate.validation import normalise
from app.service.settings import Settings
from tests.support import jobs as s
from tests.support.hooked import sync
from tests.support.size_shapes import (
    BY_BYTES,
    BY_MX_CONFIG,
    BY_PARSE_COST,
    INLINE_LARGEST,
    LARGEST,
    RELEASE_0_1_0_LARGEST,
    MakeSpec,
    last_condition,
    train,
    workers,
)


def admitted(name: str, spec: dict[str, Any], layout: Layout = Layout.CONFIG_MAP) -> bool:
    try:
        validation.validated_spec(name, spec, layout)
    except SpecError:
        return False
    return True


def largest(name: str, make: MakeSpec, layout: Layout = Layout.CONFIG_MAP) -> int:
    """The most replicas validation admits for this name and shape in `layout`."""
    low, high = 3, sizerule.MAX_REPLICAS + 1
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if admitted(name, make(middle), layout) else (low, middle)
    return low


REFUSALS = {
    "MX_CONFIG would be": BY_MX_CONFIG,
    "would carry about": BY_BYTES,
    "to parse, more than": BY_PARSE_COST,
}


@pytest.mark.parametrize(
    ("name", "make", "most", "refusal"),
    [
        pytest.param(*p.values, refusal, id=p.id)
        for refusal, shapes in REFUSALS.items()
        for p in shapes
    ],
)
def test_the_largest_admitted_job(name: str, make: MakeSpec, most: int, refusal: str) -> None:
    """The most replicas admitted, and the part of the rule that refuses one more."""
    assert largest(name, make) == most
    with pytest.raises(SpecError, match=f"the size rule: .*{refusal}"):
        validation.validated_spec(name, make(most + 1))


@pytest.mark.parametrize(("name", "make", "most"), LARGEST)
def test_every_admitted_sync_is_well_within_the_parse_budget(
    name: str, make: MakeSpec, most: int
) -> None:
    """The estimate of the largest admitted job's sync request, bytes and parse cost: both
    within their bounds, the parse cost an eighth under the hook's parse budget."""
    spec = MXJobSpec.model_validate(normalise(make(most)))
    cost = sizerule.sync_request_parse_cost(name, spec)
    print(
        f"\n{name}/{most}: request {sizerule.sync_request_bytes(name, spec) / MiB:.1f} MiB, "
        f"parse cost {cost / MiB:.0f} MiB"
    )
    assert sizerule.sync_request_bytes(name, spec) <= sizerule.MAX_SYNC_BYTES
    assert cost <= sizerule.MAX_SYNC_PARSE_COST


INLINE_HINT = "the CompositeController declares no ConfigMap children"


@pytest.mark.parametrize(
    ("layout", "name", "make", "most"),
    [pytest.param(Layout.INLINE, *p.values, id=f"inline-{p.id}") for p in INLINE_LARGEST]
    + [
        pytest.param(Layout.CONFIG_MAP_KEYS, *p.values, id=f"release-0.1.0-{p.id}")
        for p in RELEASE_0_1_0_LARGEST
    ],
)
def test_the_largest_admitted_job_of_each_layout(
    layout: Layout, name: str, make: MakeSpec, most: int
) -> None:
    """The most replicas admitted in the layouts other than the shipped one, each an eighth
    under the parse budget, and what refuses one more: inline, the parse cost, with what to
    change."""
    assert largest(name, make, layout) == most
    spec = MXJobSpec.model_validate(normalise(make(most)))
    cost = sizerule.sync_request_parse_cost(name, spec, None, layout)
    size = sizerule.sync_request_bytes(name, spec, None, layout)
    print(
        f"\n{layout.value} {name}/{most}: request {size / MiB:.1f} MiB, parse cost {cost / MiB:.0f} MiB"
    )
    assert size <= sizerule.MAX_SYNC_BYTES
    assert cost <= sizerule.MAX_SYNC_PARSE_COST
    with pytest.raises(SpecError, match="the size rule: ") as refused:
        validation.validated_spec(name, make(most + 1), layout)
    assert (INLINE_HINT in str(refused.value)) is (layout is Layout.INLINE)
    # The shipped layout admits at least as much (and the CRD's CEL bound is below it).
    assert most <= largest(name, make)


def test_1200_replicas_are_refused_inline_and_admitted_with_configmaps() -> None:
    """1 Scheduler and 1,199 Workers named with 32 letters: estimated at 227 MiB of request
    once every pod exists inline (the hook's body limit is 64 MiB), well within the bounds
    with ConfigMaps."""
    name, spec = "a" * 32, workers(1200)
    validation.validated_spec(name, spec)
    with pytest.raises(SpecError) as refused:
        validation.validated_spec(name, spec, Layout.INLINE)
    typed = MXJobSpec.model_validate(normalise(spec))
    estimate = sizerule.sync_request_bytes(name, typed, None, Layout.INLINE)
    assert estimate // MiB == 227
    assert str(refused.value) == (
        "spec.mxReplicaSpecs: the size rule: with every pod running, a sync request of this "
        f"job would carry about {estimate // MiB} MiB, more than 48 MiB; use fewer replicas or "
        "smaller pod templates (every container carries the whole MX_CONFIG while the "
        "CompositeController declares no ConfigMap children or a pod of the job was made under "
        "one that did not: declare them, as metacontroller/compositecontroller.yaml does, and "
        "suspend and resume a running job, and its pods stay small)"
    )


def test_the_layout_is_the_one_the_request_implies() -> None:
    """A new job is refused for good under a CompositeController without ConfigMaps and
    created under one with them; a running job whose pods carry MX_CONFIG whole is judged
    inline even once ConfigMaps are declared, and refused as a bad edit: its children stay."""
    job = s.mxjob(workers(1200), "a" * 32)
    inline = s.created(s.request(job))
    assert (last_condition(inline), inline["children"]) == (
        ("Failed", "True", "MXJobInvalidSpec"),
        [],
    )
    assert INLINE_HINT in inline["status"]["conditions"][-1]["message"]
    with_maps = s.created(s.request(job, others={kinds.CONFIG_MAP_TYPE: []}))
    assert last_condition(with_maps) == ("Created", "True", "MXJobCreated")

    small = s.mxjob(workers(3), "a" * 32)
    first = s.created(s.request(small))
    running = {p["metadata"]["name"]: s.pod_status("Running") for p in s.pods_of(first)}
    request = s.step(small, first, running, s.later(30))[0]
    request["children"][kinds.CONFIG_MAP_TYPE] = {}
    request["parent"]["spec"] = workers(1200)
    answer = sync(request, s.later(60))
    assert last_condition(answer) == ("InvalidSpec", "True", "MXJobInvalidSpec")
    assert "Failed" not in {c["type"] for c in answer["status"]["conditions"]}
    assert INLINE_HINT in answer["status"]["conditions"][-1]["message"]
    kept = {(c["kind"], c["metadata"]["name"]) for c in answer["children"]}
    observed = {
        (kind.split(".")[0], c["metadata"]["name"])
        for kind, group in request["children"].items()
        for c in group.values()
    }
    assert kept == observed


def test_the_size_rule_keeps_an_eighth_of_the_hooks_parse_budget() -> None:
    assert vars(sizerule)["PARSE_BUDGET"] is costs.PARSE_BUDGET
    assert sizerule.MAX_SYNC_PARSE_COST == costs.PARSE_BUDGET * 7 // 8


# The largest jobs admitted before the size rule bounded the parse cost, whose sync
# requests as Metacontroller sends them measured over the parse budget then, 640 MiB
# (tests/apiserver/test_worst_case.py, dynamic-apply): refused by the hook with 413 on every
# sync. Each is now refused by validation.
ADMITTED_BEFORE = [
    pytest.param(train(shape="730-env-entries"), 480, 977, id="730-env-entries"),
    pytest.param(train(shape="400-ports"), 291, 863, id="400-ports"),
    pytest.param(train(shape="400-volume-mounts"), 653, 769, id="400-volume-mounts"),
]


@pytest.mark.parametrize(("make", "replicas", "measured_mib"), ADMITTED_BEFORE)
def test_a_job_whose_sync_the_hook_would_refuse_is_refused(
    make: MakeSpec, replicas: int, measured_mib: int
) -> None:
    spec = MXJobSpec.model_validate(normalise(make(replicas)))
    assert sizerule.sync_request_bytes("a", spec) <= sizerule.MAX_SYNC_BYTES
    assert sizerule.sync_request_parse_cost("a", spec) >= measured_mib * MiB
    with pytest.raises(SpecError, match=r"the size rule: .* to parse, more than 420 MiB"):
        validation.validated_spec("a", make(replicas))


@pytest.mark.parametrize(("name", "make", "most"), LARGEST)
def test_mx_config_bytes_is_the_longest_mx_config(name: str, make: MakeSpec, most: int) -> None:
    for n in (3, 11, most):
        spec = (
            validation.validated_spec(name, make(n))
            if n < most
            else validation.validated_spec(name, make(most))
        )
        job = builders.job_context(name, "ns", spec)
        longest = max(
            len(builders.pod(job, t, i, 0, 0)["spec"]["containers"][0]["env"][0]["value"])
            for t, replica in spec.mxReplicaSpecs.items()
            for i in range(replica.replicas)
        )
        assert mxconfig.mx_config_bytes(name, spec) == longest


def test_linux_takes_the_longest_mx_config_and_not_a_byte_more() -> None:
    fits = {"MX_CONFIG": "x" * sizerule.MAX_MX_CONFIG}
    subprocess.run(["true"], env=fits, check=True, timeout=30)
    with pytest.raises(OSError, match="Argument list too long"):
        subprocess.run(["true"], env={"MX_CONFIG": fits["MX_CONFIG"] + "x"}, timeout=30)


def test_two_replicas_over_the_cap_nothing_fits() -> None:
    """The smallest MX_CONFIG of n replicas: one scheduler and n-1 workers of a job named
    `a` on port 1 (a server's entry is as long as a worker's, a tuner server's longer)."""

    def fits(n: int) -> bool:
        spec = s.train_spec(servers=0, workers=n - 1)
        for replica in spec["mxReplicaSpecs"].values():
            port = {"name": "mxjob-port", "containerPort": 1}
            replica["template"]["spec"]["containers"][0]["ports"] = [port]
        typed = MXJobSpec.model_validate(normalise(spec))
        return mxconfig.mx_config_bytes("a", typed) <= sizerule.MAX_MX_CONFIG

    cap = sizerule.MAX_REPLICAS
    assert [fits(n) for n in (cap, cap + 1, cap + 2)] == [True, True, False]


def test_every_admitted_sync_fits_the_default_body_limit_with_room() -> None:
    assert Settings().max_body_bytes >= sizerule.MAX_SYNC_BYTES * 4 // 3
