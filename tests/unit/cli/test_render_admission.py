"""`render` refuses what the API server holding the CRD refuses at creation, beyond unknown
fields (tests/unit/cli/test_render_fields.py): types, quantities, label values, versions, keys
given twice; admits what it admits (nulls pruned, a generateName); names each job by namespace
and name; skips other kinds. The same verdicts, on a wider corpus, against the real API server:
tests/apiserver/test_render_differential.py."""

import pytest
import yaml

from app.cli.admission import NOT_CHECKED
from tests.support import cli
from tests.support.render_corpus import base

C = "spec.mxReplicaSpecs.Worker.template.spec.containers[0]"


def render(text: str, *args: str) -> tuple[int, str, list[str]]:
    """`mxjob-controller render [args] -` of `text`: the exit code, stdout, the lines on stderr."""
    done = cli.run("render", *args, "-", stdin=text)
    return done.returncode, done.stdout, done.stderr.replace("render: -: ", "").splitlines()


def job_text(**container: object) -> str:
    job = base()
    job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0] |= container
    return yaml.safe_dump(job, sort_keys=False)


@pytest.mark.parametrize(
    ("container", "line"),
    [
        pytest.param(
            {"command": "python3 train.py"},
            f'{C}.command: Invalid value: "python3 train.py": must be of type array, not string',
            id="command-string",
        ),
        pytest.param(
            {"args": [10]},
            f"{C}.args[0]: Invalid value: 10: must be of type string, not integer",
            id="args-number",
        ),
        pytest.param(
            {"env": [{"name": "A", "value": True}]},
            f"{C}.env[0].value: Invalid value: true: must be of type string, not boolean",
            id="env-bool",
        ),
        pytest.param(
            {"resources": {"limits": {"memory": "4GB"}}},
            f'{C}.resources.limits.memory: Invalid value: "4GB": must be a quantity such as 500m, 2, 1.5, 4Gi or 512M',
            id="memory-4GB",
        ),
        pytest.param(
            {"resources": {"limits": [{"cpu": 1}]}},
            f"{C}.resources.limits: Invalid value: array: must be of type object, not array",
            id="limits-list",
        ),
    ],
)
def test_a_wrong_type_or_quantity_is_refused_at_its_path(
    container: dict[str, object],
    line: str,
) -> None:
    code, out, err = render(job_text(**container))
    assert (code, out) == (1, "")
    assert f"default/job: {line}" in err, err


def test_expand_of_a_job_with_a_number_as_a_value_is_a_refusal_not_a_traceback() -> None:
    code, _, err = render(job_text(env=[{"name": "A", "value": 10}]), "--expand")
    assert code == 1
    assert (
        err[0]
        == f"default/job: {C}.env[0].value: Invalid value: 10: must be of type string, not integer"
    )


@pytest.mark.parametrize(
    ("version", "line"),
    [
        pytest.param(
            "kubeflow.org/v1beta1",
            'apiVersion: Unsupported value: "kubeflow.org/v1beta1": the CRD serves MXJob as kubeflow.org/v1 only (mxnet-operator\'s kubeflow.org/v1beta1 fields are accepted under kubeflow.org/v1: set that)',
            id="v1beta1",
        ),
        pytest.param(
            "kubeflow.org/v2",
            'apiVersion: Unsupported value: "kubeflow.org/v2": the CRD serves MXJob as kubeflow.org/v1 only',
            id="v2",
        ),
        pytest.param(None, "apiVersion: Required value: an MXJob's is kubeflow.org/v1", id="none"),
    ],
)
def test_a_version_the_crd_does_not_serve_is_refused(
    version: str | None,
    line: str,
) -> None:
    job = base() | {"apiVersion": version}
    if version is None:
        del job["apiVersion"]
    code, _, err = render(yaml.safe_dump(job))
    assert code == 1
    assert f"default/job: {line}" in err


def test_nulls_the_api_server_prunes_are_admitted_and_defaulted() -> None:
    text = job_text().replace(
        "runPolicy:\n    cleanPodPolicy: Running", "runPolicy:\n    # cleanPodPolicy: Running"
    )
    text = text.replace("replicas: 1", "replicas:").replace(
        "restartPolicy: Never", "restartPolicy:"
    )
    code, out, err = render(text)
    assert (code, err) == (0, [])
    job = next(yaml.safe_load_all(out))
    assert job["spec"]["runPolicy"] == {}  # the CRD's default
    assert "replicas" not in job["spec"]["mxReplicaSpecs"]["Worker"]


def test_a_key_given_twice_is_refused_naming_both_lines() -> None:
    text = job_text().replace("replicas: 1", "replicas: 1\n      replicas: 1")
    code, _, err = render(text)
    assert code == 1
    assert err == [
        'default/job: line 12: key "replicas" already set in this mapping (line 11): '
        "strict field validation refuses a key given twice"
    ]


def test_generate_name_is_admitted_and_named_as_written() -> None:
    job = base() | {"metadata": {"generateName": "train-"}}
    code, out, err = render(yaml.safe_dump(job))
    assert (code, err) == (0, [])
    assert next(yaml.safe_load_all(out))["metadata"]["name"].startswith("train-")
    job["metadata"] = {}
    code, _, err = render(yaml.safe_dump(job))
    assert code == 1
    assert err[0] == "document 1: metadata.name: Required value: name or generateName is required"


def test_labels_and_annotations_are_checked_as_object_metadata() -> None:
    job = base()
    job["metadata"] |= {"namespace": "team-a", "labels": {"team": "a b"}, "annotations": {"n": 5}}
    code, _, err = render(yaml.safe_dump(job))
    assert code == 1
    assert err == [
        "team-a/job: metadata.annotations.n: must be of type string, not integer",
        f"team-a/job: {NOT_CHECKED}",
    ]
    del job["metadata"]["annotations"]
    code, _, err = render(yaml.safe_dump(job))
    assert code == 1
    assert err[0].startswith('team-a/job: metadata.labels: Invalid value: "a b": a valid label')


def test_other_kinds_are_noted_and_skipped_and_every_job_checked() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    bad = base("bad") | {"apiVersion": "kubeflow.org/v1beta1"}
    listed = {"apiVersion": "v1", "kind": "List", "items": [base("good"), bad]}
    code, out, err = render(yaml.safe_dump_all([config_map, listed]))
    assert code == 1
    assert err[0] == "document 1: note: a ConfigMap, not an MXJob: skipped"
    assert err[1].startswith('default/bad: apiVersion: Unsupported value: "kubeflow.org/v1beta1"')
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out) if d["kind"] == "MXJob"] == [
        "good"
    ]
    code, _, err = render(yaml.safe_dump(config_map))
    assert (code, err[-1]) == (2, "no MXJob in the input")
