"""app/core/validate/templates.py on its own: what Kubernetes would refuse on a replica's pod,
said at validation with the path the user wrote (docs/behaviour.md#validation)."""

import copy
from typing import Any

import pytest

from app.core.model.spec import ReplicaSpec, ReplicaType
from app.core.validate.templates import subdomain, template_problems

FIELD = "spec.mxReplicaSpecs.Worker.template"
GOOD: dict[str, Any] = {
    "metadata": {"labels": {"team": "vision"}, "annotations": {"example.com/owner": "ml"}},
    "spec": {"containers": [{"name": "mxnet", "image": "mxnet:1.9.1",
                             "ports": [{"containerPort": 9091}]}]},
}  # fmt: skip


def problems(template: dict[str, Any]) -> list[str]:
    return template_problems(ReplicaType.WORKER, ReplicaSpec(template=template))


def with_(path: str, value: Any) -> dict[str, Any]:
    """GOOD with one value replaced, at a dotted path (a number indexes a list)."""
    template = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node: Any = template
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[int(last) if last.isdigit() else last] = value
    return template


def test_a_good_template_has_no_problem() -> None:
    assert problems(GOOD) == []
    assert problems({"spec": GOOD["spec"]}) == []  # no metadata at all


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("metadata", [], f"{FIELD}.metadata: must be an object"),
        ("metadata.labels", {"a": 1}, f"{FIELD}.metadata.labels: must map strings to strings"),
        ("metadata.labels", {"-bad": "x"}, f"{FIELD}.metadata.labels: key '-bad' must be"),
        ("metadata.labels", {"Bad_Prefix/x": "y"}, "key 'Bad_Prefix/x' must be"),
        ("metadata.labels", {"k": "v" * 64}, f"{FIELD}.metadata.labels.k: value 'vvv"),
        ("metadata.annotations", {"a b": "x"}, f"{FIELD}.metadata.annotations: key 'a b'"),
        ("spec.containers", [], f"{FIELD}.spec.containers: needs at least one container"),
        ("spec.containers.0.name", "main", "one container must be named 'mxnet'"),
        ("spec.containers.0.image", "", f"{FIELD}.spec.containers[0].image: must be a non-empty"),
        ("spec.containers.0.env", {"A": "1"}, f"{FIELD}.spec.containers[0].env: must be a list"),
        ("spec.containers.0.env", [{"value": "1"}], "env[0].name: required"),
        ("spec.containers.0.env", [{"name": "A=B"}], "env[0].name: 'A=B' must be printable"),
        ("spec.containers.0.ports", [9091], "ports: must be a list of objects"),
        ("spec.containers.0.ports.0.containerPort", 0, "ports[0].containerPort: must be 1-65535"),
        ("spec.containers.0.ports.0.containerPort", "80", "containerPort: must be 1-65535"),
        ("spec.initContainers", {}, f"{FIELD}.spec.initContainers: must be a list"),
        ("spec.initContainers", [{"name": "i", "env": [{}]}], "initContainers[0].env[0].name"),
    ],
)
def test_each_refusal_names_the_path_written(path: str, value: Any, said: str) -> None:
    found = problems(with_(path, value))
    assert len(found) == 1, found
    assert said in found[0], found


def test_a_container_that_is_no_object_is_said_and_so_is_the_missing_mxnet() -> None:
    assert problems(with_("spec.containers.0", "mxnet")) == [
        f"{FIELD}.spec.containers[0]: must be an object",
        f"{FIELD}.spec.containers: one container must be named 'mxnet'",
    ]


def test_a_template_without_a_spec_needs_containers() -> None:
    assert problems({}) == [f"{FIELD}.spec.containers: needs at least one container"]


def test_ports_of_other_containers_are_not_the_hooks_to_check() -> None:
    side = {"name": "sidecar", "image": "s", "ports": [{"containerPort": 0}]}
    assert problems(with_("spec.containers", [*GOOD["spec"]["containers"], side])) == []


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True),
        ("a.b-c", True),
        ("A", False),
        ("-a", False),
        ("a." * 126 + "a", True),
        ("a." * 127 + "a", False),
    ],
)
def test_subdomain(value: str, ok: bool) -> None:
    assert subdomain(value) is ok
