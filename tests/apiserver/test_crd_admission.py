"""The MXJob CRD in a real API server: it installs, admits every example and legacy manifest,
and refuses each invalid case of docs/behaviour.md#validation with the CRD's own message."""

import copy
import json
import re
import uuid
from collections.abc import Callable
from typing import Any, cast

import pytest
import yaml

from app.core.validate.sizerule import MAX_REPLICAS
from localcluster.apiserver import ApiServer, Binaries, KubectlError
from localcluster.crds import MXJOB, MXJOB_CRD, install_crds
from scripts import crd_pod_template
from tests.support import wording
from tests.support.crd_cases import INVALID, VALID, job

# What a client-side `kubectl apply` may store in its last-applied-configuration annotation:
# the API server refuses an object whose annotations exceed 256 KiB in all.
ANNOTATIONS_LIMIT = 256 * 1024

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
    [
        p
        for p in INVALID
        if wording.create(cast(list[str], p.values[1]))
        != wording.server_side_apply(cast(list[str], p.values[1]))
    ],
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


def test_crd_is_what_the_generator_writes(k8s_binaries: Binaries) -> None:
    """The pod-template schema is generated from the pinned Kubernetes' OpenAPI (the module
    k8s-binaries.sh downloaded to build the API server), never edited by hand."""
    current = MXJOB_CRD.read_text()

    assert current == crd_pod_template.rendered(current, crd_pod_template.k8s_version())


def test_client_side_apply_fits_its_annotation(
    apiserver: ApiServer, figure: Callable[[str], None]
) -> None:
    """`kubectl apply -f` without --server-side works: the last-applied annotation (the
    whole CRD as compact JSON) is well under the API server's 256 KiB."""
    applied = apiserver.kubectl("apply", "--dry-run=server", "-o", "json", "-f", str(MXJOB_CRD))

    annotations = json.loads(applied.stdout)["metadata"]["annotations"]
    size = len(annotations["kubectl.kubernetes.io/last-applied-configuration"].encode())
    assert size < ANNOTATIONS_LIMIT / 2, size
    figure(f"the CRD's last-applied annotation: {size:,} bytes of {ANNOTATIONS_LIMIT:,}")


@pytest.mark.parametrize(
    ("field", "value", "refusal"),
    [
        pytest.param(
            "imagee", "mxjob/mxnet:1.9.2",
            'unknown field "spec.mxReplicaSpecs.Worker.template.spec.containers[0].imagee"',
            id="container",
        ),
        pytest.param(
            "resources", {"limit": {"cpu": "1"}},
            'unknown field "spec.mxReplicaSpecs.Worker.template.spec.containers[0].resources.limit"',
            id="nested-in-resources",
        ),
    ],
)  # fmt: skip
def test_strict_field_validation_reports_unknown_template_fields(
    apiserver: ApiServer, refusals: str, field: str, value: Any, refusal: str
) -> None:
    """A typo anywhere in a pod template is reported by the API server, as for a Pod."""
    doc = placed(job("dist-cpu.yaml", {}), refusals)
    doc["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][field] = value

    strict = apiserver.kubectl(
        "create", "--validate=strict", "-f", "-", input=yaml.safe_dump(doc), check=False
    )
    warned = apiserver.kubectl(
        "create", "--validate=warn", "--dry-run=server", "-f", "-",
        input=yaml.safe_dump(doc), check=False,
    )  # fmt: skip

    assert (strict.returncode, refusal in strict.stderr) == (1, True), strict.stderr
    assert (warned.returncode, refusal in warned.stderr) == (0, True), warned.stderr


def test_scheduler_plugins_refuses_the_min_member_our_rule_keeps_out(
    apiserver: ApiServer, refusals: str
) -> None:
    """Why minAvailable must be at least 1: the PodGroup a 0 would give is refused."""
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "mnist", "namespace": refusals},
        "spec": {"minMember": 0},
    }

    refused = apiserver.apply(group, check=False)

    assert refused.returncode == 1
    assert (
        "spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal to 1"
        in refused.stderr
    )


