"""The contract's children (docs/behaviour.md#children): names, labels, ports, restart policy and
environment of children."""

import json
from typing import Any

import pytest

from app.core.children import builders
from app.core.model.spec import ReplicaType
from app.core.validate.validation import validated_spec
from tests.support.jobs import container, replica, train_spec

S, P, W = ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.WORKER


def job(spec: dict[str, Any], name: str = "mnist") -> builders.JobContext:
    return builders.job_context(name, "team-a", validated_spec(name, spec))


def env_of(pod: dict[str, Any], index: int = 0) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in pod["spec"]["containers"][index]["env"]}


def test_worker_environment_of_a_distributed_job() -> None:
    pod = builders.pod(job(train_spec(servers=2, workers=3)), W, 2, 0, 0)
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
    value = env_of(builders.pod(job(train_spec(servers=1, workers=1)), S, 0, 0, 0))["MX_CONFIG"]
    assert value == json.dumps(json.loads(value), sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize(
    ("rtype", "role", "worker_id"),
    [
        pytest.param(S, "scheduler", None, id="scheduler"),
        pytest.param(P, "server", None, id="server"),
    ],
)
def test_only_workers_get_a_worker_id(rtype: ReplicaType, role: str, worker_id: None) -> None:
    env = env_of(builders.pod(job(train_spec()), rtype, 0, 0, 0))
    assert (env["DMLC_ROLE"], env.get("DMLC_WORKER_ID")) == (role, worker_id)


def test_single_worker_without_scheduler() -> None:
    env = env_of(builders.pod(job({"mxReplicaSpecs": {"Worker": replica()}}), W, 0, 0, 0))
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
    env = builders.pod(job(spec), W, 0, 0, 0)["spec"]["containers"][0]["env"]
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
    scheduler = builders.pod(j, S, 0, 0, 0)
    assert scheduler["spec"]["containers"][0]["ports"] == ports
    assert env_of(builders.pod(j, W, 0, 0, 0))["DMLC_PS_ROOT_PORT"] == "9000"
    assert builders.service(j, S, 0, 0, 0)["spec"]["ports"] == [
        {"name": "mxjob-port", "port": 9000, "targetPort": 9000},
        {"name": "metrics", "port": 8000, "targetPort": 8000},
    ]


def test_default_port_is_added_after_the_users_ports() -> None:
    spec = {"mxReplicaSpecs": {"Worker": replica()}}
    spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 6006, "protocol": "TCP"}
    ]
    j = job(spec)
    assert builders.pod(j, W, 0, 0, 0)["spec"]["containers"][0]["ports"] == [
        {"containerPort": 6006, "protocol": "TCP"},
        {"name": "mxjob-port", "containerPort": 9091},
    ]
    assert builders.service(j, W, 0, 0, 0)["spec"]["ports"] == [
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
    assert builders.pod(job(spec), W, 0, 0, 0)["spec"]["restartPolicy"] == pod_policy


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
    pod = builders.pod(job(spec), P, 0, 0, 0)
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
    service = builders.service(job(train_spec()), W, 1, 2, 3)
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
    pod = builders.pod(job(train_spec()), W, 1, 2, 3)
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
        env_of(builders.pod(job(spec, "tune"), ReplicaType.TUNER, 0, 0, 0))["MX_CONFIG"]
    )
    assert config["labels"] == {"tunertracker": "", "tunerserver": "2080ti", "tuner": "v100"}
    assert config["task"] == {"type": "tuner", "index": 0}
