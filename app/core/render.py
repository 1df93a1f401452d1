"""Dry run: what the hook would answer for MXJob manifests at their creation, as YAML."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict, Unpack

import yaml

from app.core.decide.status import invalid_spec_messages
from app.core.model import kinds
from app.core.model.errors import BadRequest, EnvError, RenderError
from app.core.mxnet import kubeenv
from app.core.reconcile import sync

# What the CompositeController in metacontroller/ declares.
CHILD_TYPES = (kinds.CONFIG_MAP_TYPE, kinds.POD_TYPE, kinds.SERVICE_TYPE)
# What one that declares no ConfigMaps does (MX_CONFIG whole in every pod).
INLINE_CHILD_TYPES = (kinds.POD_TYPE, kinds.SERVICE_TYPE)


@dataclass(frozen=True)
class Rendered:
    """The YAML, and one line per job the hook refuses: its document, the condition's message."""

    text: str
    invalid: list[str]


class Options(TypedDict, total=False):
    """`render_report`'s options, which `render` passes on."""

    namespace: str
    expand: bool
    child_types: tuple[str, ...]


def render(text: str, now: datetime, **options: Unpack[Options]) -> str:
    """`render_report`'s YAML alone."""
    return render_report(text, now, **options).text


def render_report(
    text: str,
    now: datetime,
    namespace: str = "default",
    expand: bool = False,
    child_types: tuple[str, ...] = CHILD_TYPES,
) -> Rendered:
    """Each MXJob in `text` with the status the hook gives it and its children, under a
    CompositeController that declares `child_types`, and the jobs the hook refuses; with
    `expand`, each container's environment as its process starts with it."""
    return render_documents(manifests(text), now, namespace, expand, child_types)


def manifests(text: str) -> list[Any]:
    """The documents of YAML `text`, a List's items in its place, or RenderError."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise RenderError(f"not YAML: {err}") from None
    # `kubectl get mxjobs -o yaml` wraps the jobs in a List: check a cluster's jobs in one go.
    documents = [item for d in documents for item in (d.get("items") or [] if _is_list(d) else [d])]
    if not documents:
        raise RenderError("no MXJob in the input")
    return documents


def render_documents(
    documents: list[Any],
    now: datetime,
    namespace: str = "default",
    expand: bool = False,
    child_types: tuple[str, ...] = CHILD_TYPES,
) -> Rendered:
    """`render_report` of documents already parsed (`manifests`)."""
    out: list[Any] = []
    invalid: list[str] = []
    for n, document in enumerate(documents):
        if not isinstance(document, dict) or document.get("kind") != kinds.MXJOB:
            raise RenderError(f"document {n + 1} is not an MXJob")
        try:
            answer, refusals = render_job(document, now, namespace, expand, child_types)
        except RenderError as err:
            raise RenderError(f"document {n + 1}: {err}") from None
        out += answer
        invalid += [f"document {n + 1}: {m}" for m in refusals]
    return Rendered(yaml.safe_dump_all(out, sort_keys=False), invalid)


def render_job(
    job: dict[str, Any],
    now: datetime,
    namespace: str = "default",
    expand: bool = False,
    child_types: tuple[str, ...] = CHILD_TYPES,
) -> tuple[list[Any], list[str]]:
    """The MXJob `job` with the status the hook gives it at its creation and its children (each
    container's environment as its process reads it, with `expand`), and the messages of the
    hook's refusals; RenderError if the hook cannot read it as a job."""
    documents = _render_one(job, now, namespace, child_types)
    refusals = invalid_spec_messages(documents[0]["status"])
    return (_expanded(documents) if expand else documents), refusals


def _is_list(document: Any) -> bool:
    return isinstance(document, dict) and document.get("kind") in {"List", "MXJobList"}


def _render_one(
    job: dict[str, Any], now: datetime, namespace: str, child_types: tuple[str, ...]
) -> list[Any]:
    meta = job.get("metadata")
    if isinstance(meta, dict) and not meta.get("namespace"):
        job = job | {"metadata": meta | {"namespace": namespace}}
    request = {"parent": job, "children": {kind: {} for kind in child_types}}
    try:
        # The CompositeController's child types here include none an integration needs.
        answer = sync(request, now, ())
        if not answer["children"]:
            # A new job's first answer is its status alone: the sync its write brings creates.
            answer = sync(request | {"parent": job | {"status": answer["status"]}}, now, ())
    except BadRequest as err:
        raise RenderError(str(err)) from None
    return [job | {"status": answer["status"]}, *answer["children"]]


def _expanded(documents: list[Any]) -> list[Any]:
    config_maps = {d["metadata"]["name"]: d for d in documents if d.get("kind") == kinds.CONFIG_MAP}
    return [_expand_pod(d, config_maps) if d.get("kind") == kinds.POD else d for d in documents]


def _expand_pod(pod: dict[str, Any], config_maps: dict[str, Any]) -> dict[str, Any]:
    spec = dict(pod["spec"])
    for field in ("initContainers", "containers"):
        if field in spec:
            spec[field] = [_expand_container(c, config_maps) for c in spec[field]]
    return pod | {"spec": spec}


def _expand_container(container: dict[str, Any], config_maps: dict[str, Any]) -> dict[str, Any]:
    try:
        env = kubeenv.resolve(container, config_maps)
    except EnvError as err:
        raise RenderError(f"container {container.get('name')}: {err}") from None
    out = {k: v for k, v in container.items() if k != "envFrom"}
    return out | {"env": [{"name": k, "value": v} for k, v in env.items()]}
