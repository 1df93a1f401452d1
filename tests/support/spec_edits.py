"""Edits of a replica spec at a dotted path, for the validation tests' tables, and an MXTune
spec to edit."""

from collections.abc import Callable
from typing import Any

from tests.support.jobs import replica

Edit = Callable[[dict[str, Any]], None]


def tune_spec() -> dict[str, Any]:
    """A valid MXTune spec: a TunerTracker, two TunerServers and a Tuner."""
    return {
        "jobMode": "MXTune",
        "mxReplicaSpecs": {
            "TunerTracker": replica(),
            "TunerServer": replica(2),
            "Tuner": replica(),
        },
    }


def _holder(spec: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    """The dict that holds the last key of a dotted path, and that key."""
    *parents, last = path.split(".")
    for key in parents:
        spec = spec[key]
    return spec, last


def setting(path: str, value: Any) -> Edit:
    """An edit that sets the value at `path`."""

    def edit(spec: dict[str, Any]) -> None:
        node, key = _holder(spec, path)
        node[key] = value

    return edit


def dropping(path: str) -> Edit:
    """An edit that removes the key at `path`."""

    def edit(spec: dict[str, Any]) -> None:
        node, key = _holder(spec, path)
        del node[key]

    return edit


W = "mxReplicaSpecs.Worker"
WT = "spec.mxReplicaSpecs.Worker.template"
