"""The contract's children (docs/behaviour.md#children): names, labels, ports, restart policy and
environment of children."""

import json
from typing import Any

import pytest
import yaml

from app.core.build import children
from app.core.model.errors import EnvError
from app.core.model.spec import ReplicaType
from app.core.mxnet import kubeenv, layout, mxconfig
from app.core.render import render
from app.core.validate.validation import validated_spec
from tests.support import FIXTURES, REPO
from tests.support.golden_cases import CASES
from tests.support.hooked import sync
from tests.support.jobs import NOW, container, replica, train_spec

S, P, W = ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.WORKER


def job(spec: dict[str, Any], name: str = "mnist") -> children.JobContext:
    return children.job_context(name, "team-a", validated_spec(name, spec))


def env_of(pod: dict[str, Any], index: int = 0) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in pod["spec"]["containers"][index]["env"]}


def test_worker_environment_of_a_distributed_job() -> None:
    pod = children.pod(job(train_spec(servers=2, workers=3)), W, 2, 0, 0)
    env = env_of(pod)
    assert env == {
        "MX_CONFIG": env["MX_CONFIG"],
        "DMLC_PS_ROOT_URI": "mnist-scheduler-0",
        "DMLC_PS_ROOT_PORT": "9091",
        "DMLC_NUM_SERVER": "2",
        "DMLC_NUM_WORKER": "3",
        "DMLC_ROLE": "worker",
        "DMLC_USE_KUBERNETES": "1",
        "DMLC_WORKER_ID": "2",
    }
    assert json.loads(env["MX_CONFIG"]) == {
        "cluster": {
            "scheduler": [{"url": "mnist-scheduler-0", "port": 9091}],
            "server": [
                {"url": "mnist-server-0", "port": 9091},
                {"url": "mnist-server-1", "port": 9091},
            ],
            "worker": [{"url": f"mnist-worker-{i}", "port": 9091} for i in range(3)],
        },
        "labels": {"scheduler": "", "server": "", "worker": ""},
        "task": {"type": "worker", "index": 2},
    }


def test_mx_config_is_compact_json_with_sorted_keys() -> None:
    value = env_of(children.pod(job(train_spec(servers=1, workers=1)), S, 0, 0, 0))["MX_CONFIG"]
    assert value == json.dumps(json.loads(value), sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize(
    ("rtype", "role", "worker_id"),
    [
        pytest.param(S, "scheduler", None, id="scheduler"),
        pytest.param(P, "server", None, id="server"),
    ],
)
def test_only_workers_get_a_worker_id(rtype: ReplicaType, role: str, worker_id: None) -> None:
    env = env_of(children.pod(job(train_spec()), rtype, 0, 0, 0))
    assert (env["DMLC_ROLE"], env.get("DMLC_WORKER_ID")) == (role, worker_id)


def test_single_worker_without_scheduler() -> None:
    env = env_of(children.pod(job({"mxReplicaSpecs": {"Worker": replica()}}), W, 0, 0, 0))
    assert (env["DMLC_PS_ROOT_URI"], env["DMLC_PS_ROOT_PORT"], env["DMLC_NUM_SERVER"]) == (
        "",
        "0",
        "0",
    )
    assert json.loads(env["MX_CONFIG"])["cluster"] == {
        "worker": [{"url": "mnist-worker-0", "port": 9091}]
    }


def test_reserved_user_variables_are_replaced_not_duplicated() -> None:
    spec = train_spec()
    user_env = [
        {"name": "DMLC_ROLE", "value": "server"},
        {"name": "EPOCHS", "value": "3"},
        {"name": "MX_CONFIG", "value": "{}"},
    ]
    spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = user_env
    env = children.pod(job(spec), W, 0, 0, 0)["spec"]["containers"][0]["env"]
    names = [e["name"] for e in env]
    assert sorted(names) == sorted(set(names))
    assert env_of({"spec": {"containers": [{"env": env}]}})["DMLC_ROLE"] == "worker"
    assert env[-1] == {"name": "EPOCHS", "value": "3"}


def test_user_mxjob_port_is_kept_and_used_everywhere() -> None:
    spec = train_spec()
    ports = [
        {"name": "mxjob-port", "containerPort": 9000},
        {"name": "metrics", "containerPort": 8000},
    ]
    spec["mxReplicaSpecs"]["Scheduler"]["template"]["spec"]["containers"][0]["ports"] = ports
    j = job(spec)
    scheduler = children.pod(j, S, 0, 0, 0)
    assert scheduler["spec"]["containers"][0]["ports"] == ports
    assert env_of(children.pod(j, W, 0, 0, 0))["DMLC_PS_ROOT_PORT"] == "9000"
    assert children.service(j, S, 0, 0, 0)["spec"]["ports"] == [
        {"name": "mxjob-port", "port": 9000, "targetPort": 9000},
        {"name": "metrics", "port": 8000, "targetPort": 8000},
    ]


def test_default_port_is_added_after_the_users_ports() -> None:
    spec = {"mxReplicaSpecs": {"Worker": replica()}}
    spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 6006, "protocol": "TCP"}
    ]
    j = job(spec)
    assert children.pod(j, W, 0, 0, 0)["spec"]["containers"][0]["ports"] == [
        {"containerPort": 6006, "protocol": "TCP"},
        {"name": "mxjob-port", "containerPort": 9091},
    ]
    assert children.service(j, W, 0, 0, 0)["spec"]["ports"] == [
        {"name": "port-6006", "port": 6006, "targetPort": 6006, "protocol": "TCP"},
        {"name": "mxjob-port", "port": 9091, "targetPort": 9091},
    ]


