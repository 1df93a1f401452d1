"""The golden sync requests: a job's life as Metacontroller would show it to the hook.

`python -m tests.golden_cases` rewrites tests/golden/*.json from these cases; review the diff,
since the response files are the hook's expected answers."""

import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from app.reconcile import sync
from tests import support as s

GOLDEN = Path(__file__).parent / "golden"
Case = tuple[dict[str, Any], datetime]
CASES: dict[str, Callable[[], Case]] = {}


def case(fn: Callable[[], Case]) -> Callable[[], Case]:
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


def _train() -> dict[str, Any]:
    spec = s.train_spec(servers=2, workers=2)
    for replica in spec["mxReplicaSpecs"].values():
        del replica["restartPolicy"]
    return s.mxjob(spec)


def _life(*phases: dict[str, dict[str, Any]]) -> Case:
    """Replay the train job from creation through the given observed pod phases."""
    parent = _train()
    req, at = s.request(parent), s.NOW
    answer = sync(req, at)
    for n, observed in enumerate(phases, start=1):
        at = s.later(30 * n)
        req, answer = s.step(parent, answer, observed, at)
    return req, at


RUNNING = s.pod_status("Running")
DONE = s.pod_status("Succeeded", exit_code=0)
ALL = ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1")


def _all(status: dict[str, Any], *which: str) -> dict[str, dict[str, Any]]:
    return {f"mnist-{w}": status for w in which or ALL}


@case
def new_job() -> Case:
    return _life()


@case
def pods_pending() -> Case:
    return _life({})


@case
def all_running() -> Case:
    return _life({}, _all(RUNNING))


@case
def scheduler_succeeded() -> Case:
    finished = _all(RUNNING) | _all(DONE, "scheduler-0", "worker-0", "worker-1")
    return _life({}, _all(RUNNING), finished)


@case
def scheduler_succeeded_cleanup() -> Case:
    finished = _all(RUNNING) | _all(DONE, "scheduler-0", "worker-0", "worker-1")
    return _life({}, _all(RUNNING), finished, finished)


@case
def worker_failed_never() -> Case:
    failed = _all(RUNNING) | {"mnist-worker-1": s.pod_status("Failed", exit_code=1)}
    return _life({}, _all(RUNNING), failed)


@case
def invalid_spec() -> Case:
    spec = s.train_spec(servers=1, workers=2)
    del spec["mxReplicaSpecs"]["Scheduler"]
    spec["mxReplicaSpecs"]["Worker"]["replicas"] = -1
    return s.request(s.mxjob(spec)), s.NOW


@case
def invalid_spec_running_job() -> Case:
    req, _ = _life({}, _all(RUNNING), _all(RUNNING))
    req["parent"]["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    return req, s.later(120)


def paths(name: str) -> tuple[Path, Path]:
    return GOLDEN / f"{name}.request.json", GOLDEN / f"{name}.response.json"


def times() -> dict[str, datetime]:
    """When each golden request is answered (the hook's `now`), kept beside the files."""
    raw = json.loads((GOLDEN / "now.json").read_text())
    return {name: datetime.fromisoformat(at) for name, at in raw.items()}


def write() -> None:
    GOLDEN.mkdir(exist_ok=True)
    now = {}
    for name, make in CASES.items():
        req, at = make()
        now[name] = at.isoformat()
        request_path, response_path = paths(name)
        request_path.write_text(json.dumps(req, indent=2) + "\n")
        response_path.write_text(json.dumps(sync(req, at), indent=2) + "\n")
    (GOLDEN / "now.json").write_text(json.dumps(now, indent=2) + "\n")


if __name__ == "__main__":
    write()
    sys.exit(0)
