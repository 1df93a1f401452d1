"""The golden cases of a job's start and phases: new jobs, jobs of earlier releases and
layouts, pods pending, running and done, and invalid specs, new or on a running job."""

import copy
from collections.abc import Callable
from datetime import datetime
from typing import Any

from app.core.model import kinds
from tests.support import jobs as s
from tests.support.golden_life import (
    CONFIG_MAPS,
    DONE,
    RUNNING,
    WORKER_1_KILLED,
    Case,
    case,
    every,
    life,
    none_of,
    replay,
    train_job,
    with_policy,
)
from tests.support.hooked import sync


@case
def first_answer() -> Case:
    """A job's first sync: the answer is its status alone (staged), so that Metacontroller
    writes it at once, before any child exists."""
    return life(first=True)


@case
def new_job() -> Case:
    return life()


@case
def inline_mx_config_running() -> Case:
    """Under a CompositeController that declares no ConfigMaps (the previous version's),
    each pod carries its whole MX_CONFIG, as before."""
    return life({}, every(RUNNING), child_types=())


@case
def upgraded_job_running() -> Case:
    """A job started by the previous version (every pod with its whole MX_CONFIG) synced
    once the controller declares ConfigMaps: every pod kept, the ConfigMap added."""
    req, _ = life({}, every(RUNNING), child_types=())
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
    parent = parent or train_job()
    at = s.NOW
    answer = released_0_1_0(sync(s.request(parent, others=none_of(CONFIG_MAPS)), at))
    for n, observed in enumerate(phases, start=1):
        at = s.later(30 * n)
        _, answer = s.step(parent, answer, observed, at, CONFIG_MAPS)
        answer = released_0_1_0(answer)
    return parent, answer, at


@case
def released_job_running() -> Case:
    """A job started by release 0.1.0 (its pods read the ConfigMap's keys `cluster` and
    `labels`) synced by this version: every pod and the ConfigMap kept as they are."""
    parent, answer, _ = _released_life({}, every(RUNNING))
    req, _ = s.step(parent, answer, every(RUNNING), s.later(90), CONFIG_MAPS)
    return req, s.later(90)


@case
def released_job_worker_replaced() -> Case:
    """A job started by release 0.1.0 whose worker was killed under this version: the job
    keeps that release's layout while its pods read `cluster` and `labels`, so the
    replacement is made as 0.1.0 made it (`envFrom` would import those keys as variables)."""
    parent, released, _ = _released_life({}, every(RUNNING), parent=with_policy({}))
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
    return life({})


@case
def all_running() -> Case:
    return life({}, every(RUNNING))


@case
def scheduler_succeeded() -> Case:
    finished = every(RUNNING) | every(DONE, "scheduler-0", "worker-0", "worker-1")
    return life({}, every(RUNNING), finished)


@case
def scheduler_succeeded_cleanup() -> Case:
    finished = every(RUNNING) | every(DONE, "scheduler-0", "worker-0", "worker-1")
    return life({}, every(RUNNING), finished, finished)


@case
def worker_failed_never() -> Case:
    failed = every(RUNNING) | {"mnist-worker-1": s.pod_status("Failed", exit_code=1)}
    return life({}, every(RUNNING), failed)


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
    req, answer, at = replay(train_job(), {}, every(RUNNING))
    for n, edit in enumerate(edits, start=1):
        edited = copy.deepcopy(req["parent"])
        edited["spec"] = train_job()["spec"]
        if edit:
            edit(edited["spec"])
        at = s.later(60 + 60 * n)
        req, answer = s.step(edited, answer, every(RUNNING), at, CONFIG_MAPS)
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