@pytest.mark.parametrize(
    ("policy", "pod_policy"),
    [
        pytest.param("Always", "Always", id="always"),
        pytest.param("OnFailure", "OnFailure", id="on-failure"),
        pytest.param("Never", "Never", id="never"),
        pytest.param("ExitCode", "Never", id="exit-code-is-ours"),
        pytest.param(None, "Never", id="default"),
    ],
)
def test_pod_restart_policy(policy: str | None, pod_policy: str) -> None:
    spec = {"mxReplicaSpecs": {"Worker": replica(1, policy)}}
    assert children.pod(job(spec), W, 0, 0, 0)["spec"]["restartPolicy"] == pod_policy


def test_template_passes_through_and_our_labels_win() -> None:
    template: dict[str, Any] = {
        "metadata": {
            "labels": {
                "team": "vision",
                "training.kubeflow.org/job-name": "other",
                "controller-uid": "not-the-parent",
            },
            "annotations": {"sidecar.istio.io/inject": "false"},
            "name": "ignored",
            "namespace": "ignored",
        },
        "spec": {
            "initContainers": [
                {"name": "fetch", "image": "busybox", "env": [{"name": "A", "value": "1"}]}
            ],
            "containers": [container(args=["train.py"]), {"name": "sidecar", "image": "envoy"}],
            "nodeSelector": {"gpu": "a100"},
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }
    spec = {
        "mxReplicaSpecs": {"Scheduler": {"template": template}, "Server": {"template": template}}
    }
    pod = children.pod(job(spec), P, 0, 0, 0)
    assert pod["metadata"] == {
        "name": "mnist-server-0",
        "namespace": "team-a",
        "labels": {
            "team": "vision",
            "training.kubeflow.org/operator-name": "mxjob-controller",
            "training.kubeflow.org/job-name": "mnist",
            "training.kubeflow.org/replica-type": "server",
            "training.kubeflow.org/replica-index": "0",
            "training.kubeflow.org/job-role": "master",
            "training.kubeflow.org/replica-attempt": "0",
        },
        "annotations": {"sidecar.istio.io/inject": "false"},
    }
    assert pod["spec"]["initContainers"] == template["spec"]["initContainers"]
    assert (pod["spec"]["nodeSelector"], pod["spec"]["volumes"]) == (
        {"gpu": "a100"},
        [{"name": "data", "emptyDir": {}}],
    )
    assert pod["spec"]["containers"][0]["args"] == ["train.py"]
    assert env_of(pod, 1)["DMLC_ROLE"] == "server"
    assert "ports" not in pod["spec"]["containers"][1]


def test_headless_service_selects_every_attempt_of_one_replica() -> None:
    service = children.service(job(train_spec()), W, 1, 2, 3)
    assert service == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "mnist-worker-1",
            "namespace": "team-a",
            "labels": service["spec"]["selector"],
            "annotations": {
                "training.kubeflow.org/replica-attempt": "2",
                "training.kubeflow.org/restarts-before": "3",
            },
        },
        "spec": {
            "clusterIP": "None",
            "selector": {
                "training.kubeflow.org/operator-name": "mxjob-controller",
                "training.kubeflow.org/job-name": "mnist",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
            "ports": [{"name": "mxjob-port", "port": 9091, "targetPort": 9091}],
        },
    }


def test_replacement_pod_name_and_attempt() -> None:
    pod = children.pod(job(train_spec()), W, 1, 2, 3)
    assert pod["metadata"]["name"] == "mnist-worker-1-r2"
    assert pod["metadata"]["labels"]["training.kubeflow.org/replica-attempt"] == "2"
    assert pod["metadata"]["annotations"] == {"training.kubeflow.org/restarts-before": "3"}


