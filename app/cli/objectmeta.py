"""An MXJob's own metadata, checked as the API server checks any object's ObjectMeta at its
creation (k8s.io/apimachinery's ValidateObjectMeta, with the DNS-subdomain names custom
resources take): its fields' types, the name or generateName, labels, annotations, finalizers."""

import re
from typing import Any

from app.cli.structural import Problem, type_name

DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN = re.compile(rf"{DNS_LABEL}(\.{DNS_LABEL})*")
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
ANNOTATIONS_MAX = 256 * 1024
STRINGS = ("name", "generateName", "namespace")
MAPS = ("labels", "annotations")
# What the API server sets: left out of the check, so that a dump of stored jobs
# (`kubectl get mxjobs -o yaml`) is read as what its writer wrote.
SERVER_SET = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)
# The suffix the API server appends to a generateName (five random characters of its
# alphabet): a fixed one here, so that the children `render` prints have names.
GENERATED_SUFFIX = "xxxxx"


def as_written(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` without the fields the API server sets, a name made from a generateName."""
    out = {k: v for k, v in meta.items() if k not in SERVER_SET}
    prefix = out.get("generateName")
    if not out.get("name") and isinstance(prefix, str) and prefix:
        out["name"] = prefix + GENERATED_SUFFIX
    return out


def problems(meta: Any) -> list[Problem]:
    """Every problem the API server finds in the metadata `meta` of an object to create."""
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return [Problem("metadata", f"must be an object, not {type_name(meta)}", blocking=True)]
    found = [
        Problem(f"metadata.{key}", f"must be of type string, not {type_name(meta[key])}", True)
        for key in STRINGS
        if meta.get(key) is not None and not isinstance(meta[key], str)
    ]
    for key in MAPS:
        found += _string_map(meta.get(key), f"metadata.{key}")
    if found:
        return found
    return _names(meta) + _labels(meta) + _annotations(meta) + _finalizers(meta.get("finalizers"))


def _string_map(value: Any, path: str) -> list[Problem]:
    if value is None:
        return []
    if not isinstance(value, dict):
        return [Problem(path, f"must be a map of strings, not {type_name(value)}", True)]
    return [
        Problem(f"{path}.{k}", f"must be of type string, not {type_name(v)}", True)
        for k, v in value.items()
        if not isinstance(v, str)
    ]


def _names(meta: dict[str, Any]) -> list[Problem]:
    name, prefix = meta.get("name"), meta.get("generateName")
    if not name and not prefix:
        return [Problem("metadata.name", "Required value: name or generateName is required", True)]
    found = []
    if name and not _subdomain(name):
        found.append(Problem("metadata.name", f'Invalid value: "{name}": {SUBDOMAIN_RULE}'))
    if prefix and not _subdomain(prefix[:-1] + "a" if prefix.endswith("-") else prefix):
        message = f'Invalid value: "{prefix}": {SUBDOMAIN_RULE}'
        found.append(Problem("metadata.generateName", message))
    namespace = meta.get("namespace")
    if namespace and not (len(namespace) <= 63 and re.fullmatch(DNS_LABEL, namespace)):
        found.append(Problem("metadata.namespace", f'Invalid value: "{namespace}": {LABEL_RULE}'))
    return found


SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (at most 253 characters)"
)
LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (at most 63 characters)"
)
KEY_RULE = (
    "a qualified name must be at most 63 letters, digits, '-', '_' or '.', starting and ending "
    "with a letter or digit, with an optional DNS subdomain prefix and '/' "
    "(e.g. 'example.com/MyName')"
)
VALUE_RULE = (
    "a valid label must be an empty string or at most 63 letters, digits, '-', '_' or '.', "
    "starting and ending with a letter or digit"
)


def _subdomain(name: str) -> bool:
    return len(name) <= 253 and DNS_SUBDOMAIN.fullmatch(name) is not None


def qualified(key: str) -> bool:
    """Whether `key` is a Kubernetes qualified name (a label's or an annotation's key)."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not (prefix and _subdomain(prefix)):
        return False
    return len(name) <= 63 and QUALIFIED_NAME.fullmatch(name) is not None


def _labels(meta: dict[str, Any]) -> list[Problem]:
    found = []
    for key, value in (meta.get("labels") or {}).items():
        if not qualified(key):
            found.append(Problem("metadata.labels", f'Invalid value: "{key}": {KEY_RULE}'))
        if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
            found.append(Problem("metadata.labels", f'Invalid value: "{value}": {VALUE_RULE}'))
    return found


def _annotations(meta: dict[str, Any]) -> list[Problem]:
    annotations = meta.get("annotations") or {}
    found = [
        Problem("metadata.annotations", f'Invalid value: "{key}": {KEY_RULE}')
        for key in annotations
        if not qualified(key.lower())
    ]
    size = sum(len(k) + len(v) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX:
        found.append(
            Problem("metadata.annotations", f"Too long: must have at most {ANNOTATIONS_MAX} bytes")
        )
    return found


def _finalizers(finalizers: Any) -> list[Problem]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        return [Problem("metadata.finalizers", "must be a list of strings", True)]
    return [
        Problem("metadata.finalizers", f'Invalid value: "{f}": {KEY_RULE}')
        for f in finalizers
        if not qualified(f)
    ]
