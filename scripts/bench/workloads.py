"""What the hook's benchmark sends: job sizes, and a running job's steady-state sync request as
Metacontroller makes it (every observed pod with the API server's metadata and defaults, a
running pod status, and Metacontroller's last-applied annotation); the in-process phases of
answering it."""

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from app.core.model.kinds import CONFIG_MAP_TYPE
from app.core.observe.applied import LAST_APPLIED
from tests.support import jobs as s
from tests.support.hooked import sync

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Size:
    name: str
    servers: int
    workers: int
    named: bool = False  # a named size gets every figure; the others only feed the curve

    @property
    def replicas(self) -> int:
        return 1 + self.servers + self.workers

    @property
    def label(self) -> str:
        return f"{self.name} (1/{self.servers}/{self.workers})"


SIZES = (
    Size("small", 1, 2, named=True),
    Size("s16", 4, 16),
    Size("typical", 16, 64, named=True),
    Size("s250", 25, 250),
    Size("s500", 50, 500),
    Size("large", 100, 1000, named=True),
)


def _running_status() -> dict[str, Any]:
    """What the kubelet reports for a running pod with one `mxnet` container."""
    status = s.pod_status(
        "Running",
        hostIP="10.0.3.17",
        podIP="10.244.3.41",
        podIPs=[{"ip": "10.244.3.41"}],
        qosClass="BestEffort",
        startTime="2026-11-22T11:58:30Z",
        conditions=[
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": at}
            for t, at in (
                ("PodReadyToStartContainers", "2026-11-22T11:58:41Z"),
                ("Initialized", "2026-11-22T11:58:30Z"),
                ("Ready", "2026-11-22T11:59:00Z"),
                ("ContainersReady", "2026-11-22T11:59:00Z"),
                ("PodScheduled", "2026-11-22T11:58:30Z"),
            )
        ],
    )
    status["containerStatuses"][0] |= {
        "containerID": "containerd://" + "3f" * 32,
        "imageID": f"docker.io/{s.IMAGE}@sha256:" + "a7" * 32,
        "started": True,
        "lastState": {},
    }
    return status


def _as_cluster_shows(child: dict[str, Any], **status: Any) -> dict[str, Any]:
    """A desired child as Metacontroller sends it back: with the API server's metadata and
    defaults, and the last-applied annotation Metacontroller keeps for its 3-way merge."""
    out = s.observed(child, **status)
    meta = out["metadata"]
    meta["annotations"] = meta.get("annotations", {}) | {LAST_APPLIED: orjson.dumps(child).decode()}
    meta["creationTimestamp"] = "2026-11-22T11:58:29Z"
    meta["generation"] = 1
    if child["kind"] == "Pod":
        out["spec"] = _pod_defaults(out["spec"])
    return out


def _pod_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    mount = {"name": "kube-api-access", "readOnly": True, "mountPath": "/var/run/secrets/sa"}
    defaults = {
        "container": {
            "imagePullPolicy": "IfNotPresent",
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": [mount],
        },
    }
    return spec | {
        "containers": [c | defaults["container"] for c in spec["containers"]],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "nodeName": "node-3",
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute"}
            | {"tolerationSeconds": 300}
            for k in ("not-ready", "unreachable")
        ],
        "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420}}],
    }


def running_job_request(size: Size, config_map: bool = True) -> dict[str, Any]:
    """The steady-state sync of a job whose pods all run: the parent's status already says
    Running, so the answer is the same status and the same children. Without `config_map`,
    as under a CompositeController that declares no ConfigMaps: every pod carries its whole
    MX_CONFIG, as before the ConfigMap."""
    parent = s.mxjob(s.train_spec(size.servers, size.workers, policy="OnFailure"))
    types = [CONFIG_MAP_TYPE] if config_map else []
    answer = s.created(s.request(parent, others={t: [] for t in types}))
    for _ in range(2):
        pods = [_as_cluster_shows(p, **_running_status()) for p in s.pods_of(answer)]
        services = [_as_cluster_shows(c) for c in s.services_of(answer)]
        maps = [_as_cluster_shows(c) for c in answer["children"] if c["kind"] == "ConfigMap"]
        parent = parent | {"status": answer["status"]}
        request = s.request(parent, pods, services, dict.fromkeys(types, maps))
        answer = sync(copy.deepcopy(request), s.NOW)
    return request


@dataclass(frozen=True)
class Payload:
    size: Size
    request: bytes
    response: bytes


def payload(size: Size) -> Payload:
    request = orjson.dumps(running_job_request(size))
    return Payload(size, request, orjson.dumps(sync(orjson.loads(request), s.NOW)))


def answer(body: bytes) -> bytes:
    """What the hook does with a body besides HTTP: parse, sync, serialize."""
    return orjson.dumps(sync(orjson.loads(body), s.NOW))


PHASES = ("parse", "sync", "serialize", "whole")


def time_phases(body: bytes, count: int) -> dict[str, list[float]]:
    """Seconds per phase of what the hook does with a body besides HTTP, `count` times."""
    out: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for _ in range(count):
        marks = [time.perf_counter()]
        parsed = orjson.loads(body)
        marks.append(time.perf_counter())
        desired = sync(parsed, s.NOW)
        marks.append(time.perf_counter())
        orjson.dumps(desired)
        marks.append(time.perf_counter())
        for phase, start, end in zip(PHASES, marks, marks[1:], strict=False):
            out[phase].append(end - start)
        out["whole"].append(marks[-1] - marks[0])
    return out


# ---------------------------------------------------------------- the end-to-end bench's jobs

EXAMPLE = ROOT / "examples" / "dist-cpu.yaml"


@dataclass(frozen=True)
class Scenario:
    name: str
    jobs: int
    servers: int
    workers: int
    timeout: float
    # The whole life: after Running, the Scheduler exits 0, and the bench waits for Succeeded
    # and for the clean-up (cleanPodPolicy Running: every pod but the Scheduler's removed).
    life: bool = False

    @property
    def pods(self) -> int:
        return self.jobs * (1 + self.servers + self.workers)


SCENARIOS = (
    Scenario("small 1/1/2", 1, 1, 2, 120),
    Scenario("typical 1/16/64", 1, 16, 64, 300, life=True),
    Scenario("20 small jobs 1/2/2", 20, 2, 2, 300),
    Scenario("large 1/100/1000", 1, 100, 1000, 1200, life=True),
    Scenario("life 1/100/1000", 1, 100, 1000, 1200, life=True),
)

QUICK = ("small 1/1/2", "typical 1/16/64")
# `--configmap`: the big job's whole life with MX_CONFIG inline (before the per-job ConfigMap)
# and as shipped, both under the shipped flags.
CONFIGMAP = ("life 1/100/1000",)


@dataclass(frozen=True)
class Setting:
    name: str
    flags: tuple[str, ...]
    # MX_CONFIG inline in every pod, as the previous release shipped it: a CompositeController
    # without the ConfigMap child type, and a hook with that release's 192 MiB body limit.
    inline: bool = False


def mxjob(name: str, scenario: Scenario) -> dict[str, Any]:
    """examples/dist-cpu.yaml with the scenario's replica counts."""
    job: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    job["metadata"]["name"] = name
    specs = job["spec"]["mxReplicaSpecs"]
    specs["Server"]["replicas"] = scenario.servers
    specs["Worker"]["replicas"] = scenario.workers
    return job