@pytest.mark.parametrize(
    ("edit", "refusal"),
    [
        pytest.param(
            {"Worker": {"replicas": MAX_REPLICAS}},
            f"spec.mxReplicaSpecs: Invalid value: \"object\": at most {MAX_REPLICAS} replicas in all",
            id="too-many-replicas",
        ),
        pytest.param(
            {"Worker": {"template": {"spec": {"containers": [{"name": "mxnet", "image": "x", "env": [{"value": "1"}]}]}}}},
            "spec.mxReplicaSpecs.Worker.template.spec.containers[0].env[0].name: Required value",
            id="env-entry-without-a-name",
        ),
        pytest.param(
            {"Worker": {"template": {"metadata": {"labels": {"bad key": "x"}}}}},
            "spec.mxReplicaSpecs[Worker].template.metadata.labels: Invalid value: \"object\": keys must be qualified names",
            id="label-key-with-a-space",
        ),
    ],
)  # fmt: skip
def test_an_edit_of_a_stored_job_is_refused_and_changes_nothing(
    apiserver: ApiServer, namespace: str, edit: dict[str, Any], refusal: str
) -> None:
    """What training-operator's webhook did for an edit: `kubectl apply` fails, the stored job
    keeps its spec, and the hook never sees the bad edit."""
    doc = placed(job("dist-cpu.yaml", {}), namespace)
    apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump(doc))
    before = apiserver.get(MXJOB, doc["metadata"]["name"], f"--namespace={namespace}")

    edited = job("dist-cpu.yaml", {"spec": {"mxReplicaSpecs": edit}})
    refused = apiserver.kubectl(
        "apply", "-f", "-", input=yaml.safe_dump(placed(edited, namespace)), check=False
    )

    after = apiserver.get(MXJOB, doc["metadata"]["name"], f"--namespace={namespace}")
    assert (refused.returncode, refusal in refused.stderr) == (1, True), refused.stderr
    assert (after["spec"], after["metadata"]["generation"]) == (
        before["spec"],
        before["metadata"]["generation"],
    )


def test_the_generators_source_is_what_the_api_server_serves(apiserver: ApiServer) -> None:
    """The OpenAPI file taken from the k8s.io/kubernetes module gives the same pod-template
    schema as the pinned API server's own /openapi/v3/api/v1."""
    served = json.loads(apiserver.kubectl("get", "--raw", "/openapi/v3/api/v1").stdout)
    module = crd_pod_template.openapi_document(crd_pod_template.k8s_version())

    def template(document: dict[str, Any]) -> Any:
        schemas = document["components"]["schemas"]
        return crd_pod_template.structural(schemas, schemas[crd_pod_template.ROOT])

    assert template(served) == template(module)


def _template(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    template: dict[str, Any] = spec["properties"]["mxReplicaSpecs"]["additionalProperties"][
        "properties"
    ]["template"]
    return template


def _twice_the_keys(crd: dict[str, Any]) -> None:
    labels = _template(crd)["properties"]["metadata"]["properties"]["labels"]
    assert labels["maxProperties"] == crd_pod_template.MAX_KEYS
    labels["maxProperties"] = 2 * crd_pod_template.MAX_KEYS


def _optional_image(crd: dict[str, Any]) -> None:
    container = _template(crd)["properties"]["spec"]["properties"]["containers"]["items"]
    container["required"] = ["name"]
    del container["properties"]["image"]["minLength"]


@pytest.mark.parametrize(
    ("change", "rule", "what"),
    [
        pytest.param(
            _twice_the_keys, r"properties\[labels\].x-kubernetes-validations\[0\]",
            f"{2 * crd_pod_template.MAX_KEYS:,} label keys", id="twice-the-label-keys",
        ),
        pytest.param(
            _optional_image, r"additionalProperties.x-kubernetes-validations\[1\]",
            "the mxnet-container rule with a container's image optional", id="optional-image",
        ),
    ],
)  # fmt: skip
def test_the_cel_budget_is_what_bounds_the_schema(
    apiserver: ApiServer,
    figure: Callable[[str], None],
    change: Callable[[dict[str, Any]], None],
    rule: str,
    what: str,
) -> None:
    """The bounds the CRD's rules rely on are the least the API server's cost estimate allows:
    the CRD with them is installed (every run of this tier); one bound looser is refused."""
    crd = yaml.safe_load(MXJOB_CRD.read_text())
    change(crd)

    refused = apiserver.kubectl(
        "apply", "--server-side", "--field-manager=mxjob-tests", "--dry-run=server", "-f", "-",
        input=yaml.safe_dump(crd), check=False,
    )  # fmt: skip

    over = re.search(
        rule + r".rule: Forbidden: estimated rule cost exceeds budget by factor of ([0-9.]+)x",
        refused.stderr,
    )
    assert refused.returncode == 1
    assert over, refused.stderr
    figure(f"{what}: over the CEL budget {float(over[1]):.2f} times")
