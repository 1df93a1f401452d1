"""Pod templates of many shapes for the size rule's tests (tests/test_size_rule.py, and
tests/apiserver/test_size_estimate.py and test_worst_case.py on the real API server): the
smallest, one large value, and many small list entries or map keys, the costliest per byte."""

from collections.abc import Callable
from typing import Any

from tests import support as s

Shape = Callable[[dict[str, Any]], None]


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
    """The smallest template (tests/support.py's), with `shape`'s additions."""
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
