"""End to end: the pods the real hook asks for form a working MXNet parameter-server cluster.

Real here: kube-apiserver and etcd on loopback, the real Metacontroller v4.17.2 with the flags
the one-command install ships, the hook (`python -m app serve`, over HTTP), our CRD and
CompositeController as shipped (the webhook pointed at the hook), `kubectl apply` of the job,
MXNet 1.9.1 with ps-lite, and one OS process per pod running exactly the command, args and env
of its `mxnet` container. The only double is the kubelet (e2e/kubelet.py: it watches the API
server, runs pods as local processes with Service names resolving to 127.0.0.1 through a
private /etc/hosts, and writes their status back). See docs/e2e.md.

Every process has a timeout and is killed by PID when its test ends. A machine without MXNet
or without mount namespaces fails these tests; it never skips them.
"""

import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e import trained, tuned
from e2e.cluster import preflight
from e2e.images import EXAMPLES
from e2e.jobs import mxjob, single_worker, tune
from e2e.runner import JobRun
from localcluster.ports import free_port
from localcluster.realstack import install_controller
from localcluster.rest import Rest
from localcluster.stack import Stack, real_stack, shipped_flags
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.mxnet_runs import (
    ATTEMPT_LABEL,
    INDEX_LABEL,
    JOB,
    Harness,
    Timeline,
    by_worker_id,
    kvstore_result,
    mx_config,
    only,
    readme_worker_log,
    single_mx_config,
    single_worker_reading,
)

pytestmark = pytest.mark.mxnet


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The real stack, one Metacontroller with the shipped flags, for the module."""
    with fail_on_cluster_error():
        preflight()
        workdir = tmp_path_factory.mktemp("stack")
        with (
            real_stack(workdir, lambda line: None) as running,
            running.metacontroller(shipped_flags()),
        ):
            yield running


@pytest.fixture
def harness(stack: Stack, tmp_path: Path) -> Iterator[Harness]:
    kube = Rest(stack.apiserver)
    try:
        yield Harness(stack, kube, tmp_path)
    finally:
        kube.close()


def test_kvstore_job_succeeds_with_aggregated_values(harness: Harness) -> None:
    port = free_port()
    run = harness.run(mxjob(JOB, "kvstore", port))

    assert run.states() == ["Created", "Running", "Succeeded"]
    assert by_worker_id(run.results(), "ok", "worker_id", "expected", "pulled") == {
        "0": kvstore_result("0"),
        "1": kvstore_result("1"),
    }
    # What the user's program read, through the ConfigMap and the kubelet's expansion.
    assert by_worker_id(run.results(), "mx_config") == {
        "0": {"mx_config": mx_config(port, 0)},
        "1": {"mx_config": mx_config(port, 1)},
    }
    assert run.status["replicaStatuses"]["Scheduler"]["succeeded"] == 1
    assert run.running() == []


def test_a_job_with_the_schedulers_service_only_succeeds(harness: Harness) -> None:
    # Only the Scheduler's name resolves (the kubelet double maps Service names alone): ps-lite
    # needs no other replica's name.
    job = mxjob(JOB, "kvstore", free_port())
    job["metadata"]["annotations"] = {"training.kubeflow.org/replica-services": "scheduler"}
    run = harness.run(job)

    assert run.states() == ["Created", "Running", "Succeeded"]
    assert by_worker_id(run.results(), "ok", "pulled") == {
        w: {"ok": True, "pulled": kvstore_result(w)["pulled"]} for w in ("0", "1")
    }
    services = harness.kube.get(f"/api/v1/namespaces/{run.job.namespace}/services")["items"]
    assert [s["metadata"]["name"] for s in services] == [f"{JOB}-scheduler-0"]
    assert run.running() == []


# How far the README's shown accuracies may be from a run's: the same seeds and data, but
# OpenBLAS picks its kernels by CPU, so the last digits of the weights may differ by machine.
README_TOLERANCE = 0.03


def test_the_quick_start_job_trains_on_every_worker_to_the_same_weights(harness: Harness) -> None:
    run = harness.run(mxjob(JOB, "train", free_port()))

    assert run.states() == ["Created", "Running", "Succeeded"]
    logs = [run.log(pod) for pod in sorted(run.worker_pods())]
    assert len(logs) == 2
    learned = [trained.accuracies(log) for log in logs]
    assert [[epoch for epoch, _ in each] for each in learned] == [list(range(1, 11))] * 2
    # The same weights on both workers after every step, so the same held-out accuracy.
    assert learned[0] == learned[1]
    assert trained.digests(logs[1]) == trained.digests(logs[0])
    accuracy = [a for _, a in learned[0]]
    assert accuracy[0] < trained.FIRST_EPOCH_BELOW, accuracy
    assert accuracy[-1] >= trained.MIN_ACCURACY, accuracy
    assert all(trained.learned(log, 10) for log in logs), logs
    shown = trained.accuracies(readme_worker_log())
    assert [epoch for epoch, _ in shown] == list(range(1, 11))
    assert [a for _, a in shown] == pytest.approx(accuracy, abs=README_TOLERANCE)
    assert run.running() == []


def test_the_tune_example_runs_its_grid_and_its_tuner_decides_success(harness: Harness) -> None:
    """examples/tune.yaml: two TunerServers train the grid's four trials the tracker hands
    them, the Tuner prints each and the best, which reaches the example's threshold."""
    assert f"--threshold={tuned.THRESHOLD}" in (EXAMPLES / "tune.yaml").read_text()
    run = harness.run(tune(JOB, free_port()))

    assert run.states() == ["Created", "Running", "Succeeded"]
    log = run.log(f"{JOB}-tuner-0")
    trials = tuned.trials(log)
    assert [(t, lr, hidden) for t, lr, hidden, _, _ in trials] == [
        (0, 0.001, 4), (1, 0.001, 64), (2, 0.01, 4), (3, 0.01, 64),
    ], log  # fmt: skip
    servers = {f"tunerserver-{i}" for i in range(2)}
    assert {server for *_, server in trials} <= servers
    accuracies = [accuracy for _, _, _, accuracy, _ in trials]
    assert tuned.best(log) == [(accuracies.index(max(accuracies)), max(accuracies))], log
    assert max(accuracies) >= tuned.THRESHOLD
    # Each server registered under its template's tuner-server-key, read from MX_CONFIG.
    for server in servers:
        assert f"{server}: registered with key 'cpu'" in run.log(f"{JOB}-{server}")
    assert run.status["replicaStatuses"]["Tuner"]["succeeded"] == 1
    assert run.running() == []


