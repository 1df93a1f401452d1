"""How the API server words the admission errors that tests/manifests/test_crd.py's tables expect.

Those tables give each error as `path: message`, in the words of `jsonschema` (schema keywords)
and of the CRD itself (CEL rules, whose `message` the API server prints unchanged). The API
server rejects in three stages, and the first stage that finds something is all it reports:
1. decoding: an unknown field. Server-side apply says so when it builds its typed patch
   (`.spec.x: field not declared in schema`); a plain create, with kubectl's strict field
   validation, says `strict decoding error: unknown field "spec.x"`.
2. server-side apply only, building the typed patch: a value of the wrong type
   (`.spec.runPolicy.suspend: expected boolean, got ...`). A plain create reports it in stage 3.
3. validation: schema keywords (`Invalid value`, `Unsupported value`, `Too long`) and the CEL
   rules, the latter only if the schema found nothing that blocks them.
"""

import ast
import functools
import re

from tests.support.crd_admission import NOT_CHECKED, openapi_schema, rules

LABEL_VALUE_LENGTH = 63

_MINIMUM = re.compile(r"(?P<value>-?\d+) is less than the minimum of (?P<minimum>\d+)")
_ENUM = re.compile(r"'(?P<value>.*)' is not one of (?P<values>\[.*\])")
_PATTERN = re.compile(r"'(?P<value>.*)' does not match '(?P<pattern>.*)'")
_TOO_LONG = re.compile(r"'.*' is too long")
_REQUIRED = re.compile(r"'(?P<field>\w+)' is a required property")
_EMPTY = re.compile(r"'' should be non-empty")
_TYPE = re.compile(r"'.*' is not of type '(?P<type>\w+)'")
_UNKNOWN = re.compile(
    r"Additional properties are not allowed \('(?P<field>[^']+)' was unexpected\)"
)
# The API server's phrases for CEL rule reasons, and for a typed-patch type error.
_REASONS = {"FieldValueRequired": "Required value", "FieldValueInvalid": 'Invalid value: "object"'}
_EXPECTED_TYPE = {
    "integer": "expected numeric (int or float), got",
    "boolean": "expected boolean, got",
}


def server_side_apply(errors: list[str]) -> list[str]:
    """What kubectl prints when server-side apply of a job with these `errors` is refused."""
    found = [_split(error) for error in errors]
    early = [line for path, message in found if (line := _typed_patch(path, message))]
    return early or [_validation(path, message) for path, message in found]


def create(errors: list[str]) -> list[str]:
    """What kubectl prints when `kubectl create` (or a client-side apply) is refused."""
    found = [_split(error) for error in errors]
    early = [
        f'unknown field "{path}.{m["field"]}"'
        for path, message in found
        if (m := _UNKNOWN.fullmatch(message))
    ]
    return early or [_validation(path, message) for path, message in found]


def _split(error: str) -> tuple[str, str]:
    path, _, message = error.partition(": ")
    return path, message


def _typed_patch(path: str, message: str) -> str | None:
    if m := _UNKNOWN.fullmatch(message):
        return f".{path}.{m['field']}: field not declared in schema"
    if m := _TYPE.fullmatch(message):
        return f".{path}: {_EXPECTED_TYPE[m['type']]}"
    return None


def _validation(path: str, message: str) -> str:
    if message in _cel_reasons():
        return f"{_cel_path(path)}: {_REASONS[_cel_reasons()[message]]}: {message}"
    if not path:
        return f'<nil>: Invalid value: "null": {NOT_CHECKED}'
    if m := _REQUIRED.fullmatch(message):
        return f"{path}.{m['field']}: Required value"
    return f"{path}: {_schema_message(path, message)}"


def _schema_message(path: str, message: str) -> str:
    if m := _MINIMUM.fullmatch(message):
        return f"Invalid value: {m['value']}: {path} in body should be greater than or equal to {m['minimum']}"
    if m := _ENUM.fullmatch(message):
        supported = ", ".join(f'"{value}"' for value in ast.literal_eval(m["values"]))
        return f'Unsupported value: "{m["value"]}": supported values: {supported}'
    if m := _PATTERN.fullmatch(message):
        pattern = m["pattern"].replace("\\\\", "\\")  # jsonschema quotes it with repr()
        return f"Invalid value: \"{m['value']}\": {path} in body should match '{pattern}'"
    if _EMPTY.fullmatch(message):
        return f'Invalid value: "": {path} in body should be at least 1 chars long'
    if _TOO_LONG.fullmatch(message) and (path == "metadata.name" or ".labels." in path):
        meta = openapi_schema()["properties"]["metadata"]["properties"]
        limit = meta["name"]["maxLength"] if path == "metadata.name" else LABEL_VALUE_LENGTH
        return f"Too long: may not be more than {limit} bytes"
    if m := _TYPE.fullmatch(message):
        return f'Invalid value: "string": {path} in body must be of type {m["type"]}: "string"'
    raise AssertionError(f"no API-server wording known for {path}: {message}")


def _cel_path(path: str) -> str:
    """CEL errors name a replica spec by its map key in brackets: spec.mxReplicaSpecs[Worker]."""
    return re.sub(r"mxReplicaSpecs\.(\w+)", r"mxReplicaSpecs[\1]", path)


@functools.cache
def _cel_reasons() -> dict[str, str]:
    """Each CEL rule's message (folded as YAML folds it) and its reason."""
    return {
        " ".join(rule["message"].split()): rule.get("reason", "FieldValueInvalid")
        for rule in rules()
    }
