"""The fixture gives a real API server: it applies, stores and validates like a cluster."""

import json

import pytest

from localcluster.apiserver import ApiServer, KubectlError

pytestmark = pytest.mark.apiserver


def test_server_and_kubectl_share_a_minor_version(apiserver: ApiServer) -> None:
    versions = json.loads(apiserver.kubectl("version", "-o", "json").stdout)

    server, client = versions["serverVersion"], versions["clientVersion"]
    assert (server["major"], server["minor"]) == ("1", client["minor"].rstrip("+"))
    assert server["gitVersion"].startswith("v1.32.")


def test_server_side_apply_of_namespace_and_configmap(apiserver: ApiServer) -> None:
    apiserver.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "smoke"}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "smoke"},
            "data": {"answer": "42"},
        },
    )

    stored = apiserver.get("configmap", "settings", "--namespace=smoke", "--show-managed-fields")

    assert stored["data"] == {"answer": "42"}
    managers = {
        entry["manager"]: entry["operation"] for entry in stored["metadata"]["managedFields"]
    }
    assert managers == {"mxjob-tests": "Apply"}


# A literal object like the PodGroup of test_crd_admission.py: different kinds, kept inline
# so each test shows what it sends.
def test_invalid_pod_name_is_rejected_with_the_servers_message(
    apiserver: ApiServer, namespace: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "Not_A_Valid_Name", "namespace": namespace},
        "spec": {"containers": [{"name": "mxnet", "image": "mxjob/mxnet:test"}]},
    }

    with pytest.raises(KubectlError) as rejected:
        apiserver.apply(pod)

    stderr = rejected.value.result.stderr
    assert 'Pod "Not_A_Valid_Name" is invalid' in stderr
    assert "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric" in stderr
    assert apiserver.kubectl("get", "pods", f"--namespace={namespace}", "-o", "name").stdout == ""
