"""Properties over generated valid jobs: the status is a fixed point, answers are deterministic."""

import copy
import random
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import jobs as s
from tests.support.budgets import examples
from tests.support.hooked import sync

POLICIES = st.sampled_from(["Always", "OnFailure", "Never", "ExitCode"])
PHASES = st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"])
EXIT_CODES = st.sampled_from([None, 0, 1, 2, 127, 128, 130, 137, 138, 143])


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        replicas = {
            "TunerTracker": s.replica(1, draw(POLICIES)),
            "TunerServer": s.replica(draw(st.integers(0, 2)), draw(POLICIES)),
            "Tuner": s.replica(1, draw(POLICIES)),
        }
        spec: dict[str, Any] = {"jobMode": "MXTune", "mxReplicaSpecs": replicas}
    elif draw(st.booleans()):
        spec = {"mxReplicaSpecs": {"Worker": s.replica(1, draw(POLICIES))}}
    else:
        spec = s.train_spec(draw(st.integers(0, 3)), draw(st.integers(1, 4)), draw(POLICIES))
    spec["runPolicy"] = {
        "cleanPodPolicy": draw(st.sampled_from(["All", "Running", "None"])),
        "suspend": draw(st.booleans()) and draw(st.booleans()),
    }
    for field in ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        value = draw(st.none() | st.integers(0, 600))
        if value is not None:
            spec["runPolicy"][field] = value
    return spec


@st.composite
def lives(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    """A request after a few syncs of a generated job with generated pod states."""
    parent = s.mxjob(draw(specs()))
    answer = sync(s.request(parent), s.NOW)
    at = s.NOW
    for _ in range(draw(st.integers(0, 4))):
        at += timedelta(seconds=draw(st.integers(0, 400)))
        phases = {
            p["metadata"]["name"]: s.pod_status(
                phase := draw(PHASES),
                draw(EXIT_CODES) if phase in ("Failed", "Succeeded") else None,
                restarts=draw(st.integers(0, 2)),
            )
            for p in s.pods_of(answer)
        }
        request, answer = s.step(parent, answer, phases, at)
    request = (
        s.step(parent, answer, {}, at)[0]
        if draw(st.booleans())
        else s.request(parent | {"status": answer["status"]})
    )
    return request, at


SETTINGS = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(lives())
def test_status_is_a_fixed_point(life: tuple[dict[str, Any], Any]) -> None:
    request, at = life
    first = sync(copy.deepcopy(request), at)
    request["parent"]["status"] = first["status"]
    second = sync(copy.deepcopy(request), at)
    assert second["status"] == first["status"]


@SETTINGS
@given(lives(), st.randoms(use_true_random=False))
def test_answer_is_deterministic_and_ignores_child_order_and_keys(
    life: tuple[dict[str, Any], Any], rng: random.Random
) -> None:
    request, at = life
    first = sync(copy.deepcopy(request), at)
    shuffled = copy.deepcopy(request)
    for kind, group in shuffled["children"].items():
        items = list(group.values())
        rng.shuffle(items)
        # Hook v1 keys children by name alone; the answer must not depend on the keys.
        shuffled["children"][kind] = {c["metadata"]["name"]: c for c in items}
    assert sync(shuffled, at) == first
    assert sync(copy.deepcopy(request), at) == first