def test_a_tune_job_whose_best_misses_the_threshold_fails(harness: Harness) -> None:
    """One trial that cannot learn the spirals (4 hidden units, a slow learning rate): the
    Tuner exits 1, which fails the job, naming the Tuner."""
    args = ["--learning-rates=0.001", "--hidden-sizes=4", f"--threshold={tuned.THRESHOLD}"]
    run = harness.run(tune(JOB, free_port(), args))

    assert run.states() == ["Created", "Running", "Failed"]
    log = run.log(f"{JOB}-tuner-0")
    ((_, _, _, accuracy, _),) = tuned.trials(log)
    assert accuracy < tuned.THRESHOLD
    assert f"the best accuracy {accuracy:.4f} is below {tuned.THRESHOLD}" in log, log
    assert run.reported(f"{JOB}-tuner-0") == ["Running", "Failed (exit 1)"]
    assert re.search(r"\bTuner\b.*\b0\b.*\bexit code 1\b", run.condition("Failed")["message"])
    assert run.running() == []


def test_worker_killed_under_exit_code_is_replaced_and_the_job_succeeds(harness: Harness) -> None:
    victim = f"{JOB}-worker-1"
    killed: list[str] = []

    def kill_once_running(run: JobRun, *_: object) -> None:
        # Killed at the first sight of the job Running with this worker's process started,
        # long before its `import mxnet` is done, so it dies before joining ps-lite. No
        # controller can replace a worker of a dist_sync job that dies after joining: see
        # docs/e2e.md.
        if not killed and "Running" in run.states and victim in run.kubelet.running():
            run.kubelet.kill(victim, signal.SIGKILL)
            killed.append(victim)

    job = mxjob(JOB, "kvstore", free_port(), "ExitCode")
    run = harness.run(job, on_report=kill_once_running, on_state=kill_once_running)

    assert killed == [victim]
    assert run.reported(victim)[:2] == ["Running", "Failed (exit 137)"]
    assert "is connected" not in run.log(victim)
    assert run.states() == ["Created", "Running", "Restarting", "Running", "Succeeded"]
    replacement = only(n for n in run.worker_pods() if n not in (f"{JOB}-worker-0", victim))
    labels = run.labels(replacement)
    assert {k: labels[k] for k in (INDEX_LABEL, ATTEMPT_LABEL)} == {
        INDEX_LABEL: "1",
        ATTEMPT_LABEL: "1",
    }
    assert sorted(run.results()) == sorted([f"{JOB}-worker-0", replacement])
    assert by_worker_id(run.results(), "ok", "worker_id", "expected", "pulled") == {
        "0": kvstore_result("0"),
        "1": kvstore_result("1"),
    }
    assert run.running() == []


