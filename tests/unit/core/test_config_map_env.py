"""The job's ConfigMap and the pods' env (docs/behaviour.md#children): MX_CONFIG inline or by
reference, a foreign ConfigMap of the job's name, release 0.1.0's layout kept while its pods
read it, and the user's variables against ours."""

import json

import pytest

from app.core.children import builders
from app.core.model.errors import EnvError
from app.core.model.spec import ReplicaType
from app.core.mxnet import kubeenv, layout, mxconfig
from app.core.validate.validation import validated_spec
from tests.support.jobs import train_spec

W = ReplicaType.WORKER


def test_without_a_configmap_type_mx_config_stays_inline() -> None:
    j = builders.job_context("mnist", "team-a", validated_spec("mnist", train_spec()), False)
    env = builders.pod(j, W, 1, 0, 0)["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env][:2] == ["MX_CONFIG", "DMLC_PS_ROOT_URI"]
    assert "$" not in env[0]["value"]


def test_with_a_configmap_type_mx_config_refers_to_it() -> None:
    j = builders.job_context("mnist", "team-a", validated_spec("mnist", train_spec()), True)
    container = builders.pod(j, W, 1, 0, 0)["spec"]["containers"][0]
    assert container["envFrom"] == [{"configMapRef": {"name": "mnist-mx-config"}}]
    required = {"configMapKeyRef": {"name": "mnist-mx-config", "key": "MX_CONFIG_LABELS"}}
    assert container["env"] == [
        {"name": "MX_CONFIG_LABELS", "valueFrom": required},
        {
            "name": "MX_CONFIG",
            "value": '{"cluster":$(MX_CONFIG_CLUSTER),"labels":$(MX_CONFIG_LABELS),'
            '"task":{"index":1,"type":"worker"}}',
        },
        {"name": "DMLC_ROLE", "value": "worker"},
        {"name": "DMLC_WORKER_ID", "value": "1"},
    ]


# ConfigMaps of the job's name that are not the job's: whatever they hold but the required
# key, every container's env fails as the kubelet's does (CreateContainerConfigError).
FOREIGN_DATA = [
    pytest.param({}, id="empty"),
    pytest.param({"mine": "a user's own data"}, id="a-users-data"),
    pytest.param(
        {"DMLC_NUM_WORKER": "8", "DMLC_NUM_SERVER": "2", "DMLC_PS_ROOT_URI": "ps-0"},
        id="written-by-hand-for-dmlc",
    ),
    pytest.param({"cluster": "{}", "labels": "{}"}, id="release-0.1.0-keys"),
]


@pytest.mark.parametrize("data", FOREIGN_DATA)
def test_a_foreign_configmap_of_the_jobs_name_holds_every_container_back(
    data: dict[str, str],
) -> None:
    spec = train_spec()
    spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"].append(
        {"name": "side", "image": "busybox"}
    )
    j = builders.job_context("mnist", "team-a", validated_spec("mnist", spec), True)
    foreign = {"mnist-mx-config": {"data": data}}
    containers = builders.pod(j, W, 1, 0, 0)["spec"]["containers"]
    assert len(containers) == 2
    for each in containers:
        with pytest.raises(EnvError, match="couldn't find key MX_CONFIG_LABELS in"):
            kubeenv.resolve(each, foreign)
    own = {"mnist-mx-config": builders.config_map(j)}
    assert kubeenv.resolve(containers[0], own)["DMLC_NUM_WORKER"] == "2"


CLUSTER_1_2 = (
    '{"scheduler":[{"port":9091,"url":"mnist-scheduler-0"}],'
    '"server":[{"port":9091,"url":"mnist-server-0"}],'
    '"worker":[{"port":9091,"url":"mnist-worker-0"},{"port":9091,"url":"mnist-worker-1"}]}'
)


def test_config_map_holds_every_job_wide_variable_by_name() -> None:
    j = builders.job_context("mnist", "team-a", validated_spec("mnist", train_spec(1, 2)), True)
    assert builders.config_map(j) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "mnist-mx-config",
            "namespace": "team-a",
            "labels": {
                "training.kubeflow.org/operator-name": "mxjob-controller",
                "training.kubeflow.org/job-name": "mnist",
            },
        },
        "data": {
            "MX_CONFIG_CLUSTER": CLUSTER_1_2,
            "MX_CONFIG_LABELS": '{"scheduler":"","server":"","worker":""}',
            "DMLC_PS_ROOT_URI": "mnist-scheduler-0",
            "DMLC_PS_ROOT_PORT": "9091",
            "DMLC_NUM_SERVER": "1",
            "DMLC_NUM_WORKER": "2",
            "DMLC_USE_KUBERNETES": "1",
        },
    }
    # Exactly the job-wide variables: `envFrom` imports every key as a variable.
    assert tuple(builders.config_map(j)["data"]) == mxconfig.JOB_ENV


