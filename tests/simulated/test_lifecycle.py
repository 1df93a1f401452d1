"""Whole lives of jobs in a simulated cluster, each also run with a lagging parent status."""

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import jobs as s
from tests.support.hooked import sync
from tests.support.simcluster import SimCluster

Action = Callable[[SimCluster], Any]
# (what happens before the sync, seconds that pass, True conditions by reason, pods by phase)
Step = tuple[Action, int, dict[str, str], dict[str, str]]

CREATED = {"Created": "MXJobCreated"}
RUNNING = CREATED | {"Running": "MXJobRunning"}
SUCCEEDED = CREATED | {"Succeeded": "MXJobSucceeded"}
ALL = ("scheduler-0", "server-0", "worker-0", "worker-1")


def nothing(cluster: SimCluster) -> None:
    return None


def start(cluster: SimCluster) -> None:
    cluster.run()


def pods(phase: str, *which: str, job: str = "mnist") -> dict[str, str]:
    return {f"{job}-{w}": phase for w in which or ALL}


def job(policy: str = "ExitCode", **run_policy: Any) -> dict[str, Any]:
    parent = s.mxjob(s.train_spec(servers=1, workers=2, policy=policy))
    parent["spec"]["runPolicy"] = run_policy
    return parent


def exit_(name: str, code: int) -> Action:
    return lambda c: c.exit(name, code)


def finish(cluster: SimCluster) -> None:
    for name in ("mnist-worker-0", "mnist-worker-1", "mnist-worker-1-r1", "mnist-scheduler-0"):
        if name in cluster.pods() and cluster.pods()[name]["status"]["phase"] == "Running":
            cluster.exit(name, 0)


def edit(path: str, value: Any) -> Action:
    def apply(cluster: SimCluster) -> None:
        node = cluster.parent["spec"]
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return apply


DONE = pods("Running", "server-0") | pods("Succeeded", "scheduler-0", "worker-0", "worker-1")
KILLED_1 = pods("Running") | pods("Failed", "worker-1")
# Worker 1 killed (SIGKILL) and its replacement created, then running.
WORKER_1_KILLED: Step = (
    exit_("mnist-worker-1", 137),
    30,
    CREATED | {"Restarting": "MXJobRestarting"},
    KILLED_1 | {"mnist-worker-1-r1": "Pending"},
)
REPLACEMENT_RUNNING: Step = (
    start,
    5,
    RUNNING,
    pods("Running", "scheduler-0", "server-0", "worker-0") | {"mnist-worker-1-r1": "Running"},
)

