"""The corpus of the differential test of `render` (tests/apiserver/test_render_differential.py):
MXJob manifests as users write them, valid and invalid, across every kind of field of the CRD's
schema (types, int-or-string, quantities, enums, bounds, required fields, maps and lists), the
job's own metadata (names, generateName, labels, annotations, finalizers), nulls the API server
prunes, versions it does not serve, keys given twice, CEL rules and streams of several
documents. No case says what its verdict should be: the real API server decides.

Public: `CASES`, a list of `Case(id, text, as_written)`; `as_written` marks the cases whose
verdict the API server gives on the document's bytes (keys given twice, which kubectl's YAML to
JSON conversion drops before sending)."""

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from tests.support import REPO
from tests.support.jobs import one_worker_job
from tests.support.render_corpus_fields import FIELDS, NULLS, C, W


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    as_written: bool = False


def base(name: str = "job") -> dict[str, Any]:
    """The quick start's one-Worker job, with a run policy and a command to vary."""
    job = one_worker_job(name, "mxnet/python:1.9.1_native_py3")
    job["spec"] = {"runPolicy": {"cleanPodPolicy": "Running"}, **job["spec"]}
    (container,) = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    container["command"] = ["python"]
    return job


def _set(job: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    node: Any = job
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    if last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return job


def _delete(job: dict[str, Any], path: str) -> dict[str, Any]:
    *parents, last = path.split(".")
    node: Any = job
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    del node[last]
    return job


def setting(path: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda job: _set(job, path, value)


def removing(path: str) -> Callable[[dict[str, Any]], Any]:
    return lambda job: _delete(job, path)


def _edited(edit: Callable[[dict[str, Any]], Any], name: str = "job") -> str:
    job = base(name)
    edit(job)
    return yaml.safe_dump(job, sort_keys=False)


def _versions() -> list[Case]:
    versions = [
        "kubeflow.org/v1beta1",
        "kubeflow.org/v1alpha1",
        "kubeflow.org/v2",
        "v1",
        "kubeflow.org",
    ]
    cases = [Case(f"version-{v.replace('/', '-')}", _edited(setting("apiVersion", v)))
             for v in versions]  # fmt: skip
    cases.append(Case("version-none", _edited(lambda j: j.pop("apiVersion"))))
    cases.append(Case("kind-mxjob-lower", _edited(lambda j: j.update(kind="MxJob"))))
    return cases


def _names() -> list[Case]:
    def generated(prefix: str) -> Callable[[dict[str, Any]], Any]:
        return lambda j: j.update(metadata={"generateName": prefix})

    return [
        Case("generate-name", _edited(generated("job-"))),
        Case("generate-name-no-dash", _edited(generated("job"))),
        Case("generate-name-upper", _edited(generated("Job-"))),
        Case("generate-name-long", _edited(generated("j" * 60 + "-"))),
        Case("no-name", _edited(lambda j: j.update(metadata={}))),
        Case("no-metadata", _edited(lambda j: j.pop("metadata"))),
        Case("no-spec", _edited(lambda j: j.pop("spec"))),
        Case("name-and-type-too-long", _edited(lambda j: None, "j" * 50)),
    ]


# Keys given twice (in the job, the spec, a container) and the YAML users leave behind.
TEXT = {
    "twice-replicas": "replicas: 1\n      replicas: 2",
    "twice-same-value": "replicas: 1\n      replicas: 1",
    "twice-restart-policy": "restartPolicy: Never\n      restartPolicy: Never",
    "twice-image": "image: mxnet/python:1.9.1_native_py3\n            image: mxnet/python:1.9.1_native_py3",
    "run-policy-commented-out": "runPolicy:\n    cleanPodPolicy: Running",
    "replicas-left-empty": "replicas: 1",
    "restart-policy-left-empty": "restartPolicy: Never",
}
REPLACEMENTS = {
    "run-policy-commented-out": "runPolicy:\n    # cleanPodPolicy: Running",
    "replicas-left-empty": "replicas:",
    "restart-policy-left-empty": "restartPolicy: # Never, for now",
}


def _text_cases() -> list[Case]:
    text = yaml.safe_dump(base(), sort_keys=False)
    cases = []
    for name, snippet in TEXT.items():
        old = snippet.split("\n")[0] if name.startswith("twice") else snippet
        new = snippet if name.startswith("twice") else REPLACEMENTS[name]
        assert old in text, (name, old)
        cases.append(Case(name, text.replace(old, new, 1), as_written=name.startswith("twice")))
    twice_top = "apiVersion: kubeflow.org/v1\n" + text
    cases.append(Case("twice-api-version", twice_top, as_written=True))
    return cases


def _streams() -> list[Case]:
    def dump(*documents: Any) -> str:
        return yaml.safe_dump_all(documents, sort_keys=False)

    bad = _set(base("bad"), f"{W}.replicas", "2")
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {}}
    listed = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": [base("a"), base("b")]}
    return [
        Case("stream-two-jobs", dump(base("a"), base("b"))),
        Case("stream-second-bad", dump(base("a"), bad)),
        Case("stream-configmap-first", dump(config_map, base("a"))),
        Case("stream-configmap-then-bad", dump(config_map, bad)),
        Case("list-two-jobs", dump(listed)),
        Case("list-one-bad", dump(listed | {"items": [base("a"), bad]})),
        Case("mxjob-list", dump(listed | {"apiVersion": "kubeflow.org/v1", "kind": "MXJobList"})),
    ]


def _rules() -> list[Case]:
    def two_workers(j: dict[str, Any]) -> None:
        j["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 2

    def both_cases(j: dict[str, Any]) -> None:
        j["spec"]["mxReplicaSpecs"]["worker"] = copy.deepcopy(j["spec"]["mxReplicaSpecs"]["Worker"])

    def tune_without_tuner(j: dict[str, Any]) -> None:
        j["spec"]["jobMode"] = "MXTune"

    def huge(j: dict[str, Any]) -> None:
        j["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 5000

    def no_container_name(j: dict[str, Any]) -> None:
        del j["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"]

    edits = [two_workers, both_cases, tune_without_tuner, huge, no_container_name]
    return [Case(f"rule-{e.__name__.replace('_', '-')}", _edited(e)) for e in edits]


def _shipped() -> list[Case]:
    folders = [
        REPO / "examples",
        REPO / "examples" / "kueue",
        REPO / "tests" / "fixtures" / "legacy",
    ]
    paths = sorted(p for f in folders for p in f.glob("*.yaml") if "kind: MXJob" in p.read_text())
    return [Case(f"file-{p.parent.name}-{p.stem}", p.read_text()) for p in paths]


CASES: list[Case] = [
    Case(f"field-{name}", _edited(setting(path, value)))
    for name, path, value in FIELDS
] + [
    Case(f"null-{path.replace('.', '-')}", _edited(setting(path, None)))
    for path in NULLS
] + [
    Case("unknown-" + field.rsplit(".", 1)[-1], _edited(setting(field, 1)))
    for field in ("spec.runPolicy.backofLimit", f"{W}.replica", f"{C}.comand", "metadata.lables")
] + [
    Case("removed-" + path.rsplit(".", 1)[-1], _edited(removing(path)))
    for path in (f"{C}.image", f"{C}.name", f"{W}.template", f"{W}.template.spec")
] + _versions() + _names() + _text_cases() + _streams() + _rules() + _shipped()  # fmt: skip