NONE = layout.ConfigMapUse()
OLD, WHOLE = layout.ConfigMapUse(old_keys=True), layout.ConfigMapUse(env_from=True)
BOTH = layout.ConfigMapUse(old_keys=True, env_from=True)


def _job_read(config_map_use: layout.ConfigMapUse) -> builders.JobContext:
    spec = validated_spec("mnist", train_spec(1, 2))
    return builders.job_context("mnist", "team-a", spec, True, config_map_use)


def test_while_a_0_1_0_pod_reads_the_old_keys_the_job_keeps_0_1_0s_layout() -> None:
    j = _job_read(OLD)
    data = builders.config_map(j)["data"]
    assert data == {"cluster": CLUSTER_1_2, "labels": '{"scheduler":"","server":"","worker":""}'}
    container = builders.pod(j, W, 1, 0, 0)["spec"]["containers"][0]
    assert "envFrom" not in container
    assert [e["name"] for e in container["env"]] == [
        "MX_CONFIG_CLUSTER",
        "MX_CONFIG_LABELS",
        "MX_CONFIG",
        "DMLC_PS_ROOT_URI",
        "DMLC_PS_ROOT_PORT",
        "DMLC_NUM_SERVER",
        "DMLC_NUM_WORKER",
        "DMLC_ROLE",
        "DMLC_USE_KUBERNETES",
        "DMLC_WORKER_ID",
    ]
    assert container["env"][0]["valueFrom"] == {
        "configMapKeyRef": {"name": "mnist-mx-config", "key": "cluster"}
    }
    # It reads what a pod of the same job reads through `envFrom`, with no stray variable.
    plain = _job_read(NONE)
    plain_container = builders.pod(plain, W, 1, 0, 0)["spec"]["containers"][0]
    assert kubeenv.resolve(container, {"mnist-mx-config": builders.config_map(j)}) == (
        kubeenv.resolve(plain_container, {"mnist-mx-config": builders.config_map(plain)})
    )


def test_pods_of_both_layouts_each_find_their_keys() -> None:
    """A job with pods of both layouts (hooks of both versions answered it, as during a
    rolling upgrade): the ConfigMap holds both sets of keys."""
    data = builders.config_map(_job_read(BOTH))["data"]
    assert tuple(data) == (*mxconfig.JOB_ENV, "cluster", "labels")
    assert data["cluster"] == data["MX_CONFIG_CLUSTER"] == CLUSTER_1_2
    assert builders.config_map(_job_read(WHOLE)) == builders.config_map(_job_read(NONE))


def test_user_variables_named_like_ours_are_replaced() -> None:
    spec = train_spec()
    user_env = [{"name": "MX_CONFIG_CLUSTER", "value": "mine"}, {"name": "KEEP", "value": "1"}]
    user_env += [{"name": "DMLC_NUM_WORKER", "value": "99"}, {"name": "DMLC_ROLE", "value": "x"}]
    spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = user_env
    j = builders.job_context("mnist", "team-a", validated_spec("mnist", spec), True)
    env = builders.pod(j, W, 0, 0, 0)["spec"]["containers"][0]["env"]
    ours = [mxconfig.REQUIRED_KEY, "MX_CONFIG", "DMLC_ROLE", "DMLC_WORKER_ID"]
    assert [e["name"] for e in env] == [*ours, "KEEP"]
    assert env[-1] == {"name": "KEEP", "value": "1"}


def test_our_env_from_comes_after_the_users_so_theirs_cannot_override_ours() -> None:
    spec = train_spec(1, 2)
    mine = {"configMapRef": {"name": "mine"}}
    containers = spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    containers[0]["envFrom"] = [mine, {"configMapRef": {"name": "other"}, "prefix": "DMLC_"}]
    containers[0]["env"] = [{"name": "ROLE_SEEN", "value": "$(DMLC_ROLE)/$(DMLC_NUM_WORKER)"}]
    j = builders.job_context("mnist", "team-a", validated_spec("mnist", spec), True)
    container = builders.pod(j, W, 1, 0, 0)["spec"]["containers"][0]
    assert container["envFrom"][-1] == {"configMapRef": {"name": "mnist-mx-config"}}
    maps = {
        "mnist-mx-config": builders.config_map(j),
        "mine": {"data": {"DMLC_NUM_WORKER": "99", "MX_CONFIG_CLUSTER": "no", "OWN": "yes"}},
        "other": {"data": {"ROLE": "hijacked", "NUM_SERVER": "7"}},
    }
    env = kubeenv.resolve(container, maps)
    assert env["DMLC_NUM_WORKER"] == "2"
    assert env["DMLC_NUM_SERVER"] == "1"
    assert env["DMLC_ROLE"] == "worker"
    assert env["MX_CONFIG_CLUSTER"] == CLUSTER_1_2
    assert env["OWN"] == "yes"
    # The user's own variables refer to ours and read our values.
    assert env["ROLE_SEEN"] == "worker/2"
    assert json.loads(env["MX_CONFIG"])["task"] == {"index": 1, "type": "worker"}
