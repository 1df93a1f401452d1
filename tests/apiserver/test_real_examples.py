"""Every example and every legacy training-operator / mxnet-operator manifest, applied with
`kubectl apply`, gets from the real Metacontroller and the hook exactly its pods and headless
Services, owned by the job, and the `Created` condition."""

from pathlib import Path
from typing import Any

import pytest

from localcluster.rest import Rest
from tests.support import FIXTURES, REPO
from tests.support.scenario import State, apply_job, expected_children, manifest

from .conftest import RealStack

MANIFESTS = [
    *sorted((REPO / "examples").glob("*.yaml")),
    *sorted((FIXTURES / "legacy").glob("*.yaml")),
]
TYPE = "training.kubeflow.org/replica-type"
INDEX = "training.kubeflow.org/replica-index"


def env(pod: dict[str, Any]) -> dict[str, str]:
    (mxnet,) = [c for c in pod["spec"]["containers"] if c["name"] == "mxnet"]
    return {e["name"]: e.get("value", "") for e in mxnet.get("env", [])}


@pytest.mark.parametrize(
    "path", MANIFESTS, ids=[str(p.relative_to(REPO).with_suffix("")) for p in MANIFESTS]
)
def test_manifest_gets_its_pods_and_services(
    real_stack: RealStack, rest: Rest, namespace: str, path: Path
) -> None:
    document = manifest(str(path.relative_to(REPO)))
    names = expected_children(document)
    job = apply_job(real_stack.apiserver, rest, namespace, document)

    job.reaches(
        State({"Created": "MXJobCreated"}, dict.fromkeys(names, "Pending"), tuple(names)),
        "every pod and Service",
    )

    uid = job.get()["metadata"]["uid"]
    children = job.children()
    for name in names:
        pod, service = children[f"Pod/{name}"], children[f"Service/{name}"]
        rtype, index = name.removeprefix(f"{job.name}-").rsplit("-", 1)
        assert (pod["metadata"]["labels"][TYPE], pod["metadata"]["labels"][INDEX]) == (rtype, index)
        for child in (pod, service):
            (owner,) = child["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
                "MXJob", job.name, uid, True,
            )  # fmt: skip
        assert env(pod)["DMLC_ROLE"] == rtype
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
