"""Jobs taken over from training-operator v1.8.1 (docs/behaviour.md#jobs-taken-over-from-
training-operator): pods and Services as training-operator makes them (its `SetPodEnv`, its
`CreateNewService`, written out here from its source), adopted by the takeover's label. Each
adopted pod is its replica's current attempt; the job goes on from the status training-operator
wrote. The same on the real training-operator: tests/apiserver/test_migration_v1_8.py."""

import json
from typing import Any

from app.core.mxnet.kubeenv import resolve
from app.core.reconcile import sync
from tests.support.jobs import (
    NOW,
    UID,
    mxjob,
    observed,
    pod_status,
    pods_of,
    request,
    train_spec,
)

JOB = "mnist"
STARTED = "2026-11-22T10:00:00Z"
TYPES = {"Scheduler": 1, "Server": 2, "Worker": 2}


def to_labels(rtype: str, index: int) -> dict[str, str]:
    return {
        "training.kubeflow.org/operator-name": "mxjob-controller",
        "training.kubeflow.org/job-name": JOB,
        "training.kubeflow.org/replica-type": rtype,
        "training.kubeflow.org/replica-index": str(index),
    }


def claimed(meta: dict[str, Any]) -> dict[str, Any]:
    """What the takeover leaves: training-operator's object with the job's controller-uid."""
    meta["labels"]["controller-uid"] = UID
    meta["ownerReferences"] = [{"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": JOB,
                                "uid": UID, "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    return meta


def mx_config(rtype: str, index: int) -> str:
    cluster = {t.lower(): [{"url": f"{JOB}-{t.lower()}-{i}", "port": 9091} for i in range(n)]
               for t, n in TYPES.items()}  # fmt: skip
    labels = {t.lower(): "" for t in TYPES}
    # Go's json.Marshal of training-operator's MXConfig struct: fields in declaration order.
    return json.dumps({"cluster": cluster, "labels": labels,
                       "task": {"type": rtype, "index": index}}, separators=(",", ":"))  # fmt: skip


def to_pod(rtype: str, index: int, **status: Any) -> dict[str, Any]:
    env = [
        {"name": "MX_CONFIG", "value": mx_config(rtype, index)},
        {"name": "DMLC_PS_ROOT_PORT", "value": "9091"},
        {"name": "DMLC_PS_ROOT_URI", "value": f"{JOB}-scheduler-0"},
        {"name": "DMLC_NUM_SERVER", "value": "2"},
        {"name": "DMLC_NUM_WORKER", "value": "2"},
        {"name": "DMLC_ROLE", "value": rtype},
        {"name": "DMLC_USE_KUBERNETES", "value": "1"},
    ]
    if rtype == "worker":
        env.append({"name": "DMLC_WORKER_ID", "value": str(index)})
    labels = to_labels(rtype, index) | ({"training.kubeflow.org/job-role": "master"}
                                        if rtype == "server" else {})  # fmt: skip
    container = {"name": "mxnet", "image": "mxjob/mxnet:1.9.1", "env": env,
                 "ports": [{"name": "mxjob-port", "containerPort": 9091, "protocol": "TCP"}]}  # fmt: skip
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": claimed({"name": f"{JOB}-{rtype}-{index}", "namespace": "default",
                             "labels": labels, "uid": f"to-{rtype}-{index}"}),
        "spec": {"containers": [container], "restartPolicy": "Never"},
        "status": pod_status("Running", startTime=STARTED) | status,
    }  # fmt: skip


def to_service(rtype: str, index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": claimed({"name": f"{JOB}-{rtype}-{index}", "namespace": "default",
                             "labels": to_labels(rtype, index)}),
        "spec": {"clusterIP": "None", "selector": to_labels(rtype, index),
                 "ports": [{"name": "mxjob-port", "port": 9091, "protocol": "TCP",
                            "targetPort": 9091}]},
    }  # fmt: skip


def to_status(*extra: dict[str, str]) -> dict[str, Any]:
    """The status training-operator v1.8.1 writes for a running job (its reasons, its times)."""
    conds = [
        {"type": "Created", "status": "True", "reason": "MXJobCreated",
         "message": f"MXJob {JOB} is created.", "lastUpdateTime": STARTED,
         "lastTransitionTime": STARTED},
        {"type": "Running", "status": "True", "reason": "MXJobRunning",
         "message": f"MXJob {JOB} is running.", "lastUpdateTime": "2026-11-22T10:00:05Z",
         "lastTransitionTime": "2026-11-22T10:00:05Z"},
    ]  # fmt: skip
    return {"conditions": conds + list(extra), "startTime": STARTED,
            "replicaStatuses": {t: {"active": n} for t, n in TYPES.items()}}  # fmt: skip


