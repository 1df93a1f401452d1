"""`python -m app render` refuses what the API server's strict field validation refuses: every
field the CRD's schema does not know, named with its path; legacy fields are accepted, noted."""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli.admission import NOT_CHECKED
from app.cli.schema import unknown_to
from tests.support import REPO, cli
from tests.support import jobs as s


def mxjobs(path: Path) -> list[Any]:
    text = path.read_text()
    if not re.search(r'^kind: *"?MXJob"? *$', text, re.MULTILINE):
        return []  # not a job: a CRD, roles, Helm templates
    documents = yaml.safe_load_all(text)
    return [d for d in documents if isinstance(d, dict) and d.get("kind") == "MXJob"]


# Every MXJob the project ships, and those it keeps as training-operator's and mxnet-operator's.
MANIFESTS = sorted(
    path for folder in ("examples", "tests/fixtures") for path in (REPO / folder).rglob("*.yaml")
    if mxjobs(path)
)  # fmt: skip
WORKER = "spec.mxReplicaSpecs.Worker"
CONTAINER = f"{WORKER}.template.spec.containers[0]"


def render(*jobs: Any) -> tuple[int, list[str]]:
    """`mxjob-controller render -` of `jobs`: the exit code and the lines on stderr."""
    done = cli.run("render", "-", stdin=yaml.safe_dump_all(jobs))
    return done.returncode, done.stderr.replace("render: -: ", "").splitlines()


def with_field(path: str, value: Any) -> dict[str, Any]:
    """The single-Worker job with `value` set at the dotted `path` (a list index as `[0]`)."""
    job = s.mxjob({"mxReplicaSpecs": {"Worker": s.replica(1, "Never")}})
    *parents, last = path.replace("[0]", ".0").split(".")
    node: Any = job
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[last] = value
    return job


@pytest.mark.parametrize(
    ("path", "value", "hint"),
    [
        pytest.param("spec.runPolicy.backofLimit", 3, "backoffLimit", id="run-policy"),
        pytest.param(f"{CONTAINER}.comand", ["python"], "command", id="container-command"),
        pytest.param(f"{WORKER}.replica", 2, "replicas", id="replica-spec"),
        pytest.param(
            f"{WORKER}.template.metadata.lables", {"a": "b"}, "labels", id="template-meta"
        ),
        pytest.param("metadata.anotations", {"a": "b"}, "annotations", id="job-metadata"),
        pytest.param("spec.jobmode", "MXTrain", "jobMode", id="letter-case"),
        pytest.param(f"{CONTAINER}.resources.limit", {"cpu": 1}, "limits", id="deep"),
        pytest.param("spec.flavour", "x", None, id="nothing-close"),
    ],
)
def test_an_unknown_field_is_named_with_its_path(
    path: str,
    value: Any,
    hint: str | None,
) -> None:
    code, err = render(with_field(path, value))
    suggestion = f', did you mean "{hint}"?' if hint else ""
    assert (code, err) == (1, [f'default/mnist: unknown field "{path}"{suggestion}'])


def test_imagee_is_named_as_the_unknown_field_it_is() -> None:
    job = with_field(f"{CONTAINER}.imagee", "mxnet:1.9.1")
    del job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
    assert render(job) == (1, [
        f'default/mnist: unknown field "{CONTAINER}.imagee", did you mean "image"?',
        f"default/mnist: {CONTAINER}.image: Required value",
        f"default/mnist: {NOT_CHECKED}",
    ])  # fmt: skip


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shipped_and_upstream_manifest_renders(manifest: Path) -> None:
    """Exit 0 with nothing on stderr; mxnet-operator's and training-operator's legacy manifests
    may get notes, the project's own examples not even those."""
    code, err = render(*mxjobs(manifest))
    legacy = manifest.is_relative_to(REPO / "tests" / "fixtures")
    assert (code, [line for line in err if not (legacy and ": note: " in line)]) == (0, [])


def test_the_upstream_manifests_are_all_there() -> None:
    names = {str(p.relative_to(REPO)) for p in MANIFESTS}
    assert {"examples/dist-cpu.yaml", "examples/kueue/job.yaml"} <= names
    assert len([n for n in names if n.startswith("tests/fixtures/legacy/")]) == 8


def test_legacy_fields_are_accepted_and_noted() -> None:
    job = s.mxjob({
        "cleanPodPolicy": "All",
        "backoffLimit": 1,
        "runPolicy": {"backoffLimit": 2},
        "mxReplicaSpecs": {"worker": s.replica(1, "Never") | {"label": "gpu"}},
    })  # fmt: skip
    assert render(job) == (0, [
        "default/mnist: note: spec.cleanPodPolicy: mxnet-operator's place for it, accepted as "
        "spec.runPolicy.cleanPodPolicy",
        "default/mnist: note: spec.backoffLimit: mxnet-operator's place for it, accepted as "
        "spec.runPolicy.backoffLimit (spec.runPolicy's wins)",
        "default/mnist: note: spec.mxReplicaSpecs.worker: accepted as Worker (any case)",
        "default/mnist: note: spec.mxReplicaSpecs.worker.label: the legacy tune label, accepted "
        "(the template's annotation tuner-server-key wins)",
    ])  # fmt: skip


def test_a_job_read_from_a_cluster_passes() -> None:
    """`kubectl get mxjobs -o yaml` adds the server's metadata, and training-operator's status
    fields the CRD does not declare; the API server drops those, so render does not name them."""
    job = s.mxjob({"mxReplicaSpecs": {"Worker": s.replica(1, "Never")}}, "old")
    job["metadata"] |= {
        "resourceVersion": "42",
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "managedFields": [{"manager": "kubectl", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:spec": {"f:mxReplicaSpecs": {}}}}],
    }  # fmt: skip
    job["status"] = {"lastReconcileTime": "2024-01-01T00:00:00Z", "conditions": []}
    listed = {"apiVersion": "v1", "kind": "List", "items": [job], "metadata": {}}
    assert render(listed) == (0, [])


OBJECT = {"type": "object", "properties": {"known": {"type": "string"}}}


@pytest.mark.parametrize(
    ("schema", "value", "unknown"),
    [
        pytest.param(OBJECT, {"known": "a", "other": 1}, ['unknown field "other"'], id="closed"),
        pytest.param(
            OBJECT | {"x-kubernetes-preserve-unknown-fields": True}, {"other": 1}, [],
            id="preserve-unknown-fields",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": OBJECT}, {"any": {"knwon": "a"}},
            ['unknown field "any.knwon", did you mean "known"?'], id="additional-properties",
        ),
        pytest.param(OBJECT | {"additionalProperties": True}, {"other": 1}, [], id="open-map"),
        pytest.param({"type": "object"}, {"other": 1}, [], id="opaque"),
        pytest.param(
            {"type": "array", "items": OBJECT}, [{"known": "a"}, {"x": 1}],
            ['unknown field "[1].x"'], id="list-items",
        ),
        pytest.param(OBJECT, {"known": {"deeper": 1}}, [], id="a-wrong-type-is-not-unknown"),
    ],
)  # fmt: skip
def test_the_schema_rules(schema: dict[str, Any], value: Any, unknown: list[str]) -> None:
    assert unknown_to(schema, value) == unknown
