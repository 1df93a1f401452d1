"""The takeover's decisions (app/controllers/takeover/plan.py): an object is claimed only where
its controller ownerReference is its job's uid; everything else is named and left alone; and
training-operator counts as stopped only once step 2 of the switch is done and rolled out."""

from typing import Any

import pytest

from app.controllers.takeover.plan import (
    Job,
    Verdict,
    claim_patch,
    decide,
    enabled_schemes,
    operator_problems,
    read_job,
    removed_when_finished,
)

UID = "0b7c2f7e-9d4a-4c1e-8a43-1d0e4f6a5b21"
OTHER_UID = "5f0e3c1a-2b4d-4e6f-8a9b-0c1d2e3f4a5b"
TO_LABELS = {
    "training.kubeflow.org/operator-name": "mxjob-controller",
    "training.kubeflow.org/job-name": "running",
    "training.kubeflow.org/replica-type": "worker",
    "training.kubeflow.org/replica-index": "0",
}


def stored_job(name: str = "running", uid: str = UID, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "legacy", "name": name, "uid": uid},
        "spec": {"mxReplicaSpecs": {}},
        "status": status,
    }


JOB = Job("legacy", "running", UID, None, "Running")


def owner(uid: str = UID, kind: str = "MXJob", controller: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1" if kind == "MXJob" else "apps/v1",
        "kind": kind,
        "name": "running" if kind == "MXJob" else "web",
        "uid": uid,
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def child(
    name: str = "running-worker-0", refs: Any = None, phase: str = "Running", **labels: str
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "namespace": "legacy",
        "name": name,
        "uid": f"uid-of-{name}",
        "labels": TO_LABELS | labels,
    }
    meta["ownerReferences"] = [owner()] if refs is None else refs
    return {"metadata": meta, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("obj", "verdict", "why"),
    [
        pytest.param(child(), Verdict.CLAIM, "", id="training-operator's: claimed"),
        pytest.param(child(**{"controller-uid": UID}), Verdict.OURS, "", id="already-labelled"),
        pytest.param(
            child(**{"controller-uid": OTHER_UID}), Verdict.LEFT,
            f"it is labelled controller-uid={OTHER_UID}, not the job's uid", id="labelled-for-another",
        ),
        pytest.param(
            child(refs=[owner(kind="ReplicaSet", uid=OTHER_UID)]), Verdict.LEFT,
            "its controller is ReplicaSet web, not this job", id="owned-by-a-replicaset",
        ),
        pytest.param(
            child(refs=[owner(uid=OTHER_UID)]), Verdict.LEFT,
            "its controller is MXJob running, not this job", id="an-earlier-job-of-the-name",
        ),
        pytest.param(
            child(refs=[owner(controller=False)]), Verdict.LEFT,
            "it has no controller owner (released by an earlier sync, or made by hand)",
            id="owner-but-not-controller",
        ),
        pytest.param(
            child(refs=[]), Verdict.LEFT,
            "it has no controller owner (released by an earlier sync, or made by hand)",
            id="released",
        ),
    ],
)  # fmt: skip
def test_only_the_jobs_own_objects_are_claimed(
    obj: dict[str, Any], verdict: Verdict, why: str
) -> None:
    (decided,) = decide([JOB], "pod", [obj])
    assert (decided.verdict, decided.why, decided.job) == (verdict, why, "legacy/running")


def test_a_child_being_deleted_is_left_to_the_garbage_collector() -> None:
    obj = child()
    obj["metadata"]["deletionTimestamp"] = "2026-12-07T10:00:00Z"
    (decided,) = decide([JOB], "pod", [obj])
    assert (decided.verdict, decided.why) == (Verdict.LEFT, "it is being deleted")


def test_objects_of_no_listed_job_are_not_mentioned() -> None:
    other = child(name="else-worker-0", refs=[owner(uid=OTHER_UID)])
    other["metadata"]["labels"] = TO_LABELS | {"training.kubeflow.org/job-name": "else"}
    assert decide([JOB], "pod", [other]) == []


def test_the_claim_tests_the_uid_and_adds_one_label() -> None:
    (decided,) = decide([JOB], "service", [child()])
    assert claim_patch(decided) == [
        {"op": "test", "path": "/metadata/uid", "value": "uid-of-running-worker-0"},
        {"op": "add", "path": "/metadata/labels/controller-uid", "value": UID},
    ]


@pytest.mark.parametrize(
    ("spec", "finished", "policy"),
    [
        pytest.param({}, None, "Running", id="default"),
        pytest.param({"runPolicy": {"cleanPodPolicy": "None"}}, None, "None", id="run-policy"),
        pytest.param({"cleanPodPolicy": "All"}, None, "All", id="legacy-field"),
        pytest.param(
            {"cleanPodPolicy": "All", "runPolicy": {"cleanPodPolicy": "None"}}, None, "None",
            id="run-policy-wins",
        ),
    ],
)  # fmt: skip
def test_a_stored_job_as_the_takeover_reads_it(
    spec: dict[str, Any], finished: str | None, policy: str
) -> None:
    stored = stored_job() | {"spec": spec}
    assert read_job(stored) == Job("legacy", "running", UID, finished, policy)


DONE = [{"type": "Created", "status": "True"}, {"type": "Succeeded", "status": "True"}]


@pytest.mark.parametrize(
    ("run_policy", "removed"),
    [
        pytest.param({}, ["running-server-0"], id="Running: the servers still running"),
        pytest.param({"cleanPodPolicy": "All"}, ["running-scheduler-0", "running-server-0"], id="All"),
        pytest.param({"cleanPodPolicy": "None"}, [], id="None"),
    ],
)  # fmt: skip
def test_a_finished_jobs_pods_that_its_first_sync_removes(
    run_policy: dict[str, Any], removed: list[str]
) -> None:
    stored = stored_job(conditions=DONE) | {"spec": {"runPolicy": run_policy}}
    job = read_job(stored)
    assert job is not None
    assert job.finished == "Succeeded"
    pods = [child("running-scheduler-0", phase="Succeeded"), child("running-server-0")]
    assert [c.name for c in removed_when_finished(job, decide([job], "pod", pods))] == removed


def test_a_running_job_has_nothing_removed() -> None:
    assert removed_when_finished(JOB, decide([JOB], "pod", [child()])) == []


def deployment(
    args: list[str] | None,
    generation: int = 2,
    observed: int = 2,
    replicas: int = 1,
    running: int | None = None,
    **status: int,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "training-operator"}
    if args is not None:
        container["args"] = args
    shown = {
        "observedGeneration": observed,
        "replicas": replicas if running is None else running,
        "updatedReplicas": replicas,
    }
    return {
        "metadata": {"generation": generation},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [container]}}},
        "status": shown | status,
    }


