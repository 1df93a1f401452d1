"""An MXJob checked the way the API server holding the shipped CRD checks one it is asked to
create with strict field validation (`kubectl create --validate=strict`): the version served,
the keys given once, the object's metadata, every field known, nulls pruned and defaults filled
in, the structural schema, then the CRD's CEL rules."""

import functools
from dataclasses import dataclass, field
from typing import Any

from app.cli import objectmeta, rules, schema, structural
from app.cli.structural import Problem

NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
# mxnet-operator's version whose fields the v1 CRD accepts (docs/behaviour.md, legacy fields).
LEGACY_VERSIONS = {"kubeflow.org/v1beta1"}


@dataclass(frozen=True)
class Verdict:
    """The job as the API server would store it, and why it would refuse it (none: admitted)."""

    job: dict[str, Any]
    problems: list[Problem] = field(default_factory=list)


@functools.cache
def served() -> tuple[str, ...]:
    """The apiVersions the CRD serves (`kubeflow.org/v1`)."""
    crd = schema.crd()
    group = crd["spec"]["group"]
    return tuple(f"{group}/{v['name']}" for v in crd["spec"]["versions"] if v.get("served"))


def admit(job: dict[str, Any], twice: tuple[str, ...] = ()) -> Verdict:
    """The API server's verdict on creating `job` (an MXJob read from YAML in which the keys
    `twice` were given twice), every problem found, not only the first."""
    found = [Problem("", line) for line in twice] + _version(job.get("apiVersion"))
    found += objectmeta.problems(job.get("metadata"))
    # Status is the controller's to write; a dump of stored jobs carries the server's fields.
    written = {k: v for k, v in job.items() if k != "status"}
    if isinstance(written.get("metadata"), dict):
        written["metadata"] = objectmeta.as_written(written["metadata"])
    found += [Problem("", line) for line in schema.unknown_fields(written)]
    root = schema.crd_schema()
    stored = structural.admitted(written, root)
    seen = {p.path for p in found}
    found += [p for p in structural.problems(stored, root) if p.path not in seen]
    if any(p.blocking for p in found):
        found.append(Problem("", NOT_CHECKED))
    elif isinstance(stored.get("metadata"), dict) and stored["metadata"].get("name"):
        found += rules.broken(root, stored)
    return Verdict(stored, found)


def _version(api_version: Any) -> list[Problem]:
    if api_version in served():
        return []
    versions = " and ".join(served())
    if api_version is None:
        return [Problem("apiVersion", f"Required value: an MXJob's is {versions}", True)]
    hint = (
        f" (mxnet-operator's {api_version} fields are accepted under {versions}: set that)"
        if api_version in LEGACY_VERSIONS
        else ""
    )
    message = f'Unsupported value: "{api_version}": the CRD serves MXJob as {versions} only{hint}'
    return [Problem("apiVersion", message, True)]
