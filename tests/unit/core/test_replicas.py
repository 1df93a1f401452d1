"""Per replica index (app/core/observe/replicas.py): what its current attempt needs under each restart
policy, which pod it should be running, which observed pods it keeps, and the attempts its
Service remembers (docs/behaviour.md#restarts)."""

from collections.abc import Sequence
from typing import Any

import pytest

from app.core.model.spec import ReplicaType, RestartPolicy
from app.core.mxnet import names
from app.core.observe.pods import Attempt
from app.core.observe.replicas import Replica, ReplicaState, recorded_attempts, replicas_of
from app.core.validate.validation import validated_spec
from tests.support.jobs import train_spec

WORKER = ReplicaType.WORKER


def attempt(
    n: int = 0, phase: str = "Running", exit_code: int | None = None, before: int = 0, **kw: Any
) -> Attempt:
    """Attempt `n` of worker 0, `before` restarts charged before it began."""
    rtype, index = kw.get("rtype", WORKER), kw.get("index", 0)
    name = names.pod_name("mnist", rtype, index, n)
    return Attempt(name, rtype, index, n, before, phase, kw.get("in_place", 0), exit_code, "")


def worker(policy: str, *attempts: Attempt, recorded: tuple[int, int] = (0, 0)) -> Replica:
    return Replica(WORKER, 0, RestartPolicy(policy), attempts, recorded)


# The contract's restart rules (docs/behaviour.md#restarts), one case per policy and outcome.
@pytest.mark.parametrize(
    ("policy", "current", "state"),
    [
        pytest.param("Never", None, ReplicaState.MISSING, id="no-pod"),
        pytest.param("Never", attempt(phase="Pending"), ReplicaState.PENDING, id="pending"),
        pytest.param("Never", attempt(phase="Unknown"), ReplicaState.PENDING, id="unknown"),
        pytest.param("Never", attempt(), ReplicaState.RUNNING, id="running"),
        pytest.param("Never", attempt(phase="Succeeded"), ReplicaState.SUCCEEDED, id="succeeded"),
        pytest.param("Never", attempt(phase="Failed"), ReplicaState.PERMANENT, id="never-failed"),
        pytest.param("OnFailure", attempt(phase="Failed"), ReplicaState.RETRY, id="on-failure"),
        pytest.param("Always", attempt(phase="Failed"), ReplicaState.RETRY, id="always"),
        pytest.param("ExitCode", attempt(0, "Failed", 1), ReplicaState.PERMANENT, id="exit-1"),
        pytest.param("ExitCode", attempt(0, "Failed", 127), ReplicaState.PERMANENT, id="exit-127"),
        pytest.param("ExitCode", attempt(0, "Failed", 128), ReplicaState.RETRY, id="exit-128"),
        pytest.param("ExitCode", attempt(0, "Failed", 137), ReplicaState.RETRY, id="exit-sigkill"),
        pytest.param(
            "ExitCode", attempt(0, "Failed"), ReplicaState.RETRY, id="evicted-no-exit-code"
        ),
    ],
)
def test_the_state_of_the_current_attempt(
    policy: str, current: Attempt | None, state: ReplicaState
) -> None:
    replica = worker(policy, *([current] if current else []))
    assert (replica.current, replica.state) == (current, state)


FAILED_0 = attempt(0, "Failed")
PENDING_1 = attempt(1, "Pending", before=1)
RUNNING_1 = attempt(1, before=1, in_place=2)


# (attempts observed, recorded on the Service) -> restarts so far, the pod it should run.
@pytest.mark.parametrize(
    ("attempts", "recorded", "restarts", "next_attempt"),
    [
        pytest.param((), (0, 0), 0, (0, 0), id="new"),
        pytest.param((), (2, 3), 3, (2, 3), id="no-pod-left-the-service-remembers"),
        pytest.param((FAILED_0,), (0, 0), 1, (1, 1), id="failed-replaced-this-sync"),
        pytest.param((FAILED_0, PENDING_1), (0, 0), 1, (1, 1), id="replacement-pending"),
        pytest.param((FAILED_0, RUNNING_1), (0, 0), 3, (1, 1), id="in-place-restarts-count"),
    ],
)
def test_restarts_and_the_attempt_to_run(
    attempts: Sequence[Attempt],
    recorded: tuple[int, int],
    restarts: int,
    next_attempt: tuple[int, int],
) -> None:
    replica = worker("OnFailure", *attempts, recorded=recorded)
    assert (replica.restarts, replica.next_attempt) == (restarts, next_attempt)


