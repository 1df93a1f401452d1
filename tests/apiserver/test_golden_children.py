"""The hook's golden answers in a real API server: every child is accepted by server-side apply
with Metacontroller's ownerReference and `controller-uid` label, every status by the status
subresource, and `kubectl get mxj` prints the CRD's columns from it. On an API server of this
module's own: no Metacontroller may sync the jobs whose children and status it writes itself."""

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from localcluster.apiserver import ApiServer, Binaries, KubectlError, cluster
from localcluster.crds import MXJOB, install_crds
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.golden_cases import CASES, paths
from tests.support.resources import CONTROLLER_UID, as_written, kind_key, owner_reference

pytestmark = pytest.mark.apiserver

# The CRD refuses these parents at admission (asserted below); the hook answers them only where
# the CRD was installed without its rules. Their answers are written to a valid parent of the
# same name instead, the one of the job's first sync.
REFUSED_PARENTS = {
    "invalid-spec",
    "invalid-spec-running-job",
    "invalid-spec-running-job-still-invalid",
}
STAND_IN_PARENT = "new-job"
CHILD_TYPES = (
    "configmaps",
    "pods",
    "services",
    "podgroups.scheduling.volcano.sh",
    "podgroups.scheduling.x-k8s.io",
)
# Fields the API server writes; an observed child echoed by the hook carries the golden files'
# made-up values, which a real Metacontroller would have read from the server.


@pytest.fixture(scope="module")
def apiserver(
    k8s_binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ApiServer]:
    """This module's own server (`namespace` makes each test's namespace on it), with our CRDs."""
    with (
        fail_on_cluster_error(),
        cluster(k8s_binaries, tmp_path_factory.mktemp("golden")) as server,
    ):
        install_crds(server)
        yield server


