"""The pieces of the MXJob CRD's case tables: the examples and legacy manifests, merge patches
over them, and the messages of docs/behaviour.md#validation."""

import copy
from pathlib import Path
from typing import Any

from tests.support import FIXTURES, REPO, yamls
from tests.support.crd_admission import NOT_CHECKED

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
LEGACY = sorted((FIXTURES / "legacy").glob("*.yaml"))
UNCHECKED = f": {NOT_CHECKED}"
SPECS = "spec.mxReplicaSpecs"
TRAIN_ONLY = f"{SPECS}: jobMode MXTrain accepts only the replica types Scheduler, Server and Worker"
TUNE_ONLY = (
    f"{SPECS}: jobMode MXTune accepts only the replica types TunerTracker, TunerServer and Tuner"
)
NEEDS_SCHEDULER = (
    f"{SPECS}: jobMode MXTrain needs a Scheduler (1 replica) when it has a Server or more than "
    "one Worker"
)
NEEDS_CONTAINER = "the template needs at least one container (template.spec.containers)"
NOT_DNS_1035 = (
    "metadata.name: must be a DNS-1035 label: lower-case letters, digits and '-', starting "
    "with a letter and ending with a letter or digit"
)
CHILD_NAME_TOO_LONG = (
    "metadata.name: too long: every child name <name>-<replica type>-<index> must fit in 63 "
    "characters (a Service name)"
)
SYNC_TOO_LARGE = (
    "spec.mxReplicaSpecs: the size rule: once every pod runs, a sync request of this job would "
    "carry more than 48 MiB, even before its pod templates are counted; use fewer replicas, "
    "fewer containers or a shorter job name"
)
MX_CONFIG_TOO_LONG = (
    "spec.mxReplicaSpecs: the size rule: MX_CONFIG, which lists every replica of the job, "
    "would not fit in the 131,061 bytes a process's environment variable may hold; use fewer "
    "replicas or a shorter job name"
)


def load(path: Path) -> dict[str, Any]:
    """The manifest at `path`."""
    doc: dict[str, Any] = yamls.load(path.read_text())
    return doc


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: `None` deletes, dicts merge, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def job(base: str, patch: dict[str, Any]) -> dict[str, Any]:
    """The example `base` with a merge `patch`."""
    result: dict[str, Any] = merge(load(REPO / "examples" / base), patch)
    return result


def containers(*items: dict[str, Any]) -> dict[str, Any]:
    return {"template": {"spec": {"containers": list(items)}}}


def worker(patch: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"mxReplicaSpecs": {"Worker": patch}}}


def run_policy(**fields: Any) -> dict[str, Any]:
    return {"spec": {"runPolicy": fields}}


MXNET = {"name": "mxnet", "image": "mxjob/mxnet:1.9.1"}
QUEUE_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_VALUE_PATTERN = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
KEYS = (
    "keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 "
    "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)
BAD_KEYS = {
    "with-a-space": "bad key",
    "64-characters": "k" * 64,
    "leading-dash": "-team",
    "upper-case-prefix": "Example.com/team",
    "empty-name-after-prefix": "example.com/",
    # Its name and pattern are right; a DNS subdomain has at most 253 characters.
    "255-character-prefix": ".".join(["a" * 63] * 4) + "/team",
}
SUBDOMAIN_253 = ".".join(["a" * 63] * 3 + ["a" * 61])
BAD_VALUES = {"with-a-space": "a b", "leading-dash": "-a", "trailing-dot": "a."}


def case(base: str, patch: dict[str, Any], *errors: str, hook: bool = True) -> Any:
    """An invalid job: `base` example with a merge `patch`, and every error admission reports.
    `hook=False` marks a case only the CRD rejects: the hook ignores the field, or (legacy
    placement) lets spec.runPolicy override the invalid value before checking it."""
    return (job(base, patch), list(errors), hook)
