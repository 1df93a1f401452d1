"""Katib and MXJob trials (docs/katib.md): Katib's success and failure decision, run with the real
gjson (scripts/katib-conditions.sh) on the statuses the hook answers; the documented trialSpec
through the hook; the RBAC component under `kubectl kustomize`."""

import json
import re
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from localcluster import buildscript
from tests.support import REPO
from tests.support import jobs as s
from tests.support.golden_cases import CASES
from tests.support.hooked import sync
from tests.support.kustomize import documents

DOC = REPO / "docs" / "katib.md"
SCRIPT = REPO / "scripts" / "katib-conditions.sh"
# Katib v0.17.0 and v0.18.0, pkg/apis/controller/experiments/v1beta1/constants.go.
KATIB_SUCCESS = 'status.conditions.#(type=="Succeeded")#|#(status=="True")#'
KATIB_FAILURE = 'status.conditions.#(type=="Failed")#|#(status=="True")#'
# DefaultJobSuccessCondition: what Katib uses for a batch/v1 Job.
KATIB_JOB_SUCCESS = 'status.conditions.#(type=="Complete")#|#(status=="True")#'
# Katib v0.17.0's manifests: katib-config.yaml's trialResources, and the rule of the
# katib-controller ClusterRole that names mxjobs.
KATIB_V017_TRIAL_RESOURCES = [
    "Job.v1.batch",
    "TFJob.v1.kubeflow.org",
    "PyTorchJob.v1.kubeflow.org",
    "MPIJob.v1.kubeflow.org",
    "XGBoostJob.v1.kubeflow.org",
    "MXJob.v1.kubeflow.org",
]
KATIB_V017_VERBS = ["get", "list", "watch", "create", "delete"]


