"""Fields of a manifest that the MXJob CRD's schema does not know, as the API server finds them."""

import difflib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

# The CRD as shipped, beside this module: in a checkout a link to manifests/base/crd.yaml, in an
# installed package (and the image) the file itself (pyproject.toml, package-data).
CRD_FILE = Path(__file__).with_name("crd.yaml")
# libyaml where PyYAML has it (its wheels do): the same objects, read several times faster.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The closest known field is named when difflib rates it this similar (0 to 1).
CLOSE = 0.75


@functools.cache
def crd() -> dict[str, Any]:
    """The CRD as shipped (read once: callers do not change it)."""
    loaded: dict[str, Any] = yaml.load(CRD_FILE.read_text(), Loader=LOADER)
    return loaded


@functools.cache
def crd_schema() -> dict[str, Any]:
    """The CRD's openAPIV3Schema (read once: callers do not change it)."""
    (version,) = crd()["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def unknown_fields(job: Any) -> list[str]:
    """One line per field of `job` the API server's strict field validation would refuse."""
    if not isinstance(job, dict):
        return []
    schema = crd_schema()
    # The API server reads an object's own metadata as ObjectMeta, whose schema the CRD carries
    # for the pod template; status is the controller's to write, and a job read from a cluster
    # carries what its old controller wrote there (training-operator's lastReconcileTime).
    template = schema["properties"]["spec"]["properties"]["mxReplicaSpecs"]
    object_meta = template["additionalProperties"]["properties"]["template"]["properties"]
    root = {
        "type": "object",
        "properties": schema["properties"] | {"metadata": object_meta["metadata"]},
    }
    return unknown_to(root, {k: v for k, v in job.items() if k != "status"})


def unknown_to(schema: dict[str, Any], value: Any) -> list[str]:
    """One line per field of `value` that the structural `schema` does not know."""
    return list(_walk(schema, value, ""))


def _walk(schema: dict[str, Any], value: Any, path: str) -> Iterator[str]:
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for n, item in enumerate(value):
            yield from _walk(schema["items"], item, f"{path}[{n}]")
    if not isinstance(value, dict) or _open(schema):
        return
    known = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        field = f"{path}.{key}" if path else str(key)
        if key in known:
            yield from _walk(known[key], item, field)
        elif isinstance(extra, dict):
            yield from _walk(extra, item, field)
        elif extra is not True:
            yield _unknown(field, str(key), known)


def _open(schema: dict[str, Any]) -> bool:
    # An object the schema declares no field of is opaque to it (Kubernetes' FieldsV1).
    declared = "properties" in schema or "additionalProperties" in schema
    return bool(schema.get("x-kubernetes-preserve-unknown-fields")) or not declared


def _unknown(field: str, key: str, known: dict[str, Any]) -> str:
    by_lowered = {name.lower(): name for name in known}
    close = difflib.get_close_matches(key.lower(), by_lowered, n=1, cutoff=CLOSE)
    hint = f', did you mean "{by_lowered[close[0]]}"?' if close else ""
    return f'unknown field "{field}"{hint}'
