"""Fuzz /sync through the ASGI app: random mutations of valid requests get a 200 with a
well-formed answer or a 4xx with a `detail`, never a 500, and never lose a running pod that
the contract keeps."""

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from app.core.model import conditions
from app.core.model.errors import SpecError
from app.core.mxnet import names
from app.core.observe import pods
from app.core.validate.validation import validated_spec
from app.service import web
from app.service.settings import Settings
from tests.support import jobs as s
from tests.support.fuzz_mutations import (
    POD_FIELDS,
    SERVICE_FIELDS,
    UNICODE_DIGITS,
    mutated,
    pods_in,
    set_at,
)
from tests.support.fuzz_requests import BUILDERS, EDGE, LARGE, NOW, built
from tests.support.hooked import sync
from tests.support.servers import AsgiClient, asgi_client

CLOCK = {"frozen_clock": NOW}


@pytest.fixture(scope="module")
def client() -> Iterator[AsgiClient]:
    with asgi_client(web.create_app(Settings(**CLOCK))) as client:
        yield client


def _post(client: AsgiClient, request: dict[str, Any]) -> Any:
    # The stdlib writes integers of any size; orjson would refuse those past 64 bits.
    return client.post("/sync", content=json.dumps(request).encode())


def _check_answer(answer: Any) -> None:
    assert isinstance(answer["status"], dict)
    assert isinstance(answer["status"]["conditions"], list)
    assert all(isinstance(c, dict) for c in answer["children"])
    assert type(answer["resyncAfterSeconds"]) is int
    assert answer["resyncAfterSeconds"] >= 0


FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


# Each property a hypothesis test of its own (its own strategy and examples), same decorators.
@pytest.mark.slow
@FUZZ
@given(mutated())
def test_any_mutation_gets_a_200_or_a_4xx_with_detail(
    client: AsgiClient, case: tuple[dict[str, Any], list[str]]
) -> None:
    _answered_or_refused(client, case[0])


def _answered_or_refused(client: AsgiClient, request: dict[str, Any]) -> None:
    reply = _post(client, request)
    assert reply.status_code != 500, reply.text
    if reply.status_code == 200:
        _check_answer(reply.json())
    else:
        assert 400 <= reply.status_code < 500
        assert isinstance(reply.json()["detail"], str)
        assert reply.json()["detail"]


def _finished_in(status: Any) -> bool:
    return isinstance(status, dict) and conditions.finished(
        conditions.well_formed(status.get("conditions"))
    )


def _may_drop(request: dict[str, Any], answer: dict[str, Any], pod: dict[str, Any]) -> bool:
    """Whether the contract lets this sync remove an observed running pod: a finished job
    (clean-up, TTL, deadline, backoff), a suspended one, a pod that is not one of this
    job's current replicas (another job's, scaled away, misnamed) or one replaced by a
    newer attempt. An invalid spec removes nothing."""
    parent = request["parent"]
    if _finished_in(answer["status"]) or _finished_in(parent.get("status")):
        return True
    if not isinstance(s.dig(pod, "metadata", "name"), str):
        return True  # no pod the API server holds: an invalid spec echoes it, re-encoded

    job = parent["metadata"]["name"]
    try:
        spec = validated_spec(job, parent.get("spec"))
    except SpecError:
        return False
    mine = pods.observe([pod], job)
    if spec.runPolicy.suspend or not mine:
        return True
    this = mine[0]
    newer = [
        a
        for a in pods.observe(pods_in(request), job)
        if (a.rtype, a.index) == (this.rtype, this.index) and a.attempt > this.attempt
    ]
    expected = names.pod_name(job, this.rtype, this.index, this.attempt)
    return (
        this.index >= spec.replicas(this.rtype)
        or pod["metadata"]["name"] != expected
        or bool(newer)
    )


RUNNING_BASES = ("running-train", "running-single-worker", "running-tune", "running-gang")


@pytest.mark.slow
@FUZZ
@given(mutated((*RUNNING_BASES, "restarting-exit-code")))
def test_no_mutation_drops_a_running_pod_the_contract_keeps(
    client: AsgiClient, case: tuple[dict[str, Any], list[str]]
) -> None:
    _keeps_running_pods(client, case[0])


def _keeps_running_pods(client: AsgiClient, request: dict[str, Any]) -> None:
    reply = _post(client, request)
    if reply.status_code != 200:
        return  # a 4xx makes Metacontroller touch nothing
    answer = reply.json()
    kept = [s.dig(c, "metadata", "name") for c in answer["children"] if c.get("kind") == "Pod"]
    for pod in pods_in(request):
        name = s.dig(pod, "metadata", "name")
        if s.dig(pod, "status", "phase") == "Running" and name not in kept:
            assert _may_drop(request, answer, pod), f"dropped running pod {name}"


@pytest.mark.slow
@settings(FUZZ, max_examples=12)
@given(mutated((LARGE, EDGE)))
def test_a_huge_admitted_job_gets_a_200_or_a_4xx_and_keeps_its_running_pods(
    client: AsgiClient, case: tuple[dict[str, Any], list[str]]
) -> None:
    """The largest job most clusters run, and the largest the size rule admits with a long
    name: each mutation is one small change in a request of several MB, so the answer must
    still be the contract's for everything else."""
    _answered_or_refused(client, case[0])
    _keeps_running_pods(client, case[0])


# The largest job the size rule admits (EDGE), several MB: a second or more to send and answer.
@pytest.mark.parametrize(
    "base", [pytest.param(b, marks=pytest.mark.slow) if b == EDGE else b for b in sorted(BUILDERS)]
)
def test_unmutated_bases_are_answered(client: AsgiClient, base: str) -> None:
    reply = _post(client, built(base))
    assert reply.status_code == 200
    assert reply.json() == sync(copy.deepcopy(built(base)), NOW)


@pytest.mark.parametrize("digits", UNICODE_DIGITS)
@pytest.mark.parametrize(
    ("kind", "path"),
    [
        *(pytest.param("Pod.v1", p, id=f"pod-{p[-1]}") for p in POD_FIELDS[:2]),
        pytest.param("Pod.v1", POD_FIELDS[4], id="pod-restarts-before"),
        *(pytest.param("Service.v1", p, id=f"service-{p[1]}-{p[-1]}") for p in SERVICE_FIELDS),
    ],
)
def test_unicode_digits_are_malformed_not_a_500(
    client: AsgiClient, digits: str, kind: str, path: tuple[str, ...]
) -> None:
    """Every place a count is read back from a child: the value is ignored (the pod's own
    name says which attempt it is), the job keeps the pods it had."""
    request = copy.deepcopy(built("restarting-exit-code"))
    for child in request["children"][kind].values():
        set_at(child, path, digits)

    reply = _post(client, request)

    assert reply.status_code == 200
    _check_answer(reply.json())
    unmutated = sync(copy.deepcopy(built("restarting-exit-code")), NOW)
    assert s.names(s.pods_of(reply.json())) == s.names(s.pods_of(unmutated))