@pytest.fixture(scope="module")
def katib(progress: Callable[[str], None]) -> Callable[..., dict[str, dict[str, str]]]:
    """`katib(jobs, success, failure)` -> Katib's decision for each job, by name."""
    try:
        tool = buildscript.run(SCRIPT, [], progress)["KATIB_CONDITIONS"]
    except buildscript.BuildScriptError as error:
        pytest.fail(str(error), pytrace=False)

    def decide(
        jobs: dict[str, Any], success: str = KATIB_SUCCESS, failure: str = KATIB_FAILURE
    ) -> dict[str, dict[str, str]]:
        done = subprocess.run(
            [str(tool), success, failure], input=json.dumps(jobs),
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        decided: dict[str, dict[str, str]] = json.loads(done.stdout)
        return decided

    return decide


def answered(case: str) -> dict[str, Any]:
    """The MXJob of a golden case with the status the hook answers for it."""
    request, at = CASES[case]()
    parent: dict[str, Any] = request["parent"] | {"status": sync(request, at)["status"]}
    return parent


def experiment() -> dict[str, Any]:
    (text,) = [b for b in yaml_blocks() if "kind: Experiment" in b]
    found: dict[str, Any] = yaml.safe_load(text)
    return found


def yaml_blocks() -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```", DOC.read_text(), re.M | re.S)


# (golden case, Katib's decision, the trial's reason): every row of docs/katib.md's table.
DECISIONS = [
    pytest.param("new-job", "Running", None, id="created"),
    pytest.param("pods-pending", "Running", None, id="pending"),
    pytest.param("all-running", "Running", None, id="running"),
    pytest.param("worker-killed-restarting", "Running", None, id="restarting"),
    pytest.param("worker-replacement-running", "Running", None, id="running-after-a-restart"),
    pytest.param("scheduler-succeeded", "Succeeded", "MXJobSucceeded", id="succeeded"),
    pytest.param(
        "scheduler-succeeded-cleanup", "Succeeded", "MXJobSucceeded", id="succeeded-cleaned-up"
    ),
    pytest.param("ttl-expired", "Succeeded", "MXJobSucceeded", id="succeeded-after-ttl"),
    pytest.param("tune-job-succeeded", "Succeeded", "MXJobSucceeded", id="tune-succeeded"),
    pytest.param("worker-failed-never", "Failed", "MXJobFailed", id="failed"),
    pytest.param("deadline-exceeded", "Failed", "DeadlineExceeded", id="deadline"),
    pytest.param(
        "deadline-exceeded-cleanup", "Failed", "DeadlineExceeded", id="deadline-cleaned-up"
    ),
    pytest.param("backoff-limit-exceeded", "Failed", "BackoffLimitExceeded", id="backoff-limit"),
    pytest.param("suspended", "Running", None, id="suspended"),
    pytest.param("invalid-spec", "Failed", "MXJobInvalidSpec", id="invalid-from-the-start"),
    pytest.param("invalid-spec-running-job", "Running", None, id="broken-by-an-edit"),
]


@pytest.mark.parametrize(("case", "condition", "reason"), DECISIONS)
def test_katib_decides_the_trial_from_the_hooks_status(
    katib: Callable[..., dict[str, dict[str, str]]],
    case: str,
    condition: str,
    reason: str | None,
) -> None:
    job = answered(case)
    (decided,) = katib({case: job}).values()
    assert decided.get("condition") == condition
    assert decided.get("reason") == reason
    if reason is not None:
        (last,) = [c for c in job["status"]["conditions"] if c["type"] == condition]
        assert (last["status"], decided["message"]) == ("True", last["message"])


def test_the_documented_conditions_are_katibs_defaults() -> None:
    template = experiment()["spec"]["trialTemplate"]
    assert (template["successCondition"], template["failureCondition"]) == (
        KATIB_SUCCESS,
        KATIB_FAILURE,
    )


def test_a_batch_job_condition_never_succeeds_an_mxjob(
    katib: Callable[..., dict[str, dict[str, str]]],
) -> None:
    """The evaluation is not vacuous: with the success condition Katib uses for a batch Job,
    no succeeded MXJob counts as succeeded, while a failed one still fails."""
    jobs = {case: answered(case) for case in ("scheduler-succeeded", "worker-failed-never")}
    decided = katib(jobs, success=KATIB_JOB_SUCCESS)
    assert {name: d["condition"] for name, d in decided.items()} == {
        "scheduler-succeeded": "Running",
        "worker-failed-never": "Failed",
    }


def test_the_documented_trial_runs_its_metric_from_the_worker() -> None:
    """The trialSpec, with a learning rate in place of its parameter, is an MXJob the hook
    accepts; primaryPodLabels select exactly its Worker pods, which run primaryContainerName."""
    template = experiment()["spec"]["trialTemplate"]
    spec = json.loads(
        json.dumps(template["trialSpec"]["spec"]).replace("${trialParameters.learningRate}", "0.05")
    )
    answer = s.created(s.request(s.mxjob(spec, name="mxjob-lr-abc123")))
    assert not any(c["reason"] == "MXJobInvalidSpec" for c in answer["status"]["conditions"])
    pods = [c for c in answer["children"] if c["kind"] == "Pod"]
    wanted = template["primaryPodLabels"].items()
    primary = [p for p in pods if wanted <= p["metadata"]["labels"].items()]
    assert [p["metadata"]["name"] for p in primary] == ["mxjob-lr-abc123-worker-0"]
    (container,) = primary[0]["spec"]["containers"]
    assert container["name"] == template["primaryContainerName"]
    assert "--lr=0.05" in container["args"]


def test_the_documented_katib_config_keeps_v017s_trial_resources() -> None:
    (text,) = [b for b in yaml_blocks() if "kind: KatibConfig" in b]
    config = yaml.safe_load(text)
    assert config["apiVersion"] == "config.kubeflow.org/v1beta1"
    assert config["init"]["controller"]["trialResources"] == KATIB_V017_TRIAL_RESOURCES


def test_katib_component_lets_katib_controller_manage_mxjobs() -> None:
    objects = {
        (o["kind"], o["metadata"]["name"]): o
        for o in documents(REPO / "manifests" / "components" / "katib")
    }
    assert set(objects) == {
        ("ClusterRole", "katib-controller-mxjobs"),
        ("ClusterRoleBinding", "katib-controller-mxjobs"),
    }
    (rule,) = objects["ClusterRole", "katib-controller-mxjobs"]["rules"]
    assert rule == {
        "apiGroups": ["kubeflow.org"],
        "resources": ["mxjobs"],
        "verbs": KATIB_V017_VERBS,
    }
    binding = objects["ClusterRoleBinding", "katib-controller-mxjobs"]
    assert binding["roleRef"]["name"] == "katib-controller-mxjobs"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "katib-controller", "namespace": "kubeflow"}
    ]
