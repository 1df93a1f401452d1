"""Admit an MXJob the way the API server would with our CRD: its schema, then its CEL rules.

The CRD's structural schema is checked with `jsonschema` after a small conversion, and its
`x-kubernetes-validations` rules are evaluated by `render`'s own evaluator (app/cli/rules.py,
`cel-python`), each at the node it is declared on, as the API server does. Like the API server, CEL rules are not evaluated when the schema
already found a blocking error (a wrong type, an unsupported enum value, a missing or too long
field, an unknown field); it then reports that some rules were not checked.
"""

import functools
import re
from collections.abc import Iterator
from typing import Any

import jsonschema

from app.cli import rules as crd_rules
from app.cli import schema as render_schema

CRD_FILE = render_schema.CRD_FILE

NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
# jsonschema keywords whose failure the API server reports as Required, NotSupported, TooLong,
# TooMany or TypeInvalid (which skip CEL), or rejects as an unknown field before validating.
_BLOCKING = {"type", "anyOf", "enum", "required", "maxLength", "maxItems", "maxProperties"}
_BLOCKING |= {"additionalProperties"}


def openapi_schema() -> dict[str, Any]:
    """The CRD's schema, as `render` reads it (read once: callers do not change it)."""
    return render_schema.crd_schema()


def admission_errors(obj: dict[str, Any]) -> list[str]:
    """Every error the API server would report for `obj`, as `path: message`, sorted."""
    found = list(_schema_errors(obj))
    errors = sorted(f"{path}: {message}" for path, message, _ in found)
    if any(keyword in _BLOCKING for _, _, keyword in found):
        return sorted([*errors, f": {NOT_CHECKED}"])
    return sorted(errors + cel_errors(obj))


def cel_errors(obj: dict[str, Any]) -> list[str]:
    """Messages of the CEL rules that `obj` breaks, as `path: message`, sorted."""
    # The cases name a replica spec as `spec.mxReplicaSpecs.Worker`, the evaluator as the API
    # server does, `spec.mxReplicaSpecs[Worker]` (tests/support/wording.py turns one to the other).
    found = (str(problem) for problem in crd_rules.broken(openapi_schema(), obj))
    return sorted(re.sub(r"\[([A-Za-z]\w*)\]", r".\1", line) for line in found)


def rules() -> list[dict[str, Any]]:
    """Every x-kubernetes-validations rule of the CRD."""
    return list(crd_rules.every_rule(openapi_schema()))


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = _closed(openapi_schema(), root=True)
    return jsonschema.Draft202012Validator(schema)


def _closed(node: Any, root: bool = False) -> Any:
    """The schema with unknown fields rejected, as kubectl's strict field validation does,
    except where the CRD preserves them and in the object's own metadata."""
    if isinstance(node, list):
        return [_closed(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _closed(value) for key, value in node.items() if key != "properties"}
    if "properties" in node:
        out["properties"] = {
            key: _closed(value) if not (root and key == "metadata") else value
            for key, value in node["properties"].items()
        }
    open_ = node.get("x-kubernetes-preserve-unknown-fields") or "additionalProperties" in node
    if node.get("type") == "object" and not open_:
        out["additionalProperties"] = False
    return out


def _schema_errors(obj: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    for error in _validator().iter_errors(obj):
        yield _path(error.absolute_path), error.message, str(error.validator)


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out.lstrip(".")
