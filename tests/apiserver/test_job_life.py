"""A whole MXJob life through the real API server, driven by test doubles for Metacontroller and
the kubelet (tests/apiserver/metacontroller.py): create, run, a worker SIGKILLed and replaced
under restartPolicy ExitCode, success, clean-up by cleanPodPolicy, then by the TTL."""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from .cluster import ApiServer
from .metacontroller import Clock, Kubelet, Metacontroller
from .resources import CONTROLLER_UID, install_crds, owner_reference

pytestmark = pytest.mark.apiserver

JOB = Path(__file__).resolve().parents[2] / "examples" / "dist-cpu.yaml"
NAME = "mnist-dist-cpu"
ALL = ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1")
CREATED = {"Created": "MXJobCreated"}
RUNNING = CREATED | {"Running": "MXJobRunning"}
RESTARTING = CREATED | {"Restarting": "MXJobRestarting"}
SUCCEEDED = CREATED | {"Succeeded": "MXJobSucceeded"}


def pods(phase: str, *which: str) -> dict[str, str]:
    return {f"{NAME}-{w}": phase for w in which or ALL}


# MX_CONFIG's shared parts: created with the first pods, deleted with the last.
CONFIG_MAP = f"ConfigMap/{NAME}-mx-config"


def children(kind: str, *which: str) -> list[str]:
    return [f"{kind}/{NAME}-{w}" for w in which]


def nothing(kubelet: Kubelet) -> None:
    return None


def start(kubelet: Kubelet) -> None:
    kubelet.run()


def kill_worker_1(kubelet: Kubelet) -> None:
    kubelet.exit(f"{NAME}-worker-1", 137)


def finish(kubelet: Kubelet) -> None:
    for pod in ("scheduler-0", "worker-0", "worker-1-r1"):
        kubelet.exit(f"{NAME}-{pod}", 0)


@dataclass(frozen=True)
class Step:
    """What the kubelet does and the seconds that pass; then what the sync must leave behind:
    True conditions by reason, pods by phase, Services, the children it wrote, whether it wrote
    the status (an unchanged status is not written: the hook's status is a fixed point), and
    words the last condition's message must contain."""

    act: Callable[[Kubelet], None]
    after: float
    conditions: dict[str, str]
    pods: dict[str, str]
    services: tuple[str, ...]
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    status_written: bool = True
    says: str = ""


DONE = ("scheduler-0", "worker-0", "worker-1-r1")
REPLACED = pods("Running", *ALL[:4]) | pods("Running", "worker-1-r1")
LIFE = {
    "created": Step(
        nothing, 0, CREATED, pods("Pending"), ALL,
        created=[CONFIG_MAP, *children("Pod", *ALL), *children("Service", *ALL)],
    ),
    "running": Step(start, 10, RUNNING, pods("Running"), ALL),
    "worker-1-killed-replacement-created": Step(
        kill_worker_1, 30, RESTARTING,
        pods("Running", *ALL[:4]) | pods("Failed", "worker-1") | pods("Pending", "worker-1-r1"),
        ALL,
        created=children("Pod", "worker-1-r1"),
        # The Service records the attempt, so losing every pod cannot reset the restart count.
        updated=children("Service", "worker-1"),
        says=f"Worker replica 1 (pod {NAME}-worker-1) failed with exit code 137 (SIGKILL)",
    ),
    "replacement-running-failed-attempt-removed": Step(
        start, 10, RUNNING, REPLACED, ALL, deleted=children("Pod", "worker-1"),
    ),
    # The sync that decides the job is finished removes nothing.
    "succeeded": Step(
        finish, 60, SUCCEEDED, pods("Running", "server-0", "server-1") | pods("Succeeded", *DONE),
        ALL,
    ),
    "clean-up-running-pods": Step(
        nothing, 1, SUCCEEDED, pods("Succeeded", *DONE), ("scheduler-0", "worker-0", "worker-1"),
        deleted=children("Pod", "server-0", "server-1") + children("Service", "server-0", "server-1"),
        status_written=False,
    ),
    "ttl-expired-all-removed": Step(
        nothing, 86400, SUCCEEDED, {}, (),
        deleted=[
            CONFIG_MAP,
            *children("Pod", *DONE),
            *children("Service", "scheduler-0", "worker-0", "worker-1"),
        ],
        status_written=False,
    ),
    "nothing-left-to-do": Step(nothing, 60, SUCCEEDED, {}, (), status_written=False),
}  # fmt: skip


def true_conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["reason"] for c in status["conditions"] if c["status"] == "True"}


def create_job(server: ApiServer, namespace: str) -> None:
    """The example dist-cpu job, as its user submits it."""
    job = yaml.safe_load(JOB.read_text())
    job["metadata"]["namespace"] = namespace
    server.apply(job)


def test_job_life(apiserver: ApiServer, namespace: str) -> None:
    install_crds(apiserver)
    create_job(apiserver, namespace)
    clock = Clock(datetime.now(UTC).replace(microsecond=0))
    metacontroller = Metacontroller(apiserver, namespace, NAME, clock)
    kubelet = Kubelet(apiserver, namespace, clock)

    for name, step in LIFE.items():
        step.act(kubelet)
        done = metacontroller.sync(after=step.after)
        parent = metacontroller.parent()
        observed = metacontroller.children(parent)

        seen = {
            "conditions": true_conditions(done.answer["status"]),
            "writes": (done.created, done.updated, done.deleted, done.status_written),
            "pods": kubelet.phases(),
            "services": sorted(n for kind, n in observed if kind == "Service.v1"),
            "status": parent["status"],
        }
        assert seen == {
            "conditions": step.conditions,
            "writes": (step.created, step.updated, step.deleted, step.status_written),
            "pods": step.pods,
            "services": sorted(f"{NAME}-{s}" for s in step.services),
            "status": done.answer["status"] | {"observedGeneration": 1},
        }, f"after step {name}"
        assert step.says in done.answer["status"]["conditions"][-1]["message"], name
        for child in observed.values():
            assert child["metadata"]["ownerReferences"] == [owner_reference(parent)], name
            assert child["metadata"]["labels"][CONTROLLER_UID] == parent["metadata"]["uid"], name
