"""`spec.successPolicy` (docs/behaviour.md#status), as mxnet-operator v1beta1 read it: under
AllWorkers every Worker's success ends a train job, the Scheduler's exit does not; failures,
restarts and clean-up go on as under the default, which is unchanged."""

from typing import Any

import pytest

from app.core.decide.decision import decide, deciders, succeeders
from app.core.model.errors import SpecError
from app.core.model.spec import ReplicaType, RestartPolicy, SuccessPolicy
from app.core.observe.pods import Attempt
from app.core.observe.previous import read_previous
from app.core.observe.replicas import Replica
from app.core.validate.validation import validated_spec
from tests.support import jobs as s

SCHEDULER, SERVER, WORKER = ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.WORKER
TUNER = ReplicaType.TUNER
AW = "AllWorkers"
ALL_WORKERS = {"successPolicy": AW}
OK, RUN = s.pod_status("Succeeded", exit_code=0), s.pod_status("Running")
TUNE = {
    "jobMode": "MXTune",
    "mxReplicaSpecs": {t: s.replica() for t in ("TunerTracker", "TunerServer", "Tuner")},
}


def train(workers: int = 2, servers: int = 1, policy: str = "Never", **extra: Any) -> Any:
    return s.train_spec(servers=servers, workers=workers, policy=policy) | extra


def replica(rtype: ReplicaType, index: int, phase: str, policy: str = "Never") -> Replica:
    """Replica `index` of `rtype` whose only pod is in `phase`."""
    name = f"mnist-{rtype.lowered}-{index}"
    code = {"Succeeded": 0, "Failed": 1}.get(phase)
    attempt = Attempt(name, rtype, index, 0, 0, phase, 0, code, "")
    return Replica(rtype, index, RestartPolicy(policy), (attempt,))


def true_conditions(spec: dict[str, Any], replicas: list[Replica]) -> list[str]:
    made = decide(
        "mnist", validated_spec("mnist", spec), replicas, read_previous(None, True), s.NOW
    )
    return [c["type"] for c in made.conditions if c["status"] == "True"]


def train_replicas(scheduler: str, workers: tuple[str, ...], server: str = "Running") -> list[Any]:
    return [
        replica(SCHEDULER, 0, scheduler),
        replica(SERVER, 0, server),
        *(replica(WORKER, n, phase) for n, phase in enumerate(workers)),
    ]


DECISIONS = [
    pytest.param(train(successPolicy=AW), train_replicas("Succeeded", ("Running", "Running")),
                 ["Created", "Running"], id="scheduler-exit-does-not-end-the-job"),
    pytest.param(train(successPolicy=AW), train_replicas("Running", ("Succeeded", "Running")),
                 ["Created", "Running"], id="one-worker-of-two-is-not-enough"),
    pytest.param(train(successPolicy=AW), train_replicas("Running", ("Succeeded", "Succeeded")),
                 ["Created", "Succeeded"], id="every-worker-succeeded"),
    pytest.param(train(successPolicy=AW), train_replicas("Running", ("Running",) * 2, "Succeeded"),
                 ["Created", "Running"], id="server-exit-does-not-end-the-job"),
    pytest.param(train(successPolicy=AW), train_replicas("Failed", ("Running", "Running")),
                 ["Created", "Failed"], id="scheduler-failure-still-fails"),
    pytest.param(train(successPolicy=AW), train_replicas("Running", ("Failed", "Succeeded")),
                 ["Created", "Failed"], id="worker-failure-still-fails"),
    pytest.param(train(), train_replicas("Succeeded", ("Running", "Running")),
                 ["Created", "Succeeded"], id="default-scheduler-exit-ends-the-job"),
    pytest.param(train(successPolicy=""), train_replicas("Running", ("Succeeded",) * 2),
                 ["Created", "Running"], id="default-workers-alone-do-not"),
    pytest.param(train(workers=0, successPolicy=AW), train_replicas("Succeeded", ()),
                 ["Created", "Succeeded"], id="no-workers-the-scheduler-decides"),
    pytest.param({"mxReplicaSpecs": {"Worker": s.replica()}} | ALL_WORKERS,
                 [replica(WORKER, 0, "Succeeded")], ["Created", "Succeeded"],
                 id="single-worker-as-default"),
    pytest.param(TUNE | ALL_WORKERS, [replica(TUNER, 0, "Running")], ["Created", "Running"],
                 id="tune-tuner-running"),
    pytest.param(TUNE | ALL_WORKERS, [replica(TUNER, 0, "Succeeded")], ["Created", "Succeeded"],
                 id="tune-tuner-decides"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "replicas", "expected"), DECISIONS)
def test_who_ends_the_job(
    spec: dict[str, Any], replicas: list[Replica], expected: list[str]
) -> None:
    assert true_conditions(spec, replicas) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(train(successPolicy=AW), ([SCHEDULER], [WORKER]), id="train"),
        pytest.param(train(), ([SCHEDULER], [SCHEDULER]), id="train-default"),
        pytest.param(
            train(workers=0, successPolicy=AW), ([SCHEDULER], [SCHEDULER]), id="no-workers"
        ),
        pytest.param(TUNE | ALL_WORKERS, ([TUNER], [TUNER]), id="tune"),
    ],
)
def test_deciders_and_succeeders(spec: dict[str, Any], expected: tuple[list[Any], ...]) -> None:
    parsed = validated_spec("mnist", spec)
    assert (list(deciders(parsed)), list(succeeders(parsed))) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("AllWorkers", SuccessPolicy.ALL_WORKERS, id="all-workers"),
        pytest.param("", SuccessPolicy.DEFAULT, id="empty-is-the-default"),
    ],
)
def test_the_values_mxnet_operator_had_are_read(value: str, expected: SuccessPolicy) -> None:
    assert validated_spec("mnist", train(successPolicy=value)).successPolicy is expected
    assert validated_spec("mnist", train()).successPolicy is SuccessPolicy.DEFAULT


