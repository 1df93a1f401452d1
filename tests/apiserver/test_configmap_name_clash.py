"""A ConfigMap that is not the job's but has the name of the job's (`<job>-mx-config`), under
the real Metacontroller: it is neither adopted nor changed, and the job still gets its pods and
Services. Under Metacontroller's default apply strategy no sync fails: it logs that the child
already exists. Under the server-side apply the with-metacontroller overlay ships, whose apply
patch would take the ConfigMap over, the adoption guard refuses the update
(manifests/components/adoption-guard) and Metacontroller reports that on the MXJob as a
SyncError event naming the ConfigMap. The pods fail
closed: each container reads one key of the job's ConfigMap by name (mxconfig.REQUIRED_KEY),
which that ConfigMap lacks, so the kubelet holds them in CreateContainerConfigError as it held
release 0.1.0's; once the user renames theirs, the job's own is written and the same pods'
env resolves to what 0.1.0 gave each process (docs/security.md, "The job's ConfigMap")."""

import json
from typing import Any

import pytest

from app.core.model.errors import EnvError
from app.core.mxnet import kubeenv, mxconfig
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support import FIXTURES
from tests.support.scenario import Job, State, apply, apply_job, expected_children, manifest

from .conftest import RealStack

EXAMPLE = "examples/dist-cpu.yaml"
RELEASED = json.loads((FIXTURES / "env-0.1.0.json").read_text())
# A user's own data, and what a ConfigMap written by hand for DMLC processes would hold.
THEIRS = {"mine": "a user's own data", "DMLC_NUM_WORKER": "8", "DMLC_PS_ROOT_PORT": "1"}


def _containers(pods: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{pod['metadata']['name']}/{container['name']}", container)
        for pod in pods
        for container in pod["spec"]["containers"]
    ]


def test_a_users_configmap_of_that_name_is_left_alone_and_the_pods_wait(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    document = manifest(EXAMPLE)
    name = mxconfig.config_map_name(document["metadata"]["name"])
    user_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    apply(real_stack.apiserver, namespace, user_map | {"data": THEIRS})

    names = expected_children(document)
    job = apply_job(real_stack.apiserver, rest, namespace, document)
    job.reaches(
        State({"Created": "MXJobCreated"}, dict.fromkeys(names, "Pending"), tuple(names)),
        "every pod and Service",
    )

    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    theirs = rest.get(f"{configmaps}/{name}")
    assert theirs["data"] == THEIRS
    assert "ownerReferences" not in theirs["metadata"]
    assert not [key for key in job.children() if key.startswith("ConfigMap/")]
    _the_clash_is_reported(real_stack, rest, job, theirs)

    # What the kubelet decides from: every container of every pod reads a key of that
    # ConfigMap by name, not optionally, and it has no such key: CreateContainerConfigError.
    pods = [c for key, c in job.children().items() if key.startswith("Pod/")]
    missing = f"couldn't find key {mxconfig.REQUIRED_KEY} in ConfigMap {name}"
    for _, container in _containers(pods):
        with pytest.raises(EnvError, match=missing):
            kubeenv.resolve(container, {name: theirs})

    # The user renames theirs (a copy under another name, the original deleted): the next
    # sync writes the job's own, and the same pods, none replaced, read what 0.1.0 gave them.
    mine = user_map | {"metadata": {"name": f"{name}-mine"}, "data": THEIRS}
    apply(real_stack.apiserver, namespace, mine)
    rest.delete(f"{configmaps}/{name}")
    _the_jobs_own_is_written_and_read_by_the_same_pods(job, name, pods)
    assert rest.get(f"{configmaps}/{name}-mine")["data"] == THEIRS


def _the_clash_is_reported(
    real_stack: RealStack, rest: Rest, job: Job, theirs: dict[str, Any]
) -> None:
    """Shipped: the adoption guard's refusal on the MXJob, theirs not written; defaults:
    Metacontroller's own 'already exists' in its log, no warning on the job."""
    name = theirs["metadata"]["name"]
    if real_stack.shipped:
        refusal = f"refused: ConfigMap {name} existed before MXJob {job.name} and is not its child"
        wait_for(
            lambda: job.warning_messages("SyncError"),
            "the adoption guard's refusal reported on the MXJob",
            until=lambda messages: any(refusal in m for m in messages),
        )
        path = f"/api/v1/namespaces/{theirs['metadata']['namespace']}/configmaps/{name}"
        assert rest.get(path)["metadata"] == theirs["metadata"], "not written"
    else:
        assert job.warnings("SyncError") == 0
        log = real_stack.metacontroller.log.read_text(errors="replace").splitlines()
        assert [x for x in log if "child object already exists" in x and f'"{name}"' in x]


def _the_jobs_own_is_written_and_read_by_the_same_pods(
    job: Job, name: str, pods: list[dict[str, Any]]
) -> None:
    own = wait_for(
        lambda: job.children().get(f"ConfigMap/{name}"),
        "the job's own ConfigMap",
        until=lambda found: found is not None,
    )
    assert own is not None
    assert set(own["data"]) == set(mxconfig.JOB_ENV)
    children = job.children()
    assert {c["metadata"]["uid"] for k, c in children.items() if k.startswith("Pod/")} == {
        p["metadata"]["uid"] for p in pods
    }
    read = {
        key: sorted([k, v] for k, v in kubeenv.resolve(container, {name: own}).items())
        for key, container in _containers(pods)
    }
    assert read == RELEASED[EXAMPLE]
