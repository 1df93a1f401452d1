"""Dry run: what the hook would answer for MXJob manifests at their creation, as YAML."""

from datetime import datetime
from typing import Any

import yaml

from app import envelope
from app.reconcile import sync


class RenderError(Exception):
    """The input is not a set of MXJob manifests."""


def render(text: str, now: datetime, namespace: str = "default") -> str:
    """Each MXJob in `text` with the status the hook gives it, then its children."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise RenderError(f"not YAML: {err}") from None
    if not documents:
        raise RenderError("no MXJob in the input")
    out: list[Any] = []
    for n, document in enumerate(documents):
        out += _render_one(n, document, now, namespace)
    return yaml.safe_dump_all(out, sort_keys=False)


def _render_one(n: int, job: Any, now: datetime, namespace: str) -> list[Any]:
    if not isinstance(job, dict) or job.get("kind") != "MXJob":
        raise RenderError(f"document {n + 1} is not an MXJob")
    meta = job.get("metadata")
    if isinstance(meta, dict) and not meta.get("namespace"):
        job = job | {"metadata": meta | {"namespace": namespace}}
    request = {"parent": job, "children": {envelope.POD: {}, envelope.SERVICE: {}}}
    try:
        answer = sync(request, now)
    except envelope.BadRequest as err:
        raise RenderError(f"document {n + 1}: {err}") from None
    return [job | {"status": answer["status"]}, *answer["children"]]