@pytest.mark.parametrize("value", ["allWorkers", "Workers", None, 1], ids=repr)
def test_any_other_value_is_refused(value: Any) -> None:
    with pytest.raises(SpecError) as err:
        validated_spec("mnist", train(successPolicy=value))
    assert err.value.problems == ["spec.successPolicy: Input should be '' or 'AllWorkers'"]


def running_job(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The job, its answer once every pod runs, and those pods' statuses by name."""
    parent = s.mxjob(spec)
    first = s.created(s.request(parent))
    running = dict.fromkeys(s.names(s.pods_of(first)), RUN)
    return parent, s.step(parent, first, running)[1], running


def true_of(answer: dict[str, Any]) -> list[str]:
    return [c["type"] for c in answer["status"]["conditions"] if c["status"] == "True"]


@pytest.mark.parametrize("cleanup", ["All", "Running", "None"])
def test_a_scheduler_that_exits_first_takes_nothing_down(cleanup: str) -> None:
    parent, answer, phases = running_job(
        train(successPolicy=AW, runPolicy={"cleanPodPolicy": cleanup})
    )
    phases |= {"mnist-scheduler-0": OK}
    _, exited = s.step(parent, answer, phases)
    _, again = s.step(parent, exited, phases)
    assert true_of(exited) == ["Created", "Running"]
    assert s.names(exited["children"]) == s.names(answer["children"])
    assert (again["status"], again["children"]) == (exited["status"], exited["children"])
    assert exited["status"]["replicaStatuses"]["Scheduler"] == {
        "active": 0, "succeeded": 1, "failed": 0,
    }  # fmt: skip


def test_every_worker_done_succeeds_and_cleans_up_running_pods() -> None:
    parent, answer, phases = running_job(train(successPolicy=AW))
    phases |= {"mnist-scheduler-0": OK, "mnist-worker-0": OK}
    _, one_left = s.step(parent, answer, phases)
    phases |= {"mnist-worker-1": OK}
    _, finishing = s.step(parent, one_left, phases)
    _, cleaned = s.step(parent, finishing, phases)
    assert (true_of(one_left), true_of(finishing)) == (
        ["Created", "Running"],
        ["Created", "Succeeded"],
    )
    # Nothing goes at the sync that decides; then cleanPodPolicy Running removes the Server.
    assert s.names(finishing["children"]) == s.names(answer["children"])
    kept = ["mnist-scheduler-0", "mnist-worker-0", "mnist-worker-1"]
    assert s.names(s.pods_of(cleaned)) == kept
    assert s.names(s.services_of(cleaned)) == kept


def test_the_default_still_ends_at_the_scheduler_exit() -> None:
    parent, answer, phases = running_job(train())
    phases |= {"mnist-scheduler-0": OK}
    _, finishing = s.step(parent, answer, phases)
    _, cleaned = s.step(parent, finishing, phases)
    assert true_of(finishing) == ["Created", "Succeeded"]
    assert s.names(s.pods_of(cleaned)) == ["mnist-scheduler-0"]


@pytest.mark.parametrize(
    ("policy", "run_policy", "conditions", "restarts"),
    [
        pytest.param("ExitCode", {}, ["Created", "Restarting"], 1, id="retryable-restarts"),
        pytest.param("ExitCode", {"backoffLimit": 0}, ["Created", "Failed"], 1, id="backoff"),
        pytest.param("Never", {}, ["Created", "Failed"], 0, id="never-fails"),
    ],
)
def test_a_failing_worker_follows_its_restart_policy(
    policy: str, run_policy: dict[str, Any], conditions: list[str], restarts: int
) -> None:
    spec = train(successPolicy=AW, runPolicy=run_policy)
    spec["mxReplicaSpecs"]["Worker"]["restartPolicy"] = policy
    parent, answer, phases = running_job(spec)
    killed = s.pod_status("Failed", exit_code=137)
    _, failed = s.step(parent, answer, phases | {"mnist-scheduler-0": OK, "mnist-worker-1": killed})
    assert (true_of(failed), failed["status"]["restartCount"]) == (conditions, restarts)
    replaced = [n for n in s.names(s.pods_of(failed)) if n.startswith("mnist-worker-1-")]
    assert len(replaced) == (1 if conditions[-1] == "Restarting" else 0)


def test_a_replaced_worker_runs_the_job_again_after_the_scheduler_exited() -> None:
    spec = train(successPolicy=AW)
    spec["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    parent, answer, phases = running_job(spec)
    phases |= {"mnist-scheduler-0": OK, "mnist-worker-1": s.pod_status("Failed", exit_code=137)}
    _, restarting = s.step(parent, answer, phases)
    phases |= {n: RUN for n in s.names(s.pods_of(restarting)) if n.startswith("mnist-worker-1-")}
    _, resumed = s.step(parent, restarting, phases)
    assert (true_of(restarting), true_of(resumed)) == (
        ["Created", "Restarting"], ["Created", "Running"],
    )  # fmt: skip