SCENARIOS: dict[str, tuple[dict[str, Any], list[Step]]] = {
    "success-cleanup-and-ttl": (
        job(ttlSecondsAfterFinished=300),
        [
            (nothing, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            (finish, 60, SUCCEEDED, DONE),
            # The sync after the status records success removes what still runs.
            (nothing, 1, SUCCEEDED, pods("Succeeded", "scheduler-0", "worker-0", "worker-1")),
            (nothing, 300, SUCCEEDED, {}),
        ],
    ),
    "sigkill-replaced-then-success": (
        job(),
        [
            (nothing, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            WORKER_1_KILLED,
            REPLACEMENT_RUNNING,
            (
                finish,
                60,
                SUCCEEDED,
                pods("Running", "server-0")
                | pods("Succeeded", "scheduler-0", "worker-0")
                | {"mnist-worker-1-r1": "Succeeded"},
            ),
        ],
    ),
    "evicted-on-failure-replaced": (
        job("OnFailure"),
        [
            (start, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            (
                lambda c: c.evict("mnist-server-0"),
                30,
                CREATED | {"Restarting": "MXJobRestarting"},
                pods("Running") | pods("Failed", "server-0") | {"mnist-server-0-r1": "Pending"},
            ),
            (
                start,
                5,
                RUNNING,
                pods("Running", "scheduler-0", "worker-0", "worker-1")
                | {"mnist-server-0-r1": "Running"},
            ),
        ],
    ),
    "permanent-failure": (
        job(),
        [
            (start, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            (exit_("mnist-worker-1", 1), 30, CREATED | {"Failed": "MXJobFailed"}, KILLED_1),
            (nothing, 1, CREATED | {"Failed": "MXJobFailed"}, pods("Failed", "worker-1")),
        ],
    ),
    "backoff-exhausted": (
        job(backoffLimit=1),
        [
            (start, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            WORKER_1_KILLED,
            (
                exit_("mnist-worker-1-r1", 143),
                30,
                CREATED | {"Failed": "BackoffLimitExceeded"},
                KILLED_1 | {"mnist-worker-1-r1": "Failed"},
            ),
            (
                nothing,
                1,
                CREATED | {"Failed": "BackoffLimitExceeded"},
                pods("Failed", "worker-1") | {"mnist-worker-1-r1": "Failed"},
            ),
        ],
    ),
    "deleted-replacement-keeps-its-restart-count": (
        job(backoffLimit=1),
        [
            (start, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            WORKER_1_KILLED,
            REPLACEMENT_RUNNING,
            (
                lambda c: c.delete_by_hand("mnist-worker-1-r1"),
                30,
                RUNNING,
                pods("Running", "scheduler-0", "server-0", "worker-0")
                | {"mnist-worker-1-r1": "Pending"},
            ),
            REPLACEMENT_RUNNING,
            (
                exit_("mnist-worker-1-r1", 137),
                30,
                CREATED | {"Failed": "BackoffLimitExceeded"},
                pods("Running", "scheduler-0", "server-0", "worker-0")
                | {"mnist-worker-1-r1": "Failed"},
            ),
        ],
    ),
    "in-place-restarts-count-against-backoff": (
        job("Always", backoffLimit=2),
        [
            (start, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            (lambda c: c.restart_in_place("mnist-worker-0", 2), 30, RUNNING, pods("Running")),
            (
                lambda c: c.restart_in_place("mnist-worker-0", 3),
                30,
                CREATED | {"Failed": "BackoffLimitExceeded"},
                pods("Running"),
            ),
            (nothing, 1, CREATED | {"Failed": "BackoffLimitExceeded"}, {}),
        ],
    ),
    "deadline": (
        job(activeDeadlineSeconds=120, cleanPodPolicy="None"),
        [
            (nothing, 0, CREATED, pods("Pending")),
            (start, 20, RUNNING, pods("Running")),
            (
                exit_("mnist-worker-0", 0),
                40,
                RUNNING,
                pods("Running") | pods("Succeeded", "worker-0"),
            ),
            (
                nothing,
                60,
                CREATED | {"Failed": "DeadlineExceeded"},
                pods("Running") | pods("Succeeded", "worker-0"),
            ),
            # Past the deadline running pods go even with cleanPodPolicy None.
            (nothing, 1, CREATED | {"Failed": "DeadlineExceeded"}, pods("Succeeded", "worker-0")),
        ],
    ),
    "suspend-and-resume": (
        job(),
        [
            (nothing, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            (edit("runPolicy.suspend", True), 30, CREATED | {"Suspended": "MXJobSuspended"}, {}),
            (nothing, 600, CREATED | {"Suspended": "MXJobSuspended"}, {}),
            (edit("runPolicy.suspend", False), 60, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            (finish, 60, SUCCEEDED, DONE),
        ],
    ),
    # Suspended while a replacement is pending: the job is no longer restarting.
    "suspend-while-restarting": (
        job(),
        [
            (nothing, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            WORKER_1_KILLED,
            (edit("runPolicy.suspend", True), 30, CREATED | {"Suspended": "MXJobSuspended"}, {}),
            (edit("runPolicy.suspend", False), 60, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            (finish, 60, SUCCEEDED, DONE),
        ],
    ),
    "clean-pod-policy-all": (
        job(cleanPodPolicy="All"),
        [
            (start, 0, CREATED, pods("Pending")),
            (start, 5, RUNNING, pods("Running")),
            (finish, 60, SUCCEEDED, DONE),
            (nothing, 1, SUCCEEDED, {}),
        ],
    ),
}


def live(name: str, stale: bool) -> SimCluster:
    parent, steps = SCENARIOS[name]
    cluster = SimCluster(parent=parent, stale=stale)
    for n, (action, seconds, conditions, expected_pods) in enumerate(steps):
        action(cluster)
        answer = cluster.sync(after=seconds)
        where = f"step {n} at +{(cluster.now - s.NOW).seconds}s"
        assert cluster.true_conditions() == conditions, where
        assert cluster.phases() == expected_pods, where
        services = sorted({re.sub(r"-r\d+$", "", p) for p in expected_pods})
        assert cluster.names("Service.v1") == services, where
        assert answer["status"] == cluster.status
        _assert_fixed_point(cluster)
    return cluster


def _assert_fixed_point(cluster: SimCluster) -> None:
    again = cluster.request | {"parent": cluster.request["parent"] | {"status": cluster.status}}
    assert sync(again, cluster.now)["status"] == cluster.status


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_life(name: str) -> None:
    live(name, stale=False)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_life_with_a_lagging_parent_status_creates_and_deletes_the_same(name: str) -> None:
    fresh, stale = live(name, stale=False), live(name, stale=True)
    assert stale.created == fresh.created
    assert stale.deleted == fresh.deleted
    assert stale.status == fresh.status
