"""Fuzz /sync through the ASGI app: random mutations of valid requests get a 200 with a
well-formed answer or a 4xx with a `detail`, never a 500, and never lose a running pod that
the contract keeps."""

import copy
import functools
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.model import conditions
from app.core.model.errors import SpecError
from app.core.model.kinds import CONFIG_MAP_TYPE
from app.core.mxnet import names
from app.core.observe import pods
from app.core.validate.validation import validated_spec
from app.integrations.gang import VOLCANO
from app.service import web
from app.service.settings import Settings
from tests.support import jobs as s
from tests.support.hooked import sync
from tests.support.servers import AsgiClient, asgi_client

NOW = s.NOW
CLOCK = {"frozen_clock": NOW}
RUNNING = s.pod_status("Running")


def _running(parent: dict[str, Any], **kinds: Any) -> dict[str, Any]:
    """The request after every pod of `parent` came up Running."""
    first = s.created(s.request(parent, **kinds))
    phases = {p["metadata"]["name"]: RUNNING for p in s.pods_of(first)}
    types = tuple((kinds.get("others") or {}).keys())
    return s.step(parent, first, phases, NOW, types)[0]


def _tune() -> dict[str, Any]:
    replicas = {"TunerTracker": s.replica(1), "TunerServer": s.replica(1), "Tuner": s.replica(1)}
    return s.mxjob({"jobMode": "MXTune", "mxReplicaSpecs": replicas})


def _restarting() -> dict[str, Any]:
    parent = s.mxjob(s.train_spec(1, 2, "ExitCode"))
    first = s.created(s.request(parent))
    phases = {p["metadata"]["name"]: RUNNING for p in s.pods_of(first)}
    phases["mnist-worker-1"] = s.pod_status("Failed", exit_code=137)
    _, answer = s.step(parent, first, phases, NOW)
    phases["mnist-worker-1-r1"] = RUNNING
    return s.step(parent, answer, phases, NOW + timedelta(seconds=30))[0]


def _finished() -> dict[str, Any]:
    parent = s.mxjob(s.train_spec(1, 1) | {"runPolicy": {"cleanPodPolicy": "None"}})
    first = s.created(s.request(parent))
    phases = {p["metadata"]["name"]: RUNNING for p in s.pods_of(first)}
    phases["mnist-scheduler-0"] = s.pod_status("Succeeded", exit_code=0)
    _, answer = s.step(parent, first, phases, NOW)
    return s.step(parent, answer, phases, NOW + timedelta(seconds=30))[0]


BASES: dict[str, Callable[[], dict[str, Any]]] = {
    "new-train": lambda: s.request(s.mxjob(s.train_spec())),
    "running-train": lambda: _running(s.mxjob(s.train_spec(2, 3, "OnFailure"))),
    "running-single-worker": lambda: _running(s.mxjob({"mxReplicaSpecs": {"Worker": s.replica()}})),
    "running-tune": lambda: _running(_tune()),
    "running-gang": lambda: _running(s.mxjob(s.train_spec(1, 2)), others={VOLCANO.child_type: []}),
    "restarting-exit-code": _restarting,
    "finished-keep-pods": _finished,
}
# A huge admitted job, as Metacontroller sends it with the shipped CompositeController (the
# job's ConfigMap among its children): a 7 MB request, so only its own property draws it, with
# few examples, and it is built on first use.
LARGE = "running-1-100-1000"
# The largest train job the size rule admits with a 32-letter name (found by bisection, so it
# follows the rule): every MX_CONFIG names every replica, so its requests grow with replicas
# times the name's length, and whatever validation admits must still be answered.
EDGE = "running-largest-admitted"
EDGE_NAME = "a" * 32