# The last failed attempt stays, for `kubectl logs`, until its replacement runs.
@pytest.mark.parametrize(
    ("attempts", "restarting", "last_failed", "going_on", "kept"),
    [
        pytest.param((RUNNING_1,), False, None, RUNNING_1, [RUNNING_1], id="one-running"),
        pytest.param((FAILED_0,), True, FAILED_0, None, [FAILED_0], id="failed-to-replace"),
        pytest.param(
            (FAILED_0, PENDING_1), True, FAILED_0, None, [FAILED_0, PENDING_1], id="replacing"
        ),
        pytest.param((FAILED_0, RUNNING_1), False, FAILED_0, RUNNING_1, [RUNNING_1], id="replaced"),
    ],
)
def test_which_observed_attempts_a_running_job_keeps(
    attempts: Sequence[Attempt],
    restarting: bool,
    last_failed: Attempt | None,
    going_on: Attempt | None,
    kept: list[Attempt],
) -> None:
    replica = worker("OnFailure", *attempts)
    assert (replica.restarting, replica.last_failed) == (restarting, last_failed)
    assert (replica.going_on(), replica.keep_while_running()) == (going_on, kept)


def service(job: str, rtype: str, index: str, attempt: str, restarts: str) -> dict[str, Any]:
    labels = names.job_labels(job) | {names.LABEL_TYPE: rtype, names.LABEL_INDEX: index}
    annotations = {names.LABEL_ATTEMPT: attempt, names.ANNOTATION_RESTARTS: restarts}
    return {"metadata": {"labels": labels, "annotations": annotations}}


def test_the_attempts_services_remember() -> None:
    services = [
        service("mnist", "worker", "1", "3", "4"),
        service("mnist", "server", "0", "x", "²"),
        service("other", "worker", "0", "1", "1"),
        service("mnist", "chief", "0", "1", "1"),
        {"metadata": {"labels": None, "annotations": {}}},
        {"metadata": "junk"},
        "junk",
    ]
    assert recorded_attempts(services, "mnist") == {
        (WORKER, 1): (3, 4),
        (ReplicaType.SERVER, 0): (0, 0),
    }


def test_every_index_the_spec_asks_for_in_order_the_services_read_only_if_needed() -> None:
    spec = validated_spec("mnist", train_spec(servers=1, workers=2))
    replacement, first = attempt(1, "Pending", index=1), attempt(0, "Failed", index=1)
    reads: list[None] = []

    def recorded() -> dict[tuple[ReplicaType, int], tuple[int, int]]:
        reads.append(None)
        return {(ReplicaType.SCHEDULER, 0): (2, 2)}

    scheduler, server = attempt(rtype=ReplicaType.SCHEDULER), attempt(rtype=ReplicaType.SERVER)
    everyone = replicas_of(spec, [replacement, scheduler, server, first], recorded)
    assert [(r.rtype, r.index) for r in everyone] == [
        (ReplicaType.SCHEDULER, 0),
        (ReplicaType.SERVER, 0),
        (WORKER, 0),
        (WORKER, 1),
    ]
    assert everyone[3].attempts == (first, replacement)
    assert (everyone[2].attempts, everyone[2].recorded) == ((), (0, 0))
    assert reads == [None], "read once, for worker 0 alone"
    with_pods = replicas_of(spec, [scheduler, server, attempt(), replacement], recorded)
    assert [r.current for r in with_pods] == [scheduler, server, attempt(), replacement]
    assert reads == [None], "not read when every index has a pod"
