"""What Metacontroller last applied to a child: its last-applied annotation, or under server-side
apply, which keeps none, the child cut down to the fields (`managedFields`' `fieldsV1`) of the
entry whose apply set this job's owner reference, whatever its field manager's name; and every
observed child as its own desired state, the answer while a spec is invalid."""

from collections.abc import Callable
from typing import Any

import orjson

from app.core.model import envelope
from app.core.model.values import ascii_int

LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"
Child = dict[str, Any]
MAX_DEPTH = 64  # an object nested deeper than any Kubernetes type: the entry is not trusted


class _Unreadable(Exception):
    pass


def applied_configuration(
    child: Child, owner_uid: str, api_version: str, kind: str
) -> Child | None:
    """The configuration Metacontroller last applied to `child` (by server-side apply, as the
    controller of the job `owner_uid`), or None if `child` records no such apply."""
    entry = _controller_entry(child, owner_uid)
    if entry is None:
        return None
    try:
        applied = _extract(child, entry, 0)
    except _Unreadable:
        return None
    if not isinstance(applied, dict):
        return None
    meta = applied.get("metadata", {})
    observed = child["metadata"]
    identity = {k: observed[k] for k in ("name", "namespace") if k in observed}
    return {**applied, "apiVersion": api_version, "kind": kind, "metadata": identity | meta}


def _controller_entry(child: Child, owner_uid: str) -> dict[str, Any] | None:
    meta = child.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, dict) else None
    if not isinstance(entries, list) or not owner_uid:
        return None
    found = [
        entry["fieldsV1"]
        for entry in entries
        if isinstance(entry, dict)
        and entry.get("operation") == "Apply"
        and isinstance(entry.get("fieldsV1"), dict)
        and _sets_owner(entry["fieldsV1"], owner_uid)
    ]
    return found[0] if len(found) == 1 else None


def _sets_owner(fields: dict[str, Any], owner_uid: str) -> bool:
    meta = fields.get("f:metadata")
    refs = meta.get("f:ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(refs, dict):
        return False
    for element in refs:
        if isinstance(element, str) and element.startswith("k:"):
            try:
                if _key(element).get("uid") == owner_uid:
                    return True
            except _Unreadable:
                continue
    return False


def _key(element: str) -> dict[str, Any]:
    try:
        value = orjson.loads(element[2:])
    except orjson.JSONDecodeError:
        raise _Unreadable from None
    if not isinstance(value, dict):
        raise _Unreadable
    return value


def _extract(value: Any, fields: Any, depth: int) -> Any:
    """`value` cut down to the paths in `fields` (structured-merge-diff's `fieldsV1`: `f:<name>`
    a field, `k:<json>` a keyed list's item, `v:<json>` a set's, `i:<n>` an index's, `.` the
    item itself; a path with nothing under it owns its value whole)."""
    if not isinstance(fields, dict) or depth > MAX_DEPTH:
        raise _Unreadable
    elements = [key for key in fields if key != "."]
    if not elements:
        return value
    if isinstance(value, dict):
        out = {}
        for element in elements:
            if not element.startswith("f:"):
                raise _Unreadable
            name = element[2:]
            if name in value:
                out[name] = _extract(value[name], fields[element], depth + 1)
        return out
    if isinstance(value, list):
        matchers = [(_matcher(element), fields[element]) for element in elements]
        items = []
        for index, item in enumerate(value):
            for matches, under in matchers:
                if matches(index, item):
                    items.append(_extract(item, under, depth + 1))
                    break
        return items
    raise _Unreadable  # paths under a scalar


def _matcher(element: str) -> Callable[[int, Any], bool]:
    prefix, text = element[:2], element[2:]
    if prefix == "k:":
        keys = _key(element)
        return lambda _, item: (
            isinstance(item, dict) and all(k in item and item[k] == v for k, v in keys.items())
        )
    if prefix == "v:":
        try:
            wanted = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise _Unreadable from None
        return lambda _, item: item == wanted
    if prefix == "i:" and (position := ascii_int(text)) is not None:
        return lambda index, _: index == position
    raise _Unreadable


def kept_as_observed(request: envelope.SyncRequest) -> list[Child]:
    """Every observed child as its own desired state: what an invalid spec is answered with."""
    owner = request.parent.metadata.uid or ""
    return [
        _as_observed(child, kind, owner)
        for kind in sorted(request.children)
        for child in request.observed(kind)
    ]


def _as_observed(child: Child, child_type: str, owner_uid: str) -> Child:
    """An observed child as its own desired state, which changes nothing: what Metacontroller
    last applied (its annotation, or under server-side apply its `managedFields` entry), else the
    child's identity, labels and spec (docs/behaviour.md#validation)."""
    kind, _, api_version = child_type.partition(".")
    applied = _last_applied(child, api_version, kind)
    if applied is None:
        applied = applied_configuration(child, owner_uid, api_version, kind)
    if applied is not None:
        return applied
    meta = child.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    if isinstance(kept.get("annotations"), dict):
        kept["annotations"] = {k: v for k, v in kept["annotations"].items() if k != LAST_APPLIED}
        if not kept["annotations"]:
            del kept["annotations"]
    out = {"apiVersion": api_version, "kind": kind}
    out |= {k: child[k] for k in ("spec", "data", "binaryData") if k in child}
    return out | {"metadata": kept}


def _last_applied(child: Child, api_version: str, kind: str) -> Child | None:
    """What Metacontroller last applied to this child, if its annotation holds this child."""
    meta = child.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not isinstance(text, str):
        return None
    try:
        applied = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(applied, dict) or not isinstance(applied.get("metadata"), dict):
        return None
    assert isinstance(meta, dict)
    mine = [api_version, kind, meta.get("name"), meta.get("namespace")]
    names = [applied["metadata"].get("name"), applied["metadata"].get("namespace")]
    return applied if [applied.get("apiVersion"), applied.get("kind"), *names] == mine else None