def test_tuner_labels_from_annotation_or_legacy_field() -> None:
    spec = {
        "jobMode": "MXTune",
        "mxReplicaSpecs": {
            "TunerTracker": replica(),
            "TunerServer": replica(2) | {"label": "2080ti"},
            "Tuner": replica(metadata={"annotations": {"tuner-server-key": "v100"}}),
        },
    }
    config = json.loads(
        env_of(children.pod(job(spec, "tune"), ReplicaType.TUNER, 0, 0, 0))["MX_CONFIG"]
    )
    assert config["labels"] == {"tunertracker": "", "tunerserver": "2080ti", "tuner": "v100"}
    assert config["task"] == {"type": "tuner", "index": 0}


# What each container's process read before MX_CONFIG's shared parts moved to a ConfigMap,
# recorded from the previous version's answers: every golden case, example and legacy manifest.
BEFORE = json.loads((FIXTURES / "env-before-configmap.json").read_text())
# Every variable each container's process read under release 0.1.0's layout (the ConfigMap's
# keys `cluster` and `labels` read through configMapKeyRef, every DMLC_* variable in the
# pod), recorded from that code's answers, sorted by name: the kubelet hands a process its
# variables in no set order (it gathers them in a map), so the order is not part of what a
# process reads.
RELEASED = json.loads((FIXTURES / "env-0.1.0.json").read_text())
# Cases added since a recording: the same job and phases as a recorded one.
SAME_AS = {
    "golden/inline-mx-config-running": "golden/all-running",
    "golden/upgraded-job-running": "golden/all-running",
    "golden/released-job-running": "golden/all-running",
    "golden/released-job-worker-replaced": "golden/worker-replacement-running",
    # Edits of the running job (all-running's pods), kept exactly while the spec is invalid.
    "golden/invalid-spec-running-job-still-invalid": "golden/invalid-spec-running-job",
    "golden/invalid-spec-running-job-fixed": "golden/invalid-spec-running-job",
    "golden/invalid-spec-failed-by-earlier-version": "golden/invalid-spec-running-job",
    # The replica-services annotation changes the Services only: every process reads the same.
    "golden/replica-services-scheduler-running": "golden/all-running",
    "golden/replica-services-switched-to-scheduler": "golden/all-running",
    "golden/replica-services-switched-back-to-all": "golden/all-running",
    "golden/replica-services-invalid-value": "golden/all-running",
}
SHARED = {variable for variable, _ in mxconfig.SHARED_PARTS}


def process_env(children: list[dict[str, Any]], shared: bool = True) -> dict[str, list[list[str]]]:
    """Each pod container's environment as its process starts with it, sorted by name; with
    `shared` False, without the variables that only carry MX_CONFIG's shared parts."""
    config_maps = {c["metadata"]["name"]: c for c in children if c["kind"] == "ConfigMap"}
    out = {}
    for pod in (c for c in children if c["kind"] == "Pod"):
        for each in pod["spec"]["containers"]:
            env = kubeenv.resolve(each, config_maps)
            key = f"{pod['metadata']['name']}/{each['name']}"
            out[key] = sorted([k, v] for k, v in env.items() if shared or k not in SHARED)
    return out


def answers() -> list[Any]:
    cases = [
        pytest.param(f"golden/{name}", sync(*make())["children"], id=f"golden-{name}")
        for name, make in CASES.items()
    ]
    for path in MANIFESTS:
        documents = list(yaml.safe_load_all(render(path.read_text(), NOW)))
        source = str(path.relative_to(REPO))
        cases.append(pytest.param(source, documents, id=source))
    return cases


MANIFESTS = sorted([*(REPO / "examples").glob("*.yaml"), *(FIXTURES / "legacy").glob("*.yaml")])


@pytest.mark.parametrize(("source", "children"), answers())
def test_processes_read_the_same_environment_as_before(
    source: str, children: list[dict[str, Any]]
) -> None:
    # Sources with no pod in their answer recorded nothing.
    released = RELEASED[source] if source in RELEASED else RELEASED.get(SAME_AS.get(source), {})
    assert process_env(children) == released
    before = {k: sorted(v) for k, v in BEFORE.get(SAME_AS.get(source, source), {}).items()}
    assert process_env(children, shared=False) == before


def test_every_recorded_source_is_checked() -> None:
    checked = {f"golden/{name}" for name in CASES} | {str(p.relative_to(REPO)) for p in MANIFESTS}
    assert set(BEFORE) <= checked
    assert set(RELEASED) <= checked


