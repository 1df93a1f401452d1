"""MX_CONFIG through the job's ConfigMap under the real Metacontroller: the ConfigMap is written
before any pod, owned like the other children, and every pod's env, resolved from the objects
the API server stores as the kubelet resolves it, gives each process the environment the
previous version gave it (tests/fixtures/env-before-configmap.json)."""

import json
from typing import Any

from app import builders, kubeenv
from localcluster.rest import Rest

from .conftest import RealStack
from .scenario import REPO, State, apply_job, expected_children, manifest

EXAMPLE = "examples/dist-cpu.yaml"
BEFORE = json.loads((REPO / "tests" / "fixtures" / "env-before-configmap.json").read_text())
SHARED = {variable for variable, _ in builders.SHARED_PARTS}


def _version(child: dict[str, Any]) -> int:
    # Opaque to clients in general; etcd3's are one increasing counter of every write, and
    # these children are written once (no kubelet or scheduler touches them here).
    return int(child["metadata"]["resourceVersion"])


def test_the_configmap_comes_first_and_processes_read_what_they_did(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    document = manifest(EXAMPLE)
    names = expected_children(document)
    job = apply_job(real_stack.apiserver, rest, namespace, document)
    job.reaches(
        State({"Created": "MXJobCreated"}, dict.fromkeys(names, "Pending"), tuple(names)),
        "every pod and Service",
    )

    children = job.children()
    config_map = children.pop(f"ConfigMap/{builders.config_map_name(job.name)}")
    (owner,) = config_map["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("MXJob", job.name, True)
    assert set(config_map["data"]) == {"cluster", "labels"}
    pods = [c for key, c in children.items() if key.startswith("Pod/")]
    assert _version(config_map) < min(_version(p) for p in pods)

    maps = {config_map["metadata"]["name"]: config_map}
    read = {}
    for pod in pods:
        for container in pod["spec"]["containers"]:
            env = kubeenv.resolve(container, maps)
            key = f"{pod['metadata']['name']}/{container['name']}"
            read[key] = [[k, v] for k, v in env.items() if k not in SHARED]
    assert read == BEFORE[EXAMPLE]
