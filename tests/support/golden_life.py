"""The golden cases' means: the registry each case enters, a job's life replayed one sync
every 30 seconds, the pod phases it sees and the jobs it starts from."""

from collections.abc import Callable
from datetime import datetime
from typing import Any

from app.core.model import kinds
from tests.support import REPO
from tests.support import jobs as s
from tests.support.hooked import sync

GOLDEN = REPO / "tests" / "golden"
Case = tuple[dict[str, Any], datetime]
CASES: dict[str, Callable[[], Case]] = {}


def case(fn: Callable[[], Case]) -> Callable[[], Case]:
    """Register a golden case under its name, dashed."""
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


def train_job() -> dict[str, Any]:
    spec = s.train_spec(servers=2, workers=2)
    for replica in spec["mxReplicaSpecs"].values():
        del replica["restartPolicy"]
    return s.mxjob(spec)


# The child types the CompositeController declares besides pods and Services.
CONFIG_MAPS = (kinds.CONFIG_MAP_TYPE,)


def replay(
    parent: dict[str, Any],
    *phases: dict[str, dict[str, Any]],
    child_types: tuple[str, ...] = CONFIG_MAPS,
    first: bool = False,
) -> tuple[dict[str, Any], dict[str, Any], datetime]:
    """Replay a job from creation through the given observed pod phases, one sync every
    30 seconds. Returns the last request, its answer and its time. The first answer is the
    job's status alone; the sync its status write brings at once creates the children: with
    `first` and no phases, the first sync is the one returned."""
    req = s.request(parent, others={kind: [] for kind in child_types})
    at = s.NOW
    answer = sync(req, at)
    if not first:
        req = s.request(parent | {"status": answer["status"]}, others=none_of(child_types))
        answer = sync(req, at)
    for n, observed in enumerate(phases, start=1):
        at = s.later(30 * n)
        req, answer = s.step(parent, answer, observed, at, child_types)
    return req, answer, at


def life(
    *phases: dict[str, dict[str, Any]],
    parent: dict[str, Any] | None = None,
    child_types: tuple[str, ...] = CONFIG_MAPS,
    first: bool = False,
) -> Case:
    req, _, at = replay(parent or train_job(), *phases, child_types=child_types, first=first)
    return req, at


RUNNING = s.pod_status("Running")
DONE = s.pod_status("Succeeded", exit_code=0)
ALL = ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1")


def every(status: dict[str, Any], *which: str) -> dict[str, dict[str, Any]]:
    return {f"mnist-{w}": status for w in which or ALL}


def none_of(child_types: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    return {kind: [] for kind in child_types}


def with_policy(run_policy: dict[str, Any], policy: str = "ExitCode") -> dict[str, Any]:
    job = s.mxjob(s.train_spec(servers=2, workers=2, policy=policy))
    job["spec"]["runPolicy"] = run_policy
    return job


KILLED = s.pod_status("Failed", exit_code=137)
WORKER_1_KILLED = every(RUNNING) | {"mnist-worker-1": KILLED}