def test_without_a_configmap_type_mx_config_stays_inline() -> None:
    j = children.job_context("mnist", "team-a", validated_spec("mnist", train_spec()), False)
    env = children.pod(j, W, 1, 0, 0)["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env][:2] == ["MX_CONFIG", "DMLC_PS_ROOT_URI"]
    assert "$" not in env[0]["value"]


def test_with_a_configmap_type_mx_config_refers_to_it() -> None:
    j = children.job_context("mnist", "team-a", validated_spec("mnist", train_spec()), True)
    container = children.pod(j, W, 1, 0, 0)["spec"]["containers"][0]
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
    j = children.job_context("mnist", "team-a", validated_spec("mnist", spec), True)
    foreign = {"mnist-mx-config": {"data": data}}
    containers = children.pod(j, W, 1, 0, 0)["spec"]["containers"]
    assert len(containers) == 2
    for each in containers:
        with pytest.raises(EnvError, match="couldn't find key MX_CONFIG_LABELS in"):
            kubeenv.resolve(each, foreign)
    own = {"mnist-mx-config": children.config_map(j)}
    assert kubeenv.resolve(containers[0], own)["DMLC_NUM_WORKER"] == "2"


CLUSTER_1_2 = (
    '{"scheduler":[{"port":9091,"url":"mnist-scheduler-0"}],'
    '"server":[{"port":9091,"url":"mnist-server-0"}],'
    '"worker":[{"port":9091,"url":"mnist-worker-0"},{"port":9091,"url":"mnist-worker-1"}]}'
)


def test_config_map_holds_every_job_wide_variable_by_name() -> None:
    j = children.job_context("mnist", "team-a", validated_spec("mnist", train_spec(1, 2)), True)
    assert children.config_map(j) == {
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
    assert tuple(children.config_map(j)["data"]) == mxconfig.JOB_ENV


NONE = layout.ConfigMapUse()
OLD, WHOLE = layout.ConfigMapUse(old_keys=True), layout.ConfigMapUse(env_from=True)
BOTH = layout.ConfigMapUse(old_keys=True, env_from=True)


def _job_read(config_map_use: layout.ConfigMapUse) -> children.JobContext:
    spec = validated_spec("mnist", train_spec(1, 2))
    return children.job_context("mnist", "team-a", spec, True, config_map_use)


def test_while_a_0_1_0_pod_reads_the_old_keys_the_job_keeps_0_1_0s_layout() -> None:
    j = _job_read(OLD)
    data = children.config_map(j)["data"]
    assert data == {"cluster": CLUSTER_1_2, "labels": '{"scheduler":"","server":"","worker":""}'}
    container = children.pod(j, W, 1, 0, 0)["spec"]["containers"][0]
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
    plain_container = children.pod(plain, W, 1, 0, 0)["spec"]["containers"][0]
    assert kubeenv.resolve(container, {"mnist-mx-config": children.config_map(j)}) == (
        kubeenv.resolve(plain_container, {"mnist-mx-config": children.config_map(plain)})
    )


def test_pods_of_both_layouts_each_find_their_keys() -> None:
    """A job with pods of both layouts (hooks of both versions answered it, as during a
    rolling upgrade): the ConfigMap holds both sets of keys."""
    data = children.config_map(_job_read(BOTH))["data"]
    assert tuple(data) == (*mxconfig.JOB_ENV, "cluster", "labels")
    assert data["cluster"] == data["MX_CONFIG_CLUSTER"] == CLUSTER_1_2
    assert children.config_map(_job_read(WHOLE)) == children.config_map(_job_read(NONE))


def test_user_variables_named_like_ours_are_replaced() -> None:
    spec = train_spec()
    user_env = [{"name": "MX_CONFIG_CLUSTER", "value": "mine"}, {"name": "KEEP", "value": "1"}]
    user_env += [{"name": "DMLC_NUM_WORKER", "value": "99"}, {"name": "DMLC_ROLE", "value": "x"}]
    spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = user_env
    j = children.job_context("mnist", "team-a", validated_spec("mnist", spec), True)
    env = children.pod(j, W, 0, 0, 0)["spec"]["containers"][0]["env"]
    ours = [mxconfig.REQUIRED_KEY, "MX_CONFIG", "DMLC_ROLE", "DMLC_WORKER_ID"]
    assert [e["name"] for e in env] == [*ours, "KEEP"]
    assert env[-1] == {"name": "KEEP", "value": "1"}


def test_our_env_from_comes_after_the_users_so_theirs_cannot_override_ours() -> None:
    spec = train_spec(1, 2)
    mine = {"configMapRef": {"name": "mine"}}
    containers = spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    containers[0]["envFrom"] = [mine, {"configMapRef": {"name": "other"}, "prefix": "DMLC_"}]
    containers[0]["env"] = [{"name": "ROLE_SEEN", "value": "$(DMLC_ROLE)/$(DMLC_NUM_WORKER)"}]
    j = children.job_context("mnist", "team-a", validated_spec("mnist", spec), True)
    container = children.pod(j, W, 1, 0, 0)["spec"]["containers"][0]
    assert container["envFrom"][-1] == {"configMapRef": {"name": "mnist-mx-config"}}
    maps = {
        "mnist-mx-config": children.config_map(j),
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
