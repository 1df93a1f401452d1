"""MX_CONFIG through the job's ConfigMap under the real Metacontroller: the ConfigMap is written
before any pod, owned like the other children, and every pod's env, resolved from the objects
the API server stores as the kubelet resolves it, gives each process the environment release
0.1.0 gave it (tests/fixtures/env-0.1.0.json, every variable) and the one before it
(tests/fixtures/env-before-configmap.json)."""

import json
from typing import Any

from app import builders, kubeenv

from .conftest import RealStack
from .rest import Rest
from .scenario import REPO, State, apply_job, expected_children, manifest

EXAMPLE = "examples/dist-cpu.yaml"
BEFORE = json.loads((REPO / "tests" / "fixtures" / "env-before-configmap.json").read_text())
RELEASED = json.loads((REPO / "tests" / "fixtures" / "env-0.1.0.json").read_text())
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
    assert set(config_map["data"]) == set(builders.JOB_ENV)
    pods = [c for key, c in children.items() if key.startswith("Pod/")]
    assert _version(config_map) < min(_version(p) for p in pods)

    maps = {config_map["metadata"]["name"]: config_map}
    read = {}
    for pod in pods:
        for container in pod["spec"]["containers"]:
            env = kubeenv.resolve(container, maps)
            key = f"{pod['metadata']['name']}/{container['name']}"
            read[key] = sorted([k, v] for k, v in env.items())
    # In no set order: the kubelet gathers a container's variables in a map.
    assert read == RELEASED[EXAMPLE]
    without_shared = {k: [kv for kv in v if kv[0] not in SHARED] for k, v in read.items()}
    assert without_shared == {k: sorted(v) for k, v in BEFORE[EXAMPLE].items()}
