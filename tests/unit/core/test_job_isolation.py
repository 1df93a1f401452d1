"""A job's pod template cannot take over what the operator owns, and a job never selects,
counts or keeps another job's pods."""

import copy
from typing import Any

import pytest

from app.core.mxnet import names
from app.core.mxnet.mxconfig import RESERVED_ENV
from app.integrations.gang import SCHEDULER_PLUGINS, VOLCANO
from tests.support import jobs as s
from tests.support.hooked import sync

RUNNING = s.pod_status("Running")
OTHER_UID = "0f0f0f0f-0000-4000-8000-000000000000"


def _hostile_template() -> dict[str, Any]:
    """A template that tries to set everything the operator owns."""
    labels = {
        names.LABEL_OPERATOR: "someone-else",
        names.LABEL_JOB: "other",
        names.LABEL_TYPE: "scheduler",
        names.LABEL_INDEX: "7",
        names.LABEL_ATTEMPT: "9",
        names.LABEL_ROLE: "master",
        VOLCANO.group_label or SCHEDULER_PLUGINS.group_label or "": "other",
        "team": "a",
    }
    annotations = {
        names.ANNOTATION_RESTARTS: "1000",
        VOLCANO.group_annotation or "": "other",
        "note": "kept",
    }
    env = [{"name": n, "value": "hijacked"} for n in RESERVED_ENV] + [
        {"name": "MINE", "value": "1"}
    ]
    return {
        "metadata": {
            "name": "hijacked-name",
            "generateName": "hijacked-",
            "namespace": "kube-system",
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [{"kind": "Deployment", "name": "x", "uid": "y"}],
        },
        "spec": {
            "containers": [
                s.container(env=copy.deepcopy(env)),
                {"name": "sidecar", "image": s.IMAGE, "env": copy.deepcopy(env)},
            ]
        },
    }


