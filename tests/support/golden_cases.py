"""The golden sync requests: a job's life as Metacontroller would show it to the hook.

`python -m tests.support.golden_cases` rewrites tests/golden/*.json from these cases; review the diff,
since the response files are the hook's expected answers."""

import copy
import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from app.core.model import kinds
from tests.support import REPO
from tests.support import jobs as s
from tests.support.hooked import sync

GOLDEN = REPO / "tests" / "golden"
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


# The child types the CompositeController declares besides pods and Services.
CONFIG_MAPS = (kinds.CONFIG_MAP_TYPE,)


def _run(
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
        req = s.request(parent | {"status": answer["status"]}, others=_none(child_types))
        answer = sync(req, at)
    for n, observed in enumerate(phases, start=1):
        at = s.later(30 * n)
        req, answer = s.step(parent, answer, observed, at, child_types)
    return req, answer, at


def _life(
    *phases: dict[str, dict[str, Any]],
    parent: dict[str, Any] | None = None,
    child_types: tuple[str, ...] = CONFIG_MAPS,
    first: bool = False,
) -> Case:
    req, _, at = _run(parent or _train(), *phases, child_types=child_types, first=first)
    return req, at


RUNNING = s.pod_status("Running")
DONE = s.pod_status("Succeeded", exit_code=0)
ALL = ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1")


def _all(status: dict[str, Any], *which: str) -> dict[str, dict[str, Any]]:
    return {f"mnist-{w}": status for w in which or ALL}


def _none(child_types: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    return {kind: [] for kind in child_types}


@case
def first_answer() -> Case:
    """A job's first sync: the answer is its status alone (staged), so that Metacontroller
    writes it at once, before any child exists."""
    return _life(first=True)


@case
def new_job() -> Case:
    return _life()


@case
def inline_mx_config_running() -> Case:
    """Under a CompositeController that declares no ConfigMaps (the previous version's),
    each pod carries its whole MX_CONFIG, as before."""
    return _life({}, _all(RUNNING), child_types=())


@case
def upgraded_job_running() -> Case:
    """A job started by the previous version (every pod with its whole MX_CONFIG) synced
    once the controller declares ConfigMaps: every pod kept, the ConfigMap added."""
    req, _ = _life({}, _all(RUNNING), child_types=())
    req["children"][kinds.CONFIG_MAP_TYPE] = {}
    return req, s.later(90)


LEGACY_KEY = {"MX_CONFIG_CLUSTER": "cluster", "MX_CONFIG_LABELS": "labels"}


def released_0_1_0(answer: dict[str, Any]) -> dict[str, Any]:
    """`answer` as release 0.1.0 gave it: the job's ConfigMap with the keys `cluster` and
    `labels` only, and every pod container reading them through `configMapKeyRef`, ahead of
    MX_CONFIG and every DMLC_* variable in its own env (that release's layout)."""
    out = copy.deepcopy(answer)
    data: dict[str, str] = {}
    for child in out["children"]:
        if child["kind"] == "ConfigMap":
            data = child["data"]
            child["data"] = {k: data.get(k, data.get(v)) for v, k in LEGACY_KEY.items()}
    for child in out["children"]:
        if child["kind"] != "Pod":
            continue
        for container in child["spec"]["containers"]:
            if "envFrom" not in container:  # already 0.1.0's form
                continue
            *theirs, ours = container.pop("envFrom")
            if theirs:
                container["envFrom"] = theirs
            config_map = ours["configMapRef"]["name"]
            # Our required key reference (template.REQUIRED_KEY) goes: 0.1.0's own two
            # key references held its pods back for a ConfigMap without them.
            _required, mx_config, role, *rest = container["env"]
            head = [
                {"name": v, "valueFrom": {"configMapKeyRef": {"name": config_map, "key": k}}}
                for v, k in LEGACY_KEY.items()
            ]
            job_wide = (
                "DMLC_PS_ROOT_URI",
                "DMLC_PS_ROOT_PORT",
                "DMLC_NUM_SERVER",
                "DMLC_NUM_WORKER",
            )
            dmlc = [{"name": n, "value": data[n]} for n in job_wide]
            kube = {"name": "DMLC_USE_KUBERNETES", "value": "1"}
            container["env"] = [*head, mx_config, *dmlc, role, kube, *rest]
    return out


def _released_life(
    *phases: dict[str, dict[str, Any]], parent: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any], datetime]:
    """A job's life under release 0.1.0 (its answers as `released_0_1_0` makes them): the
    last request, its answer as 0.1.0 gave it, and its time."""
    parent = parent or _train()
    at = s.NOW
    answer = released_0_1_0(sync(s.request(parent, others=_none(CONFIG_MAPS)), at))
    for n, observed in enumerate(phases, start=1):
        at = s.later(30 * n)
        _, answer = s.step(parent, answer, observed, at, CONFIG_MAPS)
        answer = released_0_1_0(answer)
    return parent, answer, at


@case
def released_job_running() -> Case:
    """A job started by release 0.1.0 (its pods read the ConfigMap's keys `cluster` and
    `labels`) synced by this version: every pod and the ConfigMap kept as they are."""
    parent, answer, _ = _released_life({}, _all(RUNNING))
    req, _ = s.step(parent, answer, _all(RUNNING), s.later(90), CONFIG_MAPS)
    return req, s.later(90)


@case
def released_job_worker_replaced() -> Case:
    """A job started by release 0.1.0 whose worker was killed under this version: the job
    keeps that release's layout while its pods read `cluster` and `labels`, so the
    replacement is made as 0.1.0 made it (`envFrom` would import those keys as variables)."""
    parent, released, _ = _released_life({}, _all(RUNNING), parent=_with({}))
    _, answer = s.step(parent, released, WORKER_1_KILLED, s.later(90), CONFIG_MAPS)
    replaced = WORKER_1_KILLED | {"mnist-worker-1-r1": RUNNING}
    req, _ = s.step(parent, _pods_kept(answer, released), replaced, s.later(120), CONFIG_MAPS)
    return req, s.later(120)


def _pods_kept(answer: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """`answer` with each pod that `before` already had as it was then: pods are never
    updated (OnDelete), so a pod 0.1.0 created keeps 0.1.0's env."""
    existing = {c["metadata"]["name"]: c for c in before["children"] if c["kind"] == "Pod"}
    children = [
        existing.get(c["metadata"]["name"], c) if c["kind"] == "Pod" else c
        for c in answer["children"]
    ]
    return answer | {"children": children}


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
    return s.request(s.mxjob(spec), others={kinds.CONFIG_MAP_TYPE: []}), s.NOW


def _bad_policy(spec: dict[str, Any]) -> None:
    spec["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"


def _nameless_env(spec: dict[str, Any]) -> None:
    spec["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = [{"value": "1"}]


def _edits(*edits: Callable[[dict[str, Any]], None] | None) -> Case:
    """A running job edited once a minute from its third sync on: each edit is applied to the
    spec as created (None keeps it), the previous answer's status fed back each time."""
    req, answer, at = _run(_train(), {}, _all(RUNNING))
    for n, edit in enumerate(edits, start=1):
        edited = copy.deepcopy(req["parent"])
        edited["spec"] = _train()["spec"]
        if edit:
            edit(edited["spec"])
        at = s.later(60 + 60 * n)
        req, answer = s.step(edited, answer, _all(RUNNING), at, CONFIG_MAPS)
    return req, at


@case
def invalid_spec_running_job() -> Case:
    """A bad edit of a running job: not terminal, its children kept exactly."""
    return _edits(_bad_policy)


@case
def invalid_spec_running_job_still_invalid() -> Case:
    """Edited again, still invalid: the condition names the new problem, same transition."""
    return _edits(_bad_policy, _nameless_env)


@case
def invalid_spec_running_job_fixed() -> Case:
    """The spec is valid again: the job goes on, nothing deleted, the condition gone."""
    return _edits(_bad_policy, _nameless_env, None)


@case
def invalid_spec_failed_by_earlier_version() -> Case:
    """Earlier versions failed a running job for good on a bad edit (Failed/MXJobInvalidSpec);
    with its spec valid again and its children still there, the job recovers."""
    req, at = _edits(None)
    invalid = "MXJob mnist has an invalid spec: spec.mxReplicaSpecs.Worker.restartPolicy: bad."
    stopped = {"status": "False", "reason": "MXJobInvalidSpec", "message": invalid}
    failed = {"type": "Failed", "status": "True", "reason": "MXJobInvalidSpec", "message": invalid}
    status = req["parent"]["status"]
    conds = {c["type"]: c for c in status["conditions"]}
    at_failure = {
        "lastUpdateTime": "2026-11-22T12:01:30Z",
        "lastTransitionTime": "2026-11-22T12:01:30Z",
    }
    status["conditions"] = [
        conds["Running"] | stopped | at_failure,
        conds["Created"],
        failed | at_failure,
    ]
    status["completionTime"] = "2026-11-22T12:01:30Z"
    status["replicaStatuses"] = {}
    return req, at


def _with(run_policy: dict[str, Any], policy: str = "ExitCode") -> dict[str, Any]:
    job = s.mxjob(s.train_spec(servers=2, workers=2, policy=policy))
    job["spec"]["runPolicy"] = run_policy
    return job


KILLED = s.pod_status("Failed", exit_code=137)
WORKER_1_KILLED = _all(RUNNING) | {"mnist-worker-1": KILLED}


@case
def worker_killed_restarting() -> Case:
    return _life({}, _all(RUNNING), WORKER_1_KILLED, parent=_with({}))


@case
def worker_replacement_running() -> Case:
    replaced = WORKER_1_KILLED | {"mnist-worker-1-r1": RUNNING}
    return _life({}, _all(RUNNING), WORKER_1_KILLED, replaced, replaced, parent=_with({}))


@case
def backoff_limit_exceeded() -> Case:
    again = WORKER_1_KILLED | {"mnist-worker-1-r1": KILLED}
    return _life({}, _all(RUNNING), WORKER_1_KILLED, again, parent=_with({"backoffLimit": 1}))


@case
def deadline_counting_down() -> Case:
    return _life({}, _all(RUNNING), parent=_with({"activeDeadlineSeconds": 100}))


@case
def deadline_exceeded() -> Case:
    job = _with({"activeDeadlineSeconds": 100})
    _req, answer, _ = _run(job, {}, _all(RUNNING), _all(RUNNING))
    return s.step(job, answer, _all(RUNNING), s.later(100), CONFIG_MAPS)[0], s.later(100)


@case
def deadline_exceeded_cleanup() -> Case:
    job = _with({"activeDeadlineSeconds": 100, "cleanPodPolicy": "None"})
    _, answer, _ = _run(job, {}, _all(RUNNING), _all(RUNNING))
    _, answer = s.step(job, answer, _all(RUNNING), s.later(100), CONFIG_MAPS)
    return s.step(job, answer, _all(RUNNING), s.later(101), CONFIG_MAPS)[0], s.later(101)


def _suspended() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    job = _with({})
    _, answer, _ = _run(job, {}, _all(RUNNING))
    stopped = copy.deepcopy(job)
    stopped["spec"]["runPolicy"]["suspend"] = True
    return job, stopped, s.step(stopped, answer, _all(RUNNING), s.later(90), CONFIG_MAPS)[1]


@case
def suspended() -> Case:
    job = _with({})
    _, answer, _ = _run(job, {}, _all(RUNNING))
    stopped = copy.deepcopy(job)
    stopped["spec"]["runPolicy"]["suspend"] = True
    return s.step(stopped, answer, _all(RUNNING), s.later(90), CONFIG_MAPS)[0], s.later(90)


@case
def resumed() -> Case:
    job, _, answer = _suspended()
    return s.request(job | {"status": answer["status"]}, others=_none(CONFIG_MAPS)), s.later(600)


def _succeeded(run_policy: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    job = _with(run_policy)
    finished = _all(RUNNING) | _all(DONE, "scheduler-0", "worker-0", "worker-1")
    _, answer, _ = _run(job, {}, _all(RUNNING), finished)
    return job, answer


@case
def ttl_waiting() -> Case:
    job, answer = _succeeded({"ttlSecondsAfterFinished": 600, "cleanPodPolicy": "None"})
    finished = _all(RUNNING) | _all(DONE, "scheduler-0", "worker-0", "worker-1")
    return s.step(job, answer, finished, s.later(120), CONFIG_MAPS)[0], s.later(120)


@case
def ttl_expired() -> Case:
    job, answer = _succeeded({"ttlSecondsAfterFinished": 600, "cleanPodPolicy": "None"})
    finished = _all(RUNNING) | _all(DONE, "scheduler-0", "worker-0", "worker-1")
    return s.step(job, answer, finished, s.later(90 + 600), CONFIG_MAPS)[0], s.later(90 + 600)


def _tune() -> dict[str, Any]:
    tracker = s.replica(1)
    server = s.replica(2) | {"label": "2080ti"}
    tuner = s.replica(1, metadata={"annotations": {"tuner-server-key": "2080ti"}})
    spec = {
        "jobMode": "MXTune",
        "mxReplicaSpecs": {"TunerTracker": tracker, "TunerServer": server, "Tuner": tuner},
    }
    return s.mxjob(spec, "auto-tuning")


TUNE = ("tunertracker-0", "tunerserver-0", "tunerserver-1", "tuner-0")


@case
def tune_job_running() -> Case:
    running = {f"auto-tuning-{p}": RUNNING for p in TUNE}
    return _life({}, running, parent=_tune())


@case
def tune_job_succeeded() -> Case:
    running = {f"auto-tuning-{p}": RUNNING for p in TUNE}
    return _life({}, running, running | {"auto-tuning-tuner-0": DONE}, parent=_tune())


@case
def byteps_new_job() -> Case:
    spec = s.train_spec(servers=1, workers=2)
    for rtype, replica in spec["mxReplicaSpecs"].items():
        mxnet = replica["template"]["spec"]["containers"][0]
        mxnet["image"] = "bytepsimage/mxnet"
        mxnet["command"] = ["bpslaunch"]
        if rtype == "Worker":
            mxnet["args"] = ["python3", "/usr/local/byteps/example/mxnet/train_imagenet_byteps.py"]
            mxnet["resources"] = {"limits": {"nvidia.com/gpu": 8}}
    return _life(parent=s.mxjob(spec, "byteps-mxnet-job"))


@case
def single_worker_succeeded() -> Case:
    job = s.mxjob({"mxReplicaSpecs": {"Worker": s.replica(1)}}, "mnist")
    return _life({}, {"mnist-worker-0": RUNNING}, {"mnist-worker-0": DONE}, parent=job)


@case
def legacy_v1_new_job() -> Case:
    spec = {
        "jobMode": "MXTrain",
        "cleanPodPolicy": "All",
        "backoffLimit": 3,
        "mxReplicaSpecs": {
            "scheduler": s.replica(1, "Never"),
            "server": s.replica(1, "Never"),
            "worker": s.replica(1, "Never"),
        },
    }
    return _life(parent=s.mxjob(spec, "mxnet-job"))


def _gang() -> dict[str, Any]:
    return _with(
        {
            "schedulingPolicy": {
                "minAvailable": 3,
                "queue": "research",
                "priorityClass": "high",
                "minResources": {"cpu": "3", "memory": "6Gi"},
                "scheduleTimeoutSeconds": 120,
            }
        },
        "Never",
    )


@case
def volcano_new_job() -> Case:
    return _life(parent=_gang(), child_types=(VOLCANO, *CONFIG_MAPS))


@case
def volcano_running() -> Case:
    return _life({}, _all(RUNNING), parent=_gang(), child_types=(VOLCANO, *CONFIG_MAPS))


@case
def scheduler_plugins_new_job() -> Case:
    return _life(parent=_gang(), child_types=(PLUGINS, *CONFIG_MAPS))


REPLICA_SERVICES = "training.kubeflow.org/replica-services"


def _annotated(job: dict[str, Any], value: str) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["metadata"]["annotations"] = {REPLICA_SERVICES: value}
    return job


@case
def replica_services_scheduler_running() -> Case:
    return _life({}, _all(RUNNING), parent=_annotated(_train(), "scheduler"))


def _switched(*values: str) -> Case:
    """A running job whose replica-services annotation is set to each value in turn, once a
    minute from its third sync on, each answer's children observed by the next sync."""
    req, answer, at = _run(_train(), {}, _all(RUNNING))
    for n, value in enumerate(values, start=1):
        at = s.later(60 + 60 * n)
        req, answer = s.step(_annotated(_train(), value), answer, _all(RUNNING), at, CONFIG_MAPS)
    return req, at


@case
def replica_services_switched_to_scheduler() -> Case:
    return _switched("scheduler")


@case
def replica_services_switched_back_to_all() -> Case:
    return _switched("scheduler", "all")


@case
def replica_services_invalid_value() -> Case:
    return _switched("none")


VOLCANO = "PodGroup.scheduling.volcano.sh/v1beta1"
PLUGINS = "PodGroup.scheduling.x-k8s.io/v1alpha1"


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
