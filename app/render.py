"""Dry run: what the hook would answer for MXJob manifests at their creation, as YAML."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml

from app import envelope
from app.reconcile import sync
from app.status import REASON_INVALID


class RenderError(Exception):
    """The input is not a set of MXJob manifests."""


@dataclass(frozen=True)
class Rendered:
    """The YAML, and one line per job the hook refuses: its document, the condition's message."""

    text: str
    invalid: list[str]


def render(text: str, now: datetime, namespace: str = "default") -> str:
    """Each MXJob in `text` with the status the hook gives it, then its children."""
    return render_report(text, now, namespace).text


def render_report(text: str, now: datetime, namespace: str = "default") -> Rendered:
    """As `render`, also naming each job whose spec the hook refuses (so a CLI can fail)."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise RenderError(f"not YAML: {err}") from None
    # `kubectl get mxjobs -o yaml` wraps the jobs in a List: check a cluster's jobs in one go.
    documents = [item for d in documents for item in (d.get("items") or [] if _is_list(d) else [d])]
    if not documents:
        raise RenderError("no MXJob in the input")
    out: list[Any] = []
    invalid: list[str] = []
    for n, document in enumerate(documents):
        job, *children = _render_one(n, document, now, namespace)
        out += [job, *children]
        for condition in job["status"].get("conditions", []):
            if condition.get("reason") == REASON_INVALID and condition.get("status") == "True":
                invalid.append(f"document {n + 1}: {condition.get('message')}")
    return Rendered(yaml.safe_dump_all(out, sort_keys=False), invalid)


def _is_list(document: Any) -> bool:
    return isinstance(document, dict) and document.get("kind") in {"List", "MXJobList"}


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
