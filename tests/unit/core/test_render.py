"""`mxjob-controller render`: the hook's answer at creation, as YAML, without a cluster."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from app.core.model import kinds
from app.core.model.errors import RenderError
from app.core.render import render
from tests.support import REPO, cli
from tests.support import jobs as s


def test_render_is_the_sync_answer_as_yaml() -> None:
    job = s.mxjob(s.train_spec())
    documents = list(yaml.safe_load_all(render(yaml.safe_dump(job), s.NOW)))
    answer = s.created(s.request(job, others={kinds.CONFIG_MAP_TYPE: []}))
    assert documents == [job | {"status": answer["status"]}, *answer["children"]]
    assert [d["kind"] for d in documents[:3]] == ["MXJob", "ConfigMap", "Pod"]


def test_render_expand_shows_what_each_process_reads() -> None:
    job = s.mxjob(s.train_spec(servers=1, workers=2))
    user_env = [{"name": "ROLE_AND_ID", "value": "$(DMLC_ROLE)-$(DMLC_WORKER_ID)-$$(X)"}]
    job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = user_env
    plain = list(yaml.safe_load_all(render(yaml.safe_dump(job), s.NOW)))
    expanded = list(yaml.safe_load_all(render(yaml.safe_dump(job), s.NOW, expand=True)))
    assert [d for d in expanded if d["kind"] != "Pod"] == [d for d in plain if d["kind"] != "Pod"]
    worker = next(d for d in expanded if d["metadata"]["name"] == "mnist-worker-1")
    env = {e["name"]: e["value"] for e in worker["spec"]["containers"][0]["env"]}
    cluster = next(d for d in plain if d["kind"] == "ConfigMap")["data"]["MX_CONFIG_CLUSTER"]
    assert env["MX_CONFIG_CLUSTER"] == cluster
    assert env["MX_CONFIG"] == (
        f'{{"cluster":{cluster},"labels":{{"scheduler":"","server":"","worker":""}},'
        '"task":{"index":1,"type":"worker"}}'
    )
    assert env["ROLE_AND_ID"] == "worker-1-$(X)"


def test_render_fills_in_the_namespace_and_takes_several_jobs() -> None:
    first, second = s.mxjob(s.train_spec(), "a"), s.mxjob(s.train_spec(0, 1), "b")
    del first["metadata"]["namespace"]
    text = yaml.safe_dump_all([first, second])
    documents = list(yaml.safe_load_all(render(text, s.NOW, namespace="team")))
    kinds = [(d["kind"], d["metadata"]["name"], d["metadata"]["namespace"]) for d in documents]
    assert kinds[0] == ("MXJob", "a", "team")
    assert ("MXJob", "b", "default") in kinds
    assert [k for k in kinds if k[0] == "Pod"] == [
        ("Pod", "a-scheduler-0", "team"),
        ("Pod", "a-server-0", "team"),
        ("Pod", "a-server-1", "team"),
        ("Pod", "a-worker-0", "team"),
        ("Pod", "a-worker-1", "team"),
        ("Pod", "b-scheduler-0", "default"),
        ("Pod", "b-worker-0", "default"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("a: [", "not YAML", id="not-yaml"),
        pytest.param("", "no MXJob in the input", id="empty"),
        pytest.param("kind: Pod\n", "document 1 is not an MXJob", id="not-an-mxjob"),
        pytest.param(
            "kind: MXJob\nmetadata: {}\n", "document 1: not a valid sync request", id="no-name"
        ),
        pytest.param(
            "kind: MXJob\nmetadata: {name: a}\nspec:\n  mxReplicaSpecs:\n    Worker:\n"
            "      template:\n        spec:\n          containers:\n          - name: mxnet\n"
            "            image: i\n            env:\n            - name: IP\n"
            "              valueFrom: {fieldRef: {fieldPath: status.podIP}}\n",
            "container mxnet: env IP: only configMapKeyRef sources are modelled",
            id="expand-unmodelled-source",
        ),
    ],
)
def test_render_rejects(text: str, message: str) -> None:
    with pytest.raises(RenderError, match=message):
        render(text, s.NOW, expand=True)


def test_render_command(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(s.mxjob(s.train_spec())))
    done = subprocess.run(
        [sys.executable, "-m", "app", "render", str(manifest)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    names = [
        d["metadata"]["name"] for d in yaml.safe_load_all(done.stdout) if d["kind"] == "Service"
    ]
    assert names == [
        "mnist-scheduler-0",
        "mnist-server-0",
        "mnist-server-1",
        "mnist-worker-0",
        "mnist-worker-1",
    ]
    missing = subprocess.run(
        [sys.executable, "-m", "app", "render", str(tmp_path / "none.yaml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 2
    assert "No such file" in missing.stderr


def test_render_command_fails_when_any_job_is_invalid() -> None:
    good = s.mxjob(s.train_spec(), "good")
    bad = s.mxjob(s.train_spec(0, 2), "bad")
    del bad["spec"]["mxReplicaSpecs"]["Scheduler"]  # two Workers and no Scheduler
    done = cli.run("render", "-", stdin=yaml.safe_dump_all([good, bad]))
    assert done.returncode == 1
    # The reason, naming the job and the rule as the API server would; the good job printed.
    assert done.stderr.splitlines() == [
        "render: -: default/bad: spec.mxReplicaSpecs: jobMode MXTrain needs a Scheduler "
        "(1 replica) when it has a Server or more than one Worker"
    ]
    jobs = [d for d in yaml.safe_load_all(done.stdout) if d["kind"] == "MXJob"]
    assert [j["status"]["conditions"][-1]["reason"] for j in jobs] == ["MXJobCreated"]


def test_version_option() -> None:
    from app import __version__

    done = cli.run("--version")
    assert (done.returncode, done.stdout) == (0, f"mxjob-controller {__version__}\n")


def test_render_command_checks_the_list_kubectl_get_prints() -> None:
    """`kubectl get mxjobs -A -o yaml | python -m app render -`: every job of a cluster."""
    good = s.mxjob(s.train_spec(), "good")
    bad = s.mxjob(s.train_spec(0, 2), "bad")
    del bad["spec"]["mxReplicaSpecs"]["Scheduler"]
    listed = {"apiVersion": "v1", "kind": "List", "items": [good, bad], "metadata": {}}
    done = cli.run("render", "-", stdin=yaml.safe_dump(listed))
    assert done.returncode == 1
    assert done.stderr.startswith("render: -: default/bad: spec.mxReplicaSpecs: jobMode MXTrain")
    jobs = [d["metadata"]["name"] for d in yaml.safe_load_all(done.stdout) if d["kind"] == "MXJob"]
    assert jobs == ["good"]
    empty = cli.run("render", "-", stdin=yaml.safe_dump(listed | {"items": []}))
    assert (empty.returncode, empty.stderr) == (2, "render: -: no MXJob in the input\n")


def test_a_job_training_operator_finished_gets_no_children() -> None:
    """docs/migrating-from-training-operator.md: a finished job's status is kept, no pod made."""
    done_at = "2024-01-01T01:00:00Z"
    condition = {"status": "True", "lastTransitionTime": done_at, "lastUpdateTime": done_at}
    job = s.mxjob(
        {"mxReplicaSpecs": {"Worker": s.replica(1, "Never")}},
        "old",
        {
            "startTime": "2024-01-01T00:00:00Z",
            "completionTime": done_at,
            "conditions": [
                condition | {"type": "Created", "reason": "MXJobCreated", "message": "created"},
                condition | {"type": "Succeeded", "reason": "MXJobSucceeded", "message": "done"},
            ],
        },
    )
    done = cli.run("render", "-", stdin=yaml.safe_dump(job))
    assert (done.returncode, done.stderr) == (0, "")
    (rendered,) = yaml.safe_load_all(done.stdout)
    assert rendered["status"]["conditions"][-1]["type"] == "Succeeded"
    assert rendered["status"]["completionTime"] == done_at
