"""A bad edit of a running job under the real Metacontroller: with a copy of the CRD that does
not check it (an older install), the edit reaches the hook, the job says InvalidSpec and keeps
every child; once the edit is reverted it carries on with the very same pods and Services."""

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from localcluster.apiserver import ApiServer
from localcluster.crds import MXJOB, MXJOB_CRD, install_crds
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.resources import without_rules

from .conftest import RealStack

JOB = REPO / "examples" / "dist-cpu.yaml"


def unchecked_crd() -> dict[str, Any]:
    """Our CRD as an older install would have it: pod templates not schema-checked at all, and
    no CEL rules (the size rule reads inside the templates: it would not compile)."""
    crd: dict[str, Any] = without_rules(yaml.safe_load(MXJOB_CRD.read_text()))
    (version,) = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    replica = spec["properties"]["mxReplicaSpecs"]["additionalProperties"]
    replica["properties"]["template"] = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    return crd


@pytest.fixture
def older_crd(real_stack: RealStack) -> Iterator[ApiServer]:
    server = real_stack.apiserver
    server.apply(unchecked_crd())
    try:
        yield server
    finally:
        install_crds(server)


def _children(server: ApiServer, namespace: str) -> dict[str, str]:
    """Every pod and Service of the namespace, by kind and name, with its uid."""
    out = {}
    for kind in ("pods", "services"):
        for item in server.get(kind, f"--namespace={namespace}")["items"]:
            out[f"{kind}/{item['metadata']['name']}"] = item["metadata"]["uid"]
    return out


def _all_children(server: ApiServer, namespace: str) -> dict[str, str] | None:
    children = _children(server, namespace)
    return children if len(children) == 10 else None


def _synced(server: ApiServer, namespace: str, name: str) -> dict[str, Any] | None:
    """The job's status once Metacontroller has written it for the job's current generation."""
    job = server.get(MXJOB, name, f"--namespace={namespace}")
    status: dict[str, Any] = job.get("status") or {}
    if status.get("observedGeneration") != job["metadata"]["generation"]:
        return None
    return status


def _types(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["status"]) for c in status["conditions"]]


def test_a_bad_edit_keeps_every_child_and_the_revert_deletes_nothing(
    older_crd: ApiServer, namespace: str
) -> None:
    server = older_crd
    job = yaml.safe_load(JOB.read_text())
    job["metadata"]["namespace"] = namespace
    name = job["metadata"]["name"]
    server.apply(job)
    before = wait_for(lambda: _all_children(server, namespace), "5 pods and 5 Services", 60)
    wait_for(lambda: _synced(server, namespace, name), "the first status", 30)

    broken = copy.deepcopy(job)
    mxnet = broken["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    mxnet["env"] = [{"value": "no name"}]
    server.apply(broken)
    invalid = wait_for(lambda: _synced(server, namespace, name), "the bad edit's status", 30)
    assert invalid is not None

    assert invalid["conditions"][-1]["type"] == "InvalidSpec"
    assert "containers[0].env[0].name: required" in invalid["conditions"][-1]["message"]
    assert ("Failed", "True") not in _types(invalid)
    assert _children(server, namespace) == before

    server.apply(job)
    fixed = wait_for(lambda: _synced(server, namespace, name), "the reverted job's status", 30)
    assert fixed is not None

    assert "InvalidSpec" not in [c["type"] for c in fixed["conditions"]]
    assert _types(fixed) == [("Created", "True")]
    assert _children(server, namespace) == before