def _train(replicas: int) -> dict[str, Any]:
    return s.train_spec(replicas // 10, replicas - 1 - replicas // 10, "OnFailure")


def _admitted(replicas: int) -> bool:
    try:
        validated_spec(EDGE_NAME, _train(replicas))
    except SpecError:
        return False
    return True


def _largest_admitted() -> dict[str, Any]:
    low, high = 3, 100_000
    assert _admitted(low)
    assert not _admitted(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _admitted(middle) else (low, middle)
    return _running(s.mxjob(_train(low), name=EDGE_NAME), others={CONFIG_MAP_TYPE: []})


BUILDERS = BASES | {
    LARGE: lambda: _running(
        s.mxjob(s.train_spec(100, 1000, "OnFailure")), others={CONFIG_MAP_TYPE: []}
    ),
    EDGE: _largest_admitted,
}


@functools.cache
def built(name: str) -> dict[str, Any]:
    return BUILDERS[name]()


HUGE = st.sampled_from([2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30, -(2**63)])
# Digits that are not ASCII: str.isdigit() is true for all of them, int() refuses some.
UNICODE_DIGITS = ["²", "①", "٣", "1²", "\uff11"]  # the last one is FULLWIDTH DIGIT ONE
ODD_TEXT = st.sampled_from(
    [
        *["", " ", "Worker", "WORKER", "ünïcødé-名前", "\u0000", "🙂" * 70, "a" * 300, "-1", "1e3"],
        *UNICODE_DIGITS,
    ]
)
ODD_SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | HUGE
    | st.floats(allow_nan=False, allow_infinity=False)
    | ODD_TEXT
    | st.text(max_size=12)
)
ODD = st.recursive(
    ODD_SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
ODD_STATUS = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from(["Running", "Failed", "Succeeded", "Unknown", "", "running"])
        | ODD_SCALAR,
        "reason": st.sampled_from(["Evicted", "OOMKilled", "NodeLost"]) | ODD_SCALAR,
        "containerStatuses": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "name": st.sampled_from(["mxnet", "sidecar"]) | ODD_SCALAR,
                    "restartCount": st.integers(-3, 3) | HUGE | ODD_SCALAR,
                    "state": st.fixed_dictionaries(
                        {"terminated": st.fixed_dictionaries({"exitCode": HUGE | ODD_SCALAR})}
                    )
                    | ODD,
                },
            )
            | ODD,
            max_size=3,
        )
        | ODD,
    },
)


# Fields the hook reads, where an odd value is most likely to matter.
FIELDS = [
    ("parent", "spec", "runPolicy", "activeDeadlineSeconds"),
    ("parent", "spec", "runPolicy", "ttlSecondsAfterFinished"),
    ("parent", "spec", "runPolicy", "backoffLimit"),
    ("parent", "spec", "runPolicy", "suspend"),
    ("parent", "spec", "runPolicy", "cleanPodPolicy"),
    ("parent", "spec", "runPolicy", "schedulingPolicy", "minAvailable"),
    ("parent", "spec", "activeDeadlineSeconds"),
    ("parent", "spec", "jobMode"),
    ("parent", "spec", "mxReplicaSpecs", "Worker", "replicas"),
    ("parent", "spec", "mxReplicaSpecs", "Worker", "restartPolicy"),
    ("parent", "spec", "mxReplicaSpecs", "Worker", "template", "metadata", "labels"),
    ("parent", "spec", "mxReplicaSpecs", "Worker", "template", "spec", "containers"),
    ("parent", "status", "startTime"),
    ("parent", "status", "completionTime"),
    ("parent", "status", "conditions"),
    ("parent", "metadata", "namespace"),
]
POD_FIELDS = [
    ("metadata", "labels", names.LABEL_INDEX),
    ("metadata", "labels", names.LABEL_ATTEMPT),
    ("metadata", "labels", names.LABEL_TYPE),
    ("metadata", "labels", names.LABEL_JOB),
    ("metadata", "annotations", names.ANNOTATION_RESTARTS),
    ("metadata", "name"),
]
SERVICE_FIELDS = [
    ("metadata", "annotations", names.LABEL_ATTEMPT),
    ("metadata", "annotations", names.ANNOTATION_RESTARTS),
    ("metadata", "labels", names.LABEL_INDEX),
]


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> bool:
    """Set a value at a path of dict keys, creating missing dicts; False where a step is
    not a dict."""
    for key in path[:-1]:
        if not isinstance(doc, dict):
            return False
        doc = doc.setdefault(key, {})
    if not isinstance(doc, dict):
        return False
    doc[path[-1]] = value
    return True


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into the document, the root's children first."""
    out = []
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    )
    for key, value in items:
        out.append((*at, key))
        out += _paths(value, (*at, key))
    return out


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _pods(request: dict[str, Any]) -> list[Any]:
    group = s.dig(request, "children", "Pod.v1")
    return list(group.values()) if isinstance(group, dict) else []