def children(**pods: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every pod and Service of the 1/2/2 job as training-operator made them, some pods'
    status as `pods` says (by name)."""
    made = [(t.lower(), i) for t, n in TYPES.items() for i in range(n)]
    found = []
    for rtype, index in made:
        pod = to_pod(rtype, index)
        pod["status"] = pods.get(pod["metadata"]["name"], pod["status"])
        found.append(pod)
    return found, [to_service(rtype, index) for rtype, index in made]


def answer(
    spec: dict[str, Any],
    pods: dict[str, dict[str, Any]] | None = None,
    config_maps: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The hook's answer for the job, some pods' status as `pods` says (by name)."""
    made, services = children(**(pods or {}))
    parent = mxjob(spec, JOB, to_status())
    others = {"ConfigMap.v1": config_maps or []}
    return sync(request(parent, made, services, others), NOW, [])


def test_a_running_job_goes_on_as_training_operator_left_it() -> None:
    answered = answer(train_spec(2, 2, "ExitCode"))
    status = answered["status"]
    assert status["conditions"] == to_status()["conditions"], "times and reasons kept"
    assert status["startTime"] == STARTED
    assert status["restartCount"] == 0
    made, services = children()
    # Every adopted pod kept under its name (Metacontroller never updates a pod: OnDelete).
    assert [p["metadata"]["name"] for p in pods_of(answered)] == [
        p["metadata"]["name"] for p in made
    ]
    # Every Service the hook asks for is training-operator's: its selector and ports.
    asked = {c["metadata"]["name"]: c for c in answered["children"] if c["kind"] == "Service"}
    for theirs in services:
        mine = asked[theirs["metadata"]["name"]]
        assert mine["spec"]["selector"] == theirs["spec"]["selector"]
        assert [(p["name"], p["port"]) for p in mine["spec"]["ports"]] == [("mxjob-port", 9091)]


def test_a_crashed_adopted_worker_is_replaced_with_the_variables_it_had() -> None:
    killed = pod_status("Failed", 137, startTime=STARTED)
    answered = answer(train_spec(2, 2, "ExitCode"), {f"{JOB}-worker-1": killed})
    (replacement,) = [p for p in pods_of(answered) if p["metadata"]["name"].endswith("-r1")]
    assert replacement["metadata"]["name"] == f"{JOB}-worker-1-r1"
    (config_map,) = [c for c in answered["children"] if c["kind"] == "ConfigMap"]
    ours = resolve(
        replacement["spec"]["containers"][0], {config_map["metadata"]["name"]: config_map}
    )
    theirs = resolve(to_pod("worker", 1)["spec"]["containers"][0], {})
    assert {k: v for k, v in ours.items() if k.startswith("DMLC_")} == {
        k: v for k, v in theirs.items() if k.startswith("DMLC_")
    }
    assert json.loads(ours["MX_CONFIG"]) == json.loads(theirs["MX_CONFIG"])
    assert answered["status"]["restartCount"] == 1


def test_in_place_restarts_made_before_the_switch_count_toward_the_backoff_limit() -> None:
    spec = train_spec(2, 2, "OnFailure")
    spec["runPolicy"] = {"backoffLimit": 2}
    restarted = pod_status("Running", restarts=3, startTime=STARTED)
    answered = answer(spec, {f"{JOB}-worker-0": restarted})
    failed = [c for c in answered["status"]["conditions"] if c["type"] == "Failed"]
    assert [c["reason"] for c in failed] == ["BackoffLimitExceeded"]


def test_the_deadline_counts_from_training_operators_start_time() -> None:
    spec = train_spec(2, 2, "ExitCode")
    # Started at 10:00 under training-operator; the hook's clock says 12:00.
    spec["runPolicy"] = {"activeDeadlineSeconds": 3600}
    failed = [c for c in answer(spec)["status"]["conditions"] if c["type"] == "Failed"]
    assert [c["reason"] for c in failed] == ["DeadlineExceeded"]
    spec["runPolicy"] = {"activeDeadlineSeconds": 3 * 3600}
    # Once the job's ConfigMap exists (the first sync asks for it), the deadline is what is left.
    made = [c for c in answer(spec)["children"] if c["kind"] == "ConfigMap"]
    assert answer(spec, config_maps=[observed(c) for c in made])["resyncAfterSeconds"] == 3600


def test_the_adopted_schedulers_exit_decides() -> None:
    done = pod_status("Succeeded", 0, startTime=STARTED)
    answered = answer(train_spec(2, 2, "ExitCode"), {f"{JOB}-scheduler-0": done})
    succeeded = [c for c in answered["status"]["conditions"] if c["type"] == "Succeeded"]
    assert [c["status"] for c in succeeded] == ["True"]
