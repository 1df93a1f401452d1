"""The MXJob CRD in a real API server: it installs, admits every example and legacy manifest,
and refuses each invalid case of contract section 2 with the CRD's own message."""

import copy
import uuid
from typing import Any

import pytest
import yaml

from tests.test_crd import INVALID, VALID

from . import wording
from .cluster import ApiServer, KubectlError
from .resources import MXJOB, install_crds

pytestmark = pytest.mark.apiserver


@pytest.fixture(scope="module", autouse=True)
def crds(apiserver: ApiServer) -> None:
    install_crds(apiserver)


@pytest.fixture(scope="module")
def refusals(apiserver: ApiServer) -> str:
    """One namespace for every refused job: nothing is ever stored in it."""
    name = f"refused-{uuid.uuid4().hex[:8]}"
    apiserver.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def placed(doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["metadata"]["namespace"] = namespace
    return out


def test_crd_is_established_with_its_names(apiserver: ApiServer) -> None:
    crd = apiserver.get("crd", MXJOB)

    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions | {"Established": "True", "NamesAccepted": "True"} == conditions
    assert crd["status"]["acceptedNames"] == crd["spec"]["names"]
    resources = apiserver.kubectl("api-resources", "--api-group=kubeflow.org", "--no-headers")
    assert resources.stdout.split() == ["mxjobs", "mxj", "kubeflow.org/v1", "true", "MXJob"]


@pytest.mark.parametrize("doc", VALID)
def test_created_by_server_side_apply_and_read_back(
    apiserver: ApiServer, namespace: str, doc: dict[str, Any]
) -> None:
    apiserver.apply(placed(doc, namespace))

    stored = apiserver.get(MXJOB, doc["metadata"]["name"], f"--namespace={namespace}")

    # Nothing pruned, nothing defaulted but an absent runPolicy (`{}`, for Kubeflow's SDK:
    # docs/sdk.md): the hook sees the spec as it was written.
    assert stored["spec"] == {"runPolicy": {}} | doc["spec"]
    assert "status" not in stored


@pytest.mark.parametrize(("doc", "expected", "hook"), INVALID)
def test_refused_by_server_side_apply(
    apiserver: ApiServer, refusals: str, doc: dict[str, Any], expected: list[str], hook: bool
) -> None:
    with pytest.raises(KubectlError) as refused:
        apiserver.apply(placed(doc, refusals))

    stderr = refused.value.result.stderr
    assert [line for line in wording.server_side_apply(expected) if line not in stderr] == []


@pytest.mark.parametrize(
    ("doc", "expected", "hook"),
    [p for p in INVALID if wording.create(p.values[1]) != wording.server_side_apply(p.values[1])],
)
def test_refused_by_create_with_the_schemas_words(
    apiserver: ApiServer, refusals: str, doc: dict[str, Any], expected: list[str], hook: bool
) -> None:
    """Server-side apply refuses a wrong type or an unknown field while building its typed
    patch, before validation; `kubectl create` shows what the schema itself says."""
    with pytest.raises(KubectlError) as refused:
        apiserver.kubectl("create", "-f", "-", input=yaml.safe_dump(placed(doc, refusals)))

    stderr = refused.value.result.stderr
    assert [line for line in wording.create(expected) if line not in stderr] == []