def golden(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    request_path, response_path = paths(name)
    return json.loads(request_path.read_text()), json.loads(response_path.read_text())


def create_parent(server: ApiServer, namespace: str, job: dict[str, Any]) -> dict[str, Any]:
    """The MXJob as its user would submit it: name and spec, no status."""
    document = {
        "apiVersion": job["apiVersion"],
        "kind": job["kind"],
        "metadata": {"name": job["metadata"]["name"], "namespace": namespace},
        "spec": job["spec"],
    }
    applied = server.kubectl(
        "apply", "--server-side", "--field-manager=mxjob-tests", "--output=json", "-f", "-",
        input=yaml.safe_dump(document),
    )  # fmt: skip
    parent: dict[str, Any] = json.loads(applied.stdout)
    return parent


def not_stored(wanted: Any, stored: Any, path: str = "") -> list[str]:
    """Paths where a stored object lacks what was applied (the server may add defaults). Two
    normalisations are the same value: an empty string reads back absent where the Go type omits
    it (an env var's `value: ""`), and a number in a resource list reads back as a quantity
    string (`nvidia.com/gpu: 8` as "8")."""
    if isinstance(wanted, dict) and isinstance(stored, dict):
        return [
            miss
            for key, value in wanted.items()
            for miss in not_stored(value, stored.get(key), f"{path}.{key}")
        ]
    if isinstance(wanted, list) and isinstance(stored, list) and len(wanted) == len(stored):
        return [
            miss
            for n, (value, kept) in enumerate(zip(wanted, stored, strict=True))
            for miss in not_stored(value, kept, f"{path}[{n}]")
        ]
    same = wanted == stored or (wanted, stored) == ("", None)
    quantity = isinstance(wanted, int) and stored == str(wanted)
    return [] if same or quantity else [f"{path}: applied {wanted!r}, stored {stored!r}"]


def children_of(server: ApiServer, parent: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """What Metacontroller would observe: the children labelled with the parent's uid."""
    selector = f"{CONTROLLER_UID}={parent['metadata']['uid']}"
    listed = server.get(
        ",".join(CHILD_TYPES), "-l", selector, f"--namespace={parent['metadata']['namespace']}"
    )
    return {(kind_key(c), c["metadata"]["name"]): c for c in listed["items"]}


def write_status(server: ApiServer, parent: dict[str, Any], status: Any) -> dict[str, Any]:
    """Replace the parent's whole status through the status subresource, as Metacontroller does."""
    patch = json.dumps([{"op": "add", "path": "/status", "value": status}])
    written = server.kubectl(
        "patch", MXJOB, parent["metadata"]["name"], f"--namespace={parent['metadata']['namespace']}",
        "--subresource=status", "--type=json", f"--patch={patch}", "--output=json",
    )  # fmt: skip
    stored: dict[str, Any] = json.loads(written.stdout)
    return stored


def table(output: str) -> list[dict[str, str]]:
    """kubectl's table output as rows of {column: cell}; an empty cell is ''."""
    header, *rows = output.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    names = [header[a:b].strip() for a, b in bounds]
    return [{n: row[a:b].strip() for n, (a, b) in zip(names, bounds, strict=True)} for row in rows]


def expected_row(job: dict[str, Any], status: dict[str, Any]) -> dict[str, str]:
    """The CRD's printer columns: State is the type of the last condition in the list."""
    worker = status.get("replicaStatuses", {}).get("Worker", {})
    return {
        "NAME": job["metadata"]["name"],
        "STATE": status["conditions"][-1]["type"],
        "WORKERS": str(worker["active"]) if "active" in worker else "",
        "MODE": job["spec"].get("jobMode", ""),
    }


@pytest.mark.parametrize("name", sorted(REFUSED_PARENTS))
def test_crd_refuses_the_parent_the_hook_reports_invalid(
    apiserver: ApiServer, namespace: str, name: str
) -> None:
    """Both name the same field: `... has an invalid spec: <field>: <rule>`."""
    request, answer = golden(name)
    (invalid,) = [c for c in answer["status"]["conditions"] if c["reason"] == "MXJobInvalidSpec"]
    assert (invalid["type"], invalid["status"]) in {("Failed", "True"), ("InvalidSpec", "True")}
    field = invalid["message"].split("invalid spec: ", 1)[1].split(": ", 1)[0]

    with pytest.raises(KubectlError) as refused:
        create_parent(apiserver, namespace, request["parent"])

    stderr = refused.value.result.stderr
    assert f'The MXJob "{request["parent"]["metadata"]["name"]}" is invalid' in stderr
    assert f"* {field}: " in stderr


@pytest.mark.parametrize("name", list(CASES))
def test_golden_answer_is_accepted(apiserver: ApiServer, namespace: str, name: str) -> None:
    request, answer = golden(name)
    job = golden(STAND_IN_PARENT)[0]["parent"] if name in REFUSED_PARENTS else request["parent"]
    parent = create_parent(apiserver, namespace, job)
    children = [as_written(child, parent) for child in answer["children"]]

    if children:
        apiserver.apply(*children)
    stored = write_status(apiserver, parent, answer["status"])
    observed = children_of(apiserver, parent)
    printed = apiserver.kubectl("get", "mxj", f"--namespace={namespace}", "--output=wide")

    assert sorted(observed) == sorted((kind_key(c), c["metadata"]["name"]) for c in children)
    for child in children:
        kept = observed[kind_key(child), child["metadata"]["name"]]
        assert kept["metadata"]["ownerReferences"] == [owner_reference(parent)]
        assert not_stored(child, kept) == []
    assert stored["status"] == answer["status"]
    (row,) = table(printed.stdout)
    assert re.fullmatch(r"\d+s", row.pop("AGE"))
    assert row == expected_row(job, answer["status"])


@pytest.mark.parametrize(
    ("api_version", "foreign"),
    [
        pytest.param("scheduling.volcano.sh/v1beta1", "scheduleTimeoutSeconds", id="volcano"),
        pytest.param("scheduling.x-k8s.io/v1alpha1", "queue", id="scheduler-plugins"),
        pytest.param("scheduling.x-k8s.io/v1alpha1", "priorityClassName", id="plugins-priority"),
    ],
)
def test_podgroup_stand_ins_refuse_the_other_schedulers_fields(
    apiserver: ApiServer, namespace: str, api_version: str, foreign: str
) -> None:
    """The stand-in CRDs are strict: a field of the other scheduler's PodGroup is refused."""
    group = {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": "mnist", "namespace": namespace},
        "spec": {"minMember": 3, foreign: "research"},
    }

    with pytest.raises(KubectlError) as refused:
        apiserver.apply(group)

    assert f".spec.{foreign}: field not declared in schema" in refused.value.result.stderr
