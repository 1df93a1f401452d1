"""The fuzz tests' valid requests, mutations' starting points: new, running, restarting and
finished jobs, a huge admitted one and the largest the size rule admits, each built once."""

import functools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from app.core.model.errors import SpecError
from app.core.model.kinds import CONFIG_MAP_TYPE
from app.core.validate.validation import validated_spec
from app.integrations.gang import VOLCANO
from tests.support import jobs as s

NOW = s.NOW
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
    """The request of that name, built on first use."""
    return BUILDERS[name]()
