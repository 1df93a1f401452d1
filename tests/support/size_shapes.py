"""Pod templates of many shapes for the size rule's tests (tests/unit/core/test_size_rule.py, and
tests/apiserver/test_size_estimate.py and test_worst_case.py on the real API server): the
smallest, one large value, and many small list entries or map keys, the costliest per byte;
train jobs of those templates, and the most replicas the rule admits for each (LARGEST, which
tests/unit/core/test_size_rule.py checks and test_worst_case.py syncs)."""

from collections.abc import Callable
from typing import Any

import pytest

from tests.support import jobs as s

Shape = Callable[[dict[str, Any]], None]
MakeSpec = Callable[[int], dict[str, Any]]


def _env(container: dict[str, Any]) -> None:
    container["env"] = [{"name": f"E{i:03d}", "value": "x"} for i in range(730)]


def _value(container: dict[str, Any]) -> None:
    container["env"] = [{"name": "BIG", "value": "x" * 20_000}]


def _ports(container: dict[str, Any]) -> None:
    container["ports"] = [{"containerPort": 1000 + i} for i in range(400)]


def _mounts(container: dict[str, Any]) -> None:
    container["volumeMounts"] = [{"name": "v", "mountPath": f"/m/{i}"} for i in range(400)]


def _args(container: dict[str, Any]) -> None:
    container["args"] = [f"--a{i}" for i in range(1000)]


def template(shape: str) -> dict[str, Any]:
    """The smallest template (tests/support/jobs.py's), with `shape`'s additions."""
    made: dict[str, Any] = s.replica()["template"]
    container = made["spec"]["containers"][0]
    if shape in ADDED:
        ADDED[shape](container)
    if shape == "400-volume-mounts":
        made["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    if shape == "400-labels":
        made["metadata"] = {"labels": {f"l{i:03d}": "x" for i in range(400)}}
    if shape == "three-sidecars":
        made["spec"]["containers"] += [{"name": f"side-{i}", "image": "busybox"} for i in range(3)]
    return made


ADDED: dict[str, Shape] = {
    "730-env-entries": _env,
    "20-kb-value": _value,
    "400-ports": _ports,
    "400-volume-mounts": _mounts,
    "1000-args": _args,
}
SHAPES = ["smallest", *ADDED, "400-labels", "three-sidecars"]


def train(
    port: int | None = None, env_bytes: int = 0, sidecars: int = 0, shape: str = ""
) -> MakeSpec:
    """A train job of n replicas: one scheduler, a tenth servers, the rest workers; their
    template has the port `port`, a value of `env_bytes`, `sidecars` more containers, or is
    one of the shapes above."""

    def make(n: int) -> dict[str, Any]:
        spec = s.train_spec(servers=n // 10, workers=n - 1 - n // 10)
        for replica in spec["mxReplicaSpecs"].values():
            if shape:
                replica["template"] = template(shape)
            containers = replica["template"]["spec"]["containers"]
            if port is not None:
                containers[0]["ports"] = [{"name": "mxjob-port", "containerPort": port}]
            if env_bytes:
                containers[0]["env"] = [{"name": "BIG", "value": "x" * env_bytes}]
            containers += [{"name": f"side-{i}", "image": "busybox"} for i in range(sidecars)]
        return spec

    return make


def tune(n: int) -> dict[str, Any]:
    server = s.replica(n - 2) | {"label": "rtx-é"}
    specs = {"TunerTracker": s.replica(1), "TunerServer": server, "Tuner": s.replica(1)}
    return {"jobMode": "MXTune", "mxReplicaSpecs": specs}


# (job name, shape, the most replicas admitted), by the part of the rule that binds.
BY_MX_CONFIG = [
    pytest.param("mnist", train(), 3311, id="five-letter-name"),
    pytest.param("a" * 32, train(), 1975, id="32-letter-name"),
    pytest.param("a" * 51, train(), 1538, id="longest-name"),
    pytest.param("tune", tune, 3000, id="tune-job"),
]
# The sync request's bytes.
BY_BYTES = [
    pytest.param("a", train(env_bytes=20_000), 1005, id="20-kb-template"),
]
# The sync request's parse cost: many small values (list entries, map keys, the fields of
# managedFields) cost more to parse than their bytes say.
BY_PARSE_COST = [
    pytest.param("a", train(), 3443, id="one-letter-name"),
    pytest.param("a", train(port=1), 3195, id="one-letter-name-port-1"),
    pytest.param("a", train(sidecars=3), 2043, id="three-sidecars"),
    pytest.param("a", train(shape="730-env-entries"), 188, id="730-env-entries"),
    pytest.param("a", train(shape="400-ports"), 134, id="400-ports"),
    pytest.param("a", train(shape="400-volume-mounts"), 300, id="400-volume-mounts"),
    pytest.param("a", train(shape="400-labels"), 869, id="400-labels"),
    pytest.param("a", train(shape="1000-args"), 651, id="1000-args"),
]
LARGEST = [*BY_MX_CONFIG, *BY_BYTES, *BY_PARSE_COST]


def workers(n: int) -> dict[str, Any]:
    """A train job of n replicas: one scheduler, the rest workers."""
    return s.train_spec(servers=0, workers=n - 1)


# The most replicas admitted under a CompositeController that declares no ConfigMaps (every
# container carries the whole MX_CONFIG, so a request grows with the square of the job): the
# parse cost binds for each.
INLINE_LARGEST = [
    pytest.param("a", train(), 515, id="one-letter-name"),
    pytest.param("a" * 32, workers, 505, id="32-letter-name-workers"),
    pytest.param("a", train(sidecars=3), 257, id="three-sidecars"),
    pytest.param("tune", tune, 512, id="tune-job"),
    pytest.param("a", train(env_bytes=20_000), 501, id="20-kb-template"),
    pytest.param("a", train(shape="730-env-entries"), 170, id="730-env-entries"),
]
# The same for a job started by release 0.1.0 whose pods still read that release's keys (every
# DMLC_* variable in each pod's env, a ConfigMap that may hold MX_CONFIG's parts twice):
# MX_CONFIG binds for a long name, the parse cost for the rest.
RELEASE_0_1_0_LARGEST = [
    pytest.param("a", train(), 2926, id="one-letter-name"),
    pytest.param("a" * 32, workers, 1971, id="32-letter-name-workers"),
    pytest.param("a", train(sidecars=3), 1460, id="three-sidecars"),
    pytest.param("tune", tune, 2925, id="tune-job"),
]


def last_condition(answer: dict[str, Any]) -> tuple[str, str, str]:
    """The type, status and reason of the answer's last condition."""
    last = answer["status"]["conditions"][-1]
    return last["type"], last["status"], last["reason"]
