"""The `render` command: check MXJob manifests as the API server holding the shipped CRD would at
their creation, then print what the hook answers for those it would admit."""

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from app.cli import admission, podsecurity
from app.cli.documents import Document, documents
from app.cli.legacy import legacy_notes
from app.core.model import kinds
from app.core.model.errors import RenderError
from app.core.render import render_job


def run(
    path: str, namespace: str, expand: bool, child_types: tuple[str, ...], pod_security: str = ""
) -> int:
    """Print the answer for the jobs in the file at `path` (- for stdin); return the exit code:
    0 if the API server and the hook would take every job, 1 if not, 2 if it holds none. With
    `pod_security` (a level), the pod-security component's policy is the API server's too."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        found = documents(text)
    except (OSError, UnicodeDecodeError, RenderError) as err:
        print(f"render: {path}: {err}", file=sys.stderr)
        return 2
    out: list[Any] = []
    notes: list[str] = []
    problems: list[str] = []
    for document in found:
        answer, noted, refused = _one(document, namespace, expand, child_types, pod_security)
        out += answer
        notes += noted
        problems += refused
    if not problems and not any(_is_job(d.value) for d in found):
        print(f"render: {path}: no MXJob in the input", file=sys.stderr)
        return 2
    # The whole answer still goes out: the status of a job the hook refuses says what to fix.
    sys.stdout.write(yaml.safe_dump_all(out, sort_keys=False) if out else "")
    for line in notes + problems:
        print(f"render: {path}: {line}", file=sys.stderr)
    return 1 if problems else 0


def _is_job(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") == kinds.MXJOB


def _one(
    document: Document, namespace: str, expand: bool, child_types: tuple[str, ...], level: str
) -> tuple[list[Any], list[str], list[str]]:
    """For one document of the stream: what is printed, its notes, its problems."""
    job, where = document.value, document.where
    if not _is_job(job):
        twice = [f"{where}: {line}" for line in document.twice]
        if job is None:
            return [], [], twice
        kind = job.get("kind") if isinstance(job, dict) else None
        what = f"a {kind}" if isinstance(kind, str) and kind else "not a Kubernetes object"
        return [], [f"{where}: note: {what}, not an MXJob: skipped"], twice
    verdict = admission.admit(job, document.twice)
    name = _named(job, where, namespace)
    notes = [f"{name}: note: {note}" for note in legacy_notes(job)]
    if verdict.problems:
        return [], notes, [f"{name}: {problem}" for problem in verdict.problems]
    if level:
        own = name.split("/")[0] if "/" in name else namespace
        if refused := podsecurity.refusals(verdict.job, own, level):
            return [], notes, [f"{name}: {problem}" for problem in refused]
    # A job read from a cluster carries on from its status (a finished one gets no pods).
    stored = verdict.job | ({"status": job["status"]} if "status" in job else {})
    try:
        answer, refusals = render_job(stored, datetime.now(UTC), namespace, expand, child_types)
    except RenderError as err:
        return [], notes, [f"{name}: {err}"]
    return answer, notes, [f"{name}: {refusal}" for refusal in refusals]


def _named(job: dict[str, Any], where: str, namespace: str) -> str:
    """`namespace/name` of the job as written (a generateName followed by `*`), or its place in
    the stream when it has neither."""
    meta = job.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, prefix, own = (meta.get(k) for k in ("name", "generateName", "namespace"))
    if not (isinstance(name, str) and name):
        if not (isinstance(prefix, str) and prefix):
            return where
        name = f"{prefix}*"
    return f"{own if isinstance(own, str) and own else namespace}/{name}"