WITHOUT_MXJOB = ["--enable-scheme=tfjob", "--enable-scheme=pytorchjob"]
EVERY = "its Deployment enables every job kind (no --enable-scheme leaves mxjob out)"
MXJOB = "its Deployment enables mxjob (no --enable-scheme leaves mxjob out)"
ROLLOUT = "its Deployment's rollout is not finished (an old pod may still run)"
WEBHOOK = "validator.training-operator.kubeflow.org/validator.mxjob.training-operator.kubeflow.org"


@pytest.mark.parametrize(
    ("webhooks", "found", "problems"),
    [
        pytest.param([], deployment(WITHOUT_MXJOB), [], id="step 3 done"),
        pytest.param([], None, [], id="no Deployment"),
        pytest.param([], deployment(None), [EVERY], id="as released: no arguments"),
        pytest.param([], deployment([*WITHOUT_MXJOB, "--enable-scheme=mxjob"]), [MXJOB], id="mxjob enabled"),
        pytest.param([], deployment(["--enable-scheme", "mxjob"]), [MXJOB], id="as two arguments"),
        pytest.param([], deployment(["-enable-scheme=tfjob"]), [], id="one dash"),
        pytest.param([], deployment(WITHOUT_MXJOB, observed=1), [ROLLOUT], id="not observed yet"),
        pytest.param([], deployment(WITHOUT_MXJOB, updatedReplicas=0), [ROLLOUT], id="not updated"),
        pytest.param([], deployment(WITHOUT_MXJOB, running=2), [ROLLOUT], id="an old pod left"),
        pytest.param([], deployment(None, replicas=0), [], id="scaled to zero"),
        pytest.param(
            [WEBHOOK], deployment(WITHOUT_MXJOB),
            [f"its MXJob webhook entry {WEBHOOK} is still registered"], id="webhook entry left",
        ),
    ],
)  # fmt: skip
def test_training_operator_is_stopped_only_after_step_3(
    webhooks: list[str], found: dict[str, Any] | None, problems: list[str]
) -> None:
    assert operator_problems(webhooks, found) == problems


def test_enabled_schemes_in_every_spelling() -> None:
    spec = deployment(["--enable-scheme=tfjob", "-enable-scheme", "mpijob", "--other=1"])["spec"]
    assert enabled_schemes(spec) == ["tfjob", "mpijob"]
