"""Dry run: what the hook would answer for MXJob manifests at their creation, as YAML."""

from datetime import datetime
from typing import Any

import yaml

from app import envelope, kubeenv
from app.reconcile import sync

# What the CompositeController in metacontroller/ declares.
CHILD_TYPES = (envelope.CONFIG_MAP, envelope.POD, envelope.SERVICE)


class RenderError(Exception):
    """The input is not a set of MXJob manifests."""


def render(text: str, now: datetime, namespace: str = "default", expand: bool = False) -> str:
    """Each MXJob in `text` with the status the hook gives it, then its children. With
    `expand`, each pod's containers show the environment their processes would start with
    (ConfigMap references resolved, `$(VAR)` expanded, as the kubelet does)."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise RenderError(f"not YAML: {err}") from None
    if not documents:
        raise RenderError("no MXJob in the input")
    out: list[Any] = []
    for n, document in enumerate(documents):
        children = _render_one(n, document, now, namespace)
        out += _expanded(children) if expand else children
    return yaml.safe_dump_all(out, sort_keys=False)


def _render_one(n: int, job: Any, now: datetime, namespace: str) -> list[Any]:
    if not isinstance(job, dict) or job.get("kind") != "MXJob":
        raise RenderError(f"document {n + 1} is not an MXJob")
    meta = job.get("metadata")
    if isinstance(meta, dict) and not meta.get("namespace"):
        job = job | {"metadata": meta | {"namespace": namespace}}
    request = {"parent": job, "children": {kind: {} for kind in CHILD_TYPES}}
    try:
        answer = sync(request, now)
    except envelope.BadRequest as err:
        raise RenderError(f"document {n + 1}: {err}") from None
    return [job | {"status": answer["status"]}, *answer["children"]]


def _expanded(documents: list[Any]) -> list[Any]:
    config_maps = {d["metadata"]["name"]: d for d in documents if d.get("kind") == "ConfigMap"}
    return [_expand_pod(d, config_maps) if d.get("kind") == "Pod" else d for d in documents]


def _expand_pod(pod: dict[str, Any], config_maps: dict[str, Any]) -> dict[str, Any]:
    spec = dict(pod["spec"])
    for field in ("initContainers", "containers"):
        if field in spec:
            spec[field] = [_expand_container(c, config_maps) for c in spec[field]]
    return pod | {"spec": spec}


def _expand_container(container: dict[str, Any], config_maps: dict[str, Any]) -> dict[str, Any]:
    try:
        env = kubeenv.resolve(container, config_maps)
    except kubeenv.EnvError as err:
        raise RenderError(f"container {container.get('name')}: {err}") from None
    out = {k: v for k, v in container.items() if k != "envFrom"}
    return out | {"env": [{"name": k, "value": v} for k, v in env.items()]}