def _services(request: dict[str, Any]) -> list[Any]:
    group = s.dig(request, "children", "Service.v1")
    return list(group.values()) if isinstance(group, dict) else []


@st.composite
def mutation(draw: st.DrawFn, request: dict[str, Any]) -> str:
    """Apply one random mutation to `request` in place; returns what it did."""
    kind = draw(
        st.sampled_from(
            [
                "delete",
                "replace",
                "add",
                "case-duplicate",
                "name",
                "pod-status",
                "field",
                "pod-field",
                "service-field",
            ]
        )
    )
    value = draw(HUGE | ODD)
    if kind == "field":
        path = draw(st.sampled_from(FIELDS))
        if _set(request, path, value):
            return f"field {path} = {value!r}"
    if kind == "pod-field" and _pods(request):
        pod, path = draw(st.sampled_from(_pods(request))), draw(st.sampled_from(POD_FIELDS))
        if _set(pod, path, value):
            return f"pod field {path} = {value!r}"
    if kind == "service-field" and _services(request):
        service = draw(st.sampled_from(_services(request)))
        path = draw(st.sampled_from(SERVICE_FIELDS))
        if _set(service, path, value):
            return f"service field {path} = {value!r}"
    if kind == "case-duplicate":
        specs = s.dig(request, "parent", "spec", "mxReplicaSpecs")
        if isinstance(specs, dict) and specs:
            key = draw(st.sampled_from(sorted(specs)))
            twin = draw(st.sampled_from([key.lower(), key.upper(), key.swapcase()]))
            specs[twin] = copy.deepcopy(specs[key])
            return f"case-duplicate {key} as {twin}"
    meta = s.dig(request, "parent", "metadata")
    if kind == "name" and isinstance(meta, dict):
        meta["name"] = draw(ODD_TEXT | st.text(min_size=1, max_size=80))
        return f"name {meta['name']!r}"
    if kind == "pod-status" and _pods(request):
        pod = draw(st.sampled_from(_pods(request)))
        if isinstance(pod, dict):
            pod["status"] = draw(ODD_STATUS)
            return f"status of {s.dig(pod, 'metadata', 'name')} = {pod['status']!r}"
    path = draw(st.sampled_from(_paths(request)))
    holder, key = _at(request, path[:-1]), path[-1]
    if kind == "delete":
        del holder[key]
        return f"delete {path}"
    target = _at(request, path)
    if kind == "add" and isinstance(target, dict):
        new_key = draw(ODD_TEXT)
        target[new_key] = draw(ODD)
        return f"add {path} + {new_key!r}"
    holder[key] = draw(ODD)
    return f"replace {path} = {holder[key]!r}"


@st.composite
def mutated(
    draw: st.DrawFn, bases: tuple[str, ...] = tuple(BASES)
) -> tuple[dict[str, Any], list[str]]:
    request = copy.deepcopy(built(draw(st.sampled_from(bases))))
    done = [draw(mutation(request)) for _ in range(draw(st.integers(1, 4)))]
    return request, done


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
        for a in pods.observe(_pods(request), job)
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
    for pod in _pods(request):
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


@pytest.mark.parametrize("base", sorted(BUILDERS))
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
        _set(child, path, digits)

    reply = _post(client, request)

    assert reply.status_code == 200
    _check_answer(reply.json())
    unmutated = sync(copy.deepcopy(built("restarting-exit-code")), NOW)
    assert s.names(s.pods_of(reply.json())) == s.names(s.pods_of(unmutated))
