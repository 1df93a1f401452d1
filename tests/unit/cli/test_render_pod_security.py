"""`render --pod-security LEVEL`: the pod-security component's policy, evaluated by render as
the API server evaluates it (tests/apiserver/test_pod_security_policy.py holds the two to the
same messages): every example passes `restricted`, and each case of
tests/support/podsecurity_cases.py is refused at the levels that refuse it, naming its field."""

import copy
from pathlib import Path

import pytest
import yaml

from scripts import pod_security_policy
from tests.support.cli import run
from tests.support.podsecurity_cases import CASES, EXAMPLES, JOB_EXAMPLES, Case

BASE = yaml.safe_load((EXAMPLES / "single-worker.yaml").read_text())


def test_the_policy_file_is_what_its_script_writes() -> None:
    assert pod_security_policy.POLICY_FILE.read_text() == pod_security_policy.rendered()
    assert pod_security_policy.main(["--check"]) == 0


@pytest.mark.slow
@pytest.mark.parametrize("example", JOB_EXAMPLES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_passes_restricted(example: Path) -> None:
    done = run("render", "--pod-security", "restricted", str(example))
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_each_case_is_refused_at_its_levels_naming_the_field(case: Case) -> None:
    job = copy.deepcopy(BASE)
    case.change(job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"])
    for level in ("privileged", "baseline", "restricted"):
        done = run("render", "--pod-security", level, "-", stdin=yaml.safe_dump(job))
        if level in case.refused_at:
            assert done.returncode == 1, done.stderr
            field = f"default/mnist-single: spec.mxReplicaSpecs.Worker.template.{case.field}: "
            assert field in done.stderr, done.stderr
            assert f"(namespace default enforces Pod Security level {level})" in done.stderr
            assert done.stdout == ""
        else:
            assert done.returncode == 0, done.stderr


def test_the_jobs_own_namespace_is_the_one_named() -> None:
    job = copy.deepcopy(BASE)
    job["metadata"]["namespace"] = "team-a"
    job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["hostPID"] = True
    done = run("render", "--pod-security", "baseline", "-", stdin=yaml.safe_dump(job))
    assert done.returncode == 1
    assert (
        "team-a/mnist-single: spec.mxReplicaSpecs.Worker.template.spec.hostPID: must not be "
        "true (namespace team-a enforces Pod Security level baseline)" in done.stderr
    )


def test_without_the_option_render_does_not_check_pod_security() -> None:
    job = copy.deepcopy(BASE)
    job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["hostPID"] = True
    assert run("render", "-", stdin=yaml.safe_dump(job)).returncode == 0
