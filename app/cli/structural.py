"""The CRD's structural schema applied as the API server applies it to a custom resource it is
asked to create: nulls pruned, defaults filled in, then every value checked against its
schema's type, enum, pattern, bounds and required fields (`jsonschema` does the checking)."""

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jsonschema

# Kubernetes' quantity pattern (resource.Quantity), as the generated pod template carries it.
QUANTITY_HINT = "a quantity such as 500m, 2, 1.5, 4Gi or 512M"
# The kinds of failure the API server reports as TypeInvalid, NotSupported, Required, TooLong or
# TooMany: after one, it does not evaluate the x-kubernetes-validations rules.
BLOCKING = {"type", "anyOf", "enum", "required", "maxLength", "maxItems", "maxProperties"}


@dataclass(frozen=True)
class Problem:
    """One refusal: the field's path as the API server writes it, and what is wrong there."""

    path: str
    message: str
    blocking: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def admitted(value: Any, schema: dict[str, Any]) -> Any:
    """`value` as the API server stores it: a null pruned where its schema is not nullable and
    has no default, and each default filled in where its field is left out or null."""
    return _defaulted(_pruned(copy.deepcopy(value), schema), schema)


def _sub(schema: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    if schema is None:
        return None
    if key in schema.get("properties", {}):
        sub: dict[str, Any] = schema["properties"][key]
        return sub
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _pruned(value: Any, schema: dict[str, Any] | None) -> Any:
    # k8s.io/apiextensions-apiserver's PruneNonNullableNullsWithoutDefaults.
    if isinstance(value, dict):
        for key in list(value):
            sub = _sub(schema, key)
            if value[key] is None and sub is not None:
                if not sub.get("nullable") and "default" not in sub:
                    del value[key]
            else:
                _pruned(value[key], sub)
    elif isinstance(value, list) and schema is not None:
        for item in value:
            _pruned(item, schema.get("items"))
    return value


def _defaulted(value: Any, schema: dict[str, Any] | None) -> Any:
    if schema is None:
        return value
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            if "default" in sub and value.get(key) is None:
                value[key] = copy.deepcopy(sub["default"])
        for key in value:
            _defaulted(value[key], _sub(schema, key))
    elif isinstance(value, list):
        for item in value:
            _defaulted(item, schema.get("items"))
    return value


def problems(value: Any, schema: dict[str, Any]) -> list[Problem]:
    """Every value of `value` its schema refuses (unknown fields aside: app/cli/schema.py)."""
    found = [_problem(error) for error in _validator(schema).iter_errors(value)]
    return sorted(set(found), key=lambda p: (p.path, p.message))


_VALIDATORS: dict[int, jsonschema.Draft202012Validator] = {}


def _validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    # By the schema's identity: the CRD's schema is read once (app/cli/schema.py) and kept.
    if id(schema) not in _VALIDATORS:
        _VALIDATORS[id(schema)] = jsonschema.Draft202012Validator(schema)
    return _VALIDATORS[id(schema)]


def _problem(error: jsonschema.ValidationError) -> Problem:
    keyword = str(error.validator)
    path = kube_path(error.absolute_path)
    if keyword == "required":
        missing = str(error.message).split("'")[1]
        return Problem(f"{path}.{missing}".lstrip("."), "Required value", blocking=True)
    return Problem(path, _message(keyword, error), blocking=keyword in BLOCKING)


def _message(keyword: str, error: jsonschema.ValidationError) -> str:
    value: Any = error.instance
    expected: Any = error.validator_value
    shown = f"Invalid value: {_shown(value)}"
    if keyword == "type":
        return f"{shown}: must be of type {expected}, not {type_name(value)}"
    if keyword == "anyOf":
        kinds = " or ".join(str(s.get("type")) for s in expected)
        return f"{shown}: must be of type {kinds}, not {type_name(value)}"
    if keyword == "enum":
        supported = ", ".join(_shown(v) for v in expected)
        return f"Unsupported value: {_shown(value)}: supported values: {supported}"
    if keyword == "pattern":
        if "KMGTPE" in str(expected):
            return f"{shown}: must be {QUANTITY_HINT}"
        return f"{shown}: must match '{expected}'"
    if keyword in ("minimum", "maximum"):
        relation = "greater" if keyword == "minimum" else "less"
        return f"{shown}: must be {relation} than or equal to {expected}"
    if keyword in ("maxLength", "minLength"):
        bound = "longer" if keyword == "maxLength" else "shorter"
        return f"Too long: may not be {bound} than {expected}"
    if keyword in ("maxItems", "maxProperties", "minItems", "minProperties"):
        return f"Too many: {len(value)}: must have at most {expected} items"
    return f"{shown}: {error.message}"


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 60 else f'"{value[:57]}..."'
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int | float):
        return str(value)
    return type_name(value)


def type_name(value: Any) -> str:
    """`value`'s JSON type, as the API server names it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    names = {float: "number", str: "string", list: "array", dict: "object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def kube_path(parts: Any) -> str:
    """A field path as the API server writes it: `spec.containers[0].env`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def walk(schema: dict[str, Any], value: Any, path: str = "") -> Iterator[tuple[Any, Any, str]]:
    """Each node of `value` with its schema and path, parents first; a key of a map (a schema's
    additionalProperties) in brackets, as the API server names it in a CEL rule's error:
    `spec.mxReplicaSpecs[Worker].template`."""
    yield schema, value, path
    if isinstance(value, dict):
        known = schema.get("properties", {})
        for key, item in value.items():
            sub = _sub(schema, str(key))
            if sub is not None:
                step = f".{key}" if key in known else f"[{key}]"
                yield from walk(sub, item, (path + step).lstrip("."))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for n, item in enumerate(value):
            yield from walk(schema["items"], item, f"{path}[{n}]")
