"""The adoption guard (manifests/components/adoption-guard) on the real API server, for every
child type the overlays and components declare (ConfigMap, Service, pod, Event, Kueue's Workload
with Kueue's own CRD, the two PodGroups; tests/manifests/test_adoption_guard.py checks the list
is whole): an update may not
give an object an MXJob owner it did not have, which is what a forced server-side apply of a
child's name would do to a user's object; anything else passes (a child created with its
owner, updated, or released by its owner's removal). Metacontroller's side of it, under
server-side apply, is in test_configmap_name_clash.py."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from localcluster.apiserver import ApiServer, ClusterError
from localcluster.crds import install_crds
from localcluster.kueue import install_kueue_crds, obtain_kueue_crds
from localcluster.rest import KubeError, Rest
from localcluster.stack import ADOPTION_GUARD
from localcluster.waiting import wait_for

OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "MXJob",
    "name": "mnist",
    "uid": "5c0f4f7e-7a8e-4c36-9a53-0d4f3f2f0a11",
    "controller": True,
    "blockOwnerDeletion": True,
}
ANOTHER_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "r-1"}
POD_SPEC = {"containers": [{"name": "c", "image": "busybox"}]}
# resource (its path under the namespace): a minimal object of it
OBJECTS: dict[str, dict[str, Any]] = {
    "api/v1/configmaps": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"mine": "x"}},
    "api/v1/services": {
        "apiVersion": "v1",
        "kind": "Service",
        "spec": {"clusterIP": "None", "selector": {"app": "x"}, "ports": [{"port": 9091}]},
    },
    "api/v1/pods": {"apiVersion": "v1", "kind": "Pod", "spec": POD_SPEC},
    "api/v1/events": {
        "apiVersion": "v1",
        "kind": "Event",
        "involvedObject": {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "mnist"},
        "reason": "Created",
        "message": "mine",
        "type": "Normal",
    },
    "apis/kueue.x-k8s.io/v1beta2/workloads": {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": POD_SPEC}}]},
    },
    "apis/scheduling.volcano.sh/v1beta1/podgroups": {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "spec": {"minMember": 1},
    },
    "apis/scheduling.x-k8s.io/v1alpha1/podgroups": {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "spec": {"minMember": 1},
    },
}
REFUSED = "existed before MXJob mnist and is not its child"


@pytest.fixture(scope="module")
def crds(apiserver: ApiServer, progress: Callable[[str], None]) -> None:
    """The PodGroup CRDs (localcluster/podgroups) and Kueue's, from its module (no build)."""
    install_crds(apiserver)
    try:
        folder = obtain_kueue_crds(progress)
    except ClusterError as error:
        failure = str(error)  # failed outside the handler: the report shows no exception chain
    else:
        install_kueue_crds(apiserver, folder)
        return
    pytest.fail(failure, pytrace=False)


@pytest.fixture
def guarded(apiserver: ApiServer, crds: None) -> Iterator[None]:
    """The guard installed for one test (the tier's real stack installs it where it ships)."""
    apiserver.kubectl("apply", "-f", str(ADOPTION_GUARD))
    try:
        yield
    finally:
        apiserver.kubectl("delete", "-f", str(ADOPTION_GUARD), "--ignore-not-found")


def _url(resource: str, namespace: str, name: str | None = None) -> str:
    group, _, plural = resource.rpartition("/")
    return f"/{group}/namespaces/{namespace}/{plural}" + (f"/{name}" if name else "")


def _owners(rest: Rest, url: str) -> list[dict[str, Any]]:
    refs: list[dict[str, Any]] = rest.get(url)["metadata"].get("ownerReferences") or []
    return refs


def _create(rest: Rest, resource: str, namespace: str, name: str, **meta: Any) -> str:
    document = OBJECTS[resource] | {"metadata": {"name": name, **meta}}
    if "involvedObject" in document:  # an Event's must be in its namespace
        document["involvedObject"] = document["involvedObject"] | {"namespace": namespace}
    rest.create(_url(resource, namespace), document)
    return _url(resource, namespace, name)


def _refused(rest: Rest, url: str, patch: dict[str, Any]) -> str:
    with pytest.raises(KubeError) as refused:
        rest.merge_patch(url, patch)
    assert refused.value.status_code == 403
    return str(refused.value)


def _adopting(rest: Rest, url: str) -> KubeError | None:
    """Give the object the MXJob owner: the refusal, or None if it passed (then undone)."""
    try:
        rest.merge_patch(url, {"metadata": {"ownerReferences": [OWNER]}})
    except KubeError as error:
        return error
    rest.merge_patch(url, {"metadata": {"ownerReferences": None}})
    return None


@pytest.mark.usefixtures("guarded")
@pytest.mark.parametrize("resource", sorted(OBJECTS))
def test_an_update_may_not_give_an_object_an_mxjob_owner(
    rest: Rest, namespace: str, resource: str
) -> None:
    theirs = _create(rest, resource, namespace, "theirs")
    # The API server puts a new policy in force within moments, not at once.
    refusal = wait_for(lambda: _adopting(rest, theirs), "the guard in force", 30, bool)
    assert refusal is not None
    assert refusal.status_code == 403
    assert REFUSED in str(refusal)
    assert _owners(rest, theirs) == []
    # Beside an owner it had: still refused.
    rest.merge_patch(theirs, {"metadata": {"ownerReferences": [ANOTHER_OWNER]}})
    both = {"metadata": {"ownerReferences": [ANOTHER_OWNER, OWNER]}}
    assert REFUSED in _refused(rest, theirs, both)
    assert [r["uid"] for r in _owners(rest, theirs)] == [ANOTHER_OWNER["uid"]]

    # A child, created with its owner: updated, it passes; released, it passes.
    child = _create(rest, resource, namespace, "child", ownerReferences=[OWNER])
    rest.merge_patch(child, {"metadata": {"labels": {"edited": "yes"}}})
    rest.merge_patch(child, {"metadata": {"ownerReferences": None}})
    assert _owners(rest, child) == []
