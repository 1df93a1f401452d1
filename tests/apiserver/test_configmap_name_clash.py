"""A ConfigMap that is not the job's but has the name of the job's (`<job>-mx-config`), under
the real Metacontroller: it is neither adopted nor changed, the job still gets its pods and
Services, and no sync fails: Metacontroller logs that the child already exists (docs/security.md,
"The job's ConfigMap")."""

from app import builders
from localcluster.rest import Rest

from .conftest import RealStack
from .scenario import State, apply, apply_job, expected_children, manifest

EXAMPLE = "examples/dist-cpu.yaml"
THEIRS = {"mine": "a user's own data"}


def test_a_users_configmap_of_that_name_is_left_alone(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    document = manifest(EXAMPLE)
    name = builders.config_map_name(document["metadata"]["name"])
    user_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    apply(real_stack.apiserver, namespace, user_map | {"data": THEIRS})

    names = expected_children(document)
    job = apply_job(real_stack.apiserver, rest, namespace, document)
    job.reaches(
        State({"Created": "MXJobCreated"}, dict.fromkeys(names, "Pending"), tuple(names)),
        "every pod and Service",
    )

    theirs = rest.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    assert theirs["data"] == THEIRS
    assert "ownerReferences" not in theirs["metadata"]
    assert not [key for key in job.children() if key.startswith("ConfigMap/")]
    assert job.warnings("SyncError") == 0
    log = real_stack.metacontroller.log.read_text(errors="replace").splitlines()
    assert [line for line in log if "child object already exists" in line and f'"{name}"' in line]