def test_worker_exiting_1_fails_the_job_and_names_it(harness: Harness) -> None:
    job = mxjob(JOB, "kvstore", free_port(), "ExitCode", ["--fail-worker", "1"])
    run = harness.run(job)

    assert run.states() == ["Created", "Running", "Failed"]
    failed = run.condition("Failed")
    assert failed["reason"] == "MXJobFailed"
    assert re.search(r"\bWorker\b.*\b1\b.*\bexit code 1\b", failed["message"]), failed
    assert sorted(run.worker_pods()) == [f"{JOB}-worker-0", f"{JOB}-worker-1"]
    assert run.running() == []


# What a worker of a job without a Scheduler read before creating its kvstore (kvstore_check.py):
# the hook's placeholders for the root that is not there, as the process saw them.
NO_ROOT = {"DMLC_PS_ROOT_URI": "", "DMLC_PS_ROOT_PORT": "0"}
# A tuner-server-key annotation the kubelet's `$(VAR)` expansion would alter were it written
# into an env value as it is: each process must read it as written.
DOLLARS = "rtx-$$-$(DMLC_ROLE)-$(HOME)-$(-$"


def test_single_worker_with_a_local_kvstore_succeeds_and_reads_port_0(harness: Harness) -> None:
    # docs/migrating-from-training-operator.md: a one-pod job using `local` never looks at
    # DMLC_PS_ROOT_URI="" and DMLC_PS_ROOT_PORT=0. Its label reaches it as written through
    # the job's ConfigMap.
    worker = f"{JOB}-worker-0"
    timeline = Timeline()
    job = single_worker_reading(DOLLARS)
    run = harness.run(job, timeline.on_report, timeline.on_state)
    timeline.show("single Worker, local kvstore")

    assert run.states() == ["Created", "Running", "Succeeded"]
    assert run.worker_pods() == [worker]
    assert run.reported(worker) == ["Running", "Succeeded (exit 0)"]
    assert run.json_lines(worker) == [
        {"check": "env", "kv_store": "local", **NO_ROOT},
        {
            "check": "kvstore",
            "ok": True,
            "kv_store": "local",
            "rank": 0,
            "num_workers": 1,
            "worker_id": "0",
            "mx_config": single_mx_config(worker, DOLLARS),
            # One worker pushes 1, then 2: every key, the big one included, pulls it back.
            "pulled": [{"3": 1.0, "5": 1.0, "7": 1.0}, {"3": 2.0, "5": 2.0, "7": 2.0}],
            "expected": [1.0, 2.0],
        },
    ]
    assert run.status["replicaStatuses"] == {"Worker": {"active": 0, "succeeded": 1, "failed": 0}}
    assert run.running() == []


def test_a_label_with_dollars_reaches_the_process_as_written_inline(harness: Harness) -> None:
    """The same job under a CompositeController that declares no ConfigMaps: MX_CONFIG whole
    in the pod's env, which the kubelet expands, and still the text as written."""
    worker = f"{JOB}-worker-0"
    stack = harness.stack
    install_controller(stack.apiserver, stack.hook.url, config_maps=False)
    try:
        run = harness.run(single_worker_reading(DOLLARS))
    finally:
        install_controller(stack.apiserver, stack.hook.url)

    assert run.states() == ["Created", "Running", "Succeeded"]
    (result,) = [line for line in run.json_lines(worker) if line["check"] == "kvstore"]
    assert (result["ok"], result["mx_config"]) == (True, single_mx_config(worker, DOLLARS))
    assert run.running() == []


def test_single_worker_asking_for_dist_sync_fails_at_once(harness: Harness) -> None:
    # With DMLC_PS_ROOT_URI="" MXNet 1.9.1 does not wait for a scheduler: ps-lite refuses to
    # connect to an empty host name, `mx.kv.create("dist_sync")` raises, the process exits 1,
    # and under `restartPolicy: Never` the job fails naming the Worker. Were it to wait
    # instead, the job would never finish and run_job would raise after JOB_TIMEOUT.
    worker = f"{JOB}-worker-0"
    timeline = Timeline()
    job = single_worker(JOB, "kvstore", ["--kv-store", "dist_sync"])
    run = harness.run(job, timeline.on_report, timeline.on_state)
    timeline.show("single Worker, dist_sync")

    assert run.states() == ["Created", "Running", "Failed"]
    assert run.reported(worker) == ["Running", "Failed (exit 1)"]
    assert run.json_lines(worker) == [{"check": "env", "kv_store": "dist_sync", **NO_ROOT}]
    log = run.log(worker)
    assert "MXNetError: Check failed: node.hostname.size()" in log, log
    assert run.condition("Failed")["message"] == (
        f"MXJob {JOB} has failed because Worker replica 0 (pod {worker}) failed with exit code 1"
        " (restartPolicy Never)."
    )
    assert run.running() == []