def _job(child_types: dict[str, list[Any]] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = s.train_spec(1, 2, "ExitCode")
    for replica in spec["mxReplicaSpecs"].values():
        replica["template"] = _hostile_template()
    parent = s.mxjob(spec, name="mine")
    return parent, s.created(s.request(parent, others=child_types))


def _expected_labels(pod: dict[str, Any]) -> dict[str, str]:
    name = pod["metadata"]["name"]
    rtype, index = name.split("-")[1], name.split("-")[2]
    ours = {
        names.LABEL_OPERATOR: names.OPERATOR_NAME,
        names.LABEL_JOB: "mine",
        names.LABEL_TYPE: rtype,
        names.LABEL_INDEX: index,
        names.LABEL_ATTEMPT: "0",
    }
    if rtype == "server":
        ours[names.LABEL_ROLE] = "master"
    return ours


def test_the_template_cannot_rename_move_or_relabel_a_pod() -> None:
    _, answer = _job()
    pods = s.pods_of(answer)
    assert s.names(pods) == [
        "mine-scheduler-0",
        "mine-server-0",
        "mine-worker-0",
        "mine-worker-1",
    ]
    for pod in pods:
        meta = pod["metadata"]
        assert set(meta) == {"name", "namespace", "labels", "annotations"}
        assert meta["namespace"] == "default"
        assert meta["labels"].items() >= _expected_labels(pod).items()
        assert meta["labels"]["team"] == "a"


def test_the_template_cannot_preset_the_restart_count() -> None:
    _, answer = _job()
    for pod in s.pods_of(answer):
        annotations = pod["metadata"]["annotations"]
        assert names.ANNOTATION_RESTARTS not in annotations
        assert annotations["note"] == "kept"


def test_a_preset_restart_count_would_not_fail_the_job_at_once() -> None:
    parent, answer = _job()
    parent["spec"]["runPolicy"] = {"backoffLimit": 3}
    phases = {p["metadata"]["name"]: RUNNING for p in s.pods_of(answer)}
    _, again = s.step(parent, answer, phases)
    reasons = [c["reason"] for c in again["status"]["conditions"]]
    assert "BackoffLimitExceeded" not in reasons


def test_reserved_env_is_ours_in_every_container() -> None:
    _, answer = _job()
    for pod in s.pods_of(answer):
        for container in pod["spec"]["containers"]:
            env = container["env"]
            values = {e["name"]: e["value"] for e in env}
            assert len(env) == len(values), "an env name appears twice"
            assert "hijacked" not in [values[n] for n in RESERVED_ENV if n in values]
            assert values["MINE"] == "1"
            assert values["DMLC_ROLE"] == pod["metadata"]["labels"][names.LABEL_TYPE]


@pytest.mark.parametrize("gang", [VOLCANO, SCHEDULER_PLUGINS], ids=lambda g: g.scheduler_name)
def test_the_template_cannot_join_another_jobs_pod_group(gang: Any) -> None:
    _, answer = _job({gang.child_type: []})
    for pod in s.pods_of(answer):
        meta = pod["metadata"]
        if gang.group_annotation:
            assert meta["annotations"][gang.group_annotation] == "mine"
        if gang.group_label:
            assert meta["labels"][gang.group_label] == "mine"


def test_services_select_only_this_jobs_replica() -> None:
    _, answer = _job()
    for service in s.services_of(answer):
        name = service["metadata"]["name"]
        rtype, index = name.split("-")[1], name.split("-")[2]
        assert service["spec"]["selector"] == {
            names.LABEL_OPERATOR: names.OPERATOR_NAME,
            names.LABEL_JOB: "mine",
            names.LABEL_TYPE: rtype,
            names.LABEL_INDEX: index,
        }


def _impostor(pod: dict[str, Any], job: str, **status: Any) -> dict[str, Any]:
    """Another job's pod with the same replica labels, or one whose name mimics ours."""
    out = s.observed(pod, **status)
    out["metadata"]["labels"][names.LABEL_JOB] = job
    return out


@pytest.mark.parametrize(
    ("job", "rename"),
    [
        pytest.param("other", True, id="other-job-own-name"),
        pytest.param("other", False, id="other-job-our-name"),
        pytest.param("mine-worker", True, id="job-whose-name-prefixes-ours"),
        pytest.param("", True, id="no-job-label"),
    ],
)
def test_another_jobs_pods_are_neither_counted_nor_kept(job: str, rename: bool) -> None:
    parent = s.mxjob(s.train_spec(1, 2, "Never"), name="mine")
    first = s.created(s.request(parent))
    pods = s.pods_of(first)
    failed, done = s.pod_status("Failed", exit_code=1), s.pod_status("Succeeded", exit_code=0)
    impostors = [
        _impostor(p, job, **st) for p, st in zip(pods, [failed, done, RUNNING], strict=False)
    ]
    if rename:
        for impostor in impostors:
            impostor["metadata"]["name"] = impostor["metadata"]["name"].replace("mine", "them")
    # Without renaming, the impostors hold three of our pods' names.
    ours = [s.observed(p, **RUNNING) for p in (pods if rename else pods[3:])]
    services = [s.observed(x) for x in s.services_of(first)]
    request = s.request(parent | {"status": first["status"]}, ours + impostors, services)
    answer = sync(request, s.NOW)
    true = [c["type"] for c in answer["status"]["conditions"] if c["status"] == "True"]
    assert "Failed" not in true
    counts = answer["status"]["replicaStatuses"].values()
    assert sum(c["active"] for c in counts) == len(ours)
    assert sum(c["failed"] + c["succeeded"] for c in counts) == 0
    kept = s.names(s.pods_of(answer))
    assert not {p["metadata"]["name"] for p in impostors} - set(s.names(pods)) & set(kept)
    assert {p["metadata"]["labels"][names.LABEL_JOB] for p in s.pods_of(answer)} == {"mine"}


def test_another_jobs_services_do_not_move_our_attempts() -> None:
    parent = s.mxjob(s.train_spec(1, 1), name="mine")
    first = s.created(s.request(parent))
    services = [s.observed(x) for x in s.services_of(first)]
    for service in services:
        foreign = copy.deepcopy(service)
        foreign["metadata"]["name"] = service["metadata"]["name"].replace("mine", "other")
        foreign["metadata"]["labels"][names.LABEL_JOB] = "other"
        foreign["metadata"]["annotations"] = {
            names.LABEL_ATTEMPT: "5",
            names.ANNOTATION_RESTARTS: "5",
        }
        services.append(foreign)
        break
    answer = sync(s.request(parent | {"status": first["status"]}, [], services), s.NOW)
    assert s.names(s.pods_of(answer)) == s.names(s.pods_of(first))
