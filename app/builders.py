"""Desired children: one pod and one headless Service per replica index."""

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import orjson

from app import names
from app.gang import GangScheduler, join
from app.spec import MXJobSpec, ReplicaSpec, ReplicaType, RestartPolicy

PORT_NAME = "mxjob-port"
DEFAULT_PORT = 9091
TUNER_SERVER_KEY = "tuner-server-key"
CONTROLLER_UID = "controller-uid"
# MX_CONFIG's shared parts, O(replicas) each: the variables that carry them into every
# container, ahead of the MX_CONFIG that refers to them, and the ConfigMap keys release
# 0.1.0 stored them under (its pods read those keys through configMapKeyRef).
SHARED_PARTS = (("MX_CONFIG_CLUSTER", "cluster"), ("MX_CONFIG_LABELS", "labels"))
LEGACY_KEYS = tuple(key for _, key in SHARED_PARTS)
# The variables every container of a job reads with the same value. The job's ConfigMap
# holds exactly these keys, and a container imports them all through one `envFrom`; a
# pod's own `env` carries only one of them read by name (REQUIRED_KEY, below), MX_CONFIG's
# short text, DMLC_ROLE and DMLC_WORKER_ID.
JOB_ENV = (
    *(variable for variable, _ in SHARED_PARTS),
    "DMLC_PS_ROOT_URI",
    "DMLC_PS_ROOT_PORT",
    "DMLC_NUM_SERVER",
    "DMLC_NUM_WORKER",
    "DMLC_USE_KUBERNETES",
)
# The one key of the job's ConfigMap each container also reads by name, through a
# `configMapKeyRef` that is not optional: `envFrom` requires no key, so a ConfigMap of the
# job's name that is not the job's (docs/security.md) would start every process without the
# job's variables; this reference keeps its pods in CreateContainerConfigError instead, as
# release 0.1.0's did, until that ConfigMap goes and the job's own is written. The entry
# costs its variable's name five times a container in each sync request (name and key, in
# the pod and its last-applied copy, and managedFields' `k:{"name":...}`), so the shortest
# name that only this operator writes: DMLC_NUM_WORKER would cost 5 bytes less, but a
# ConfigMap someone wrote by hand for DMLC processes holds it; MX_CONFIG_CLUSTER costs 5 more.
# It reads the value `envFrom` gives it, and an `env` entry wins over `envFrom`: no process
# sees a difference. It comes first, so every entry after it expands it the same either way.
REQUIRED_KEY = "MX_CONFIG_LABELS"
RESERVED_ENV = (
    *(variable for variable, _ in SHARED_PARTS),
    "MX_CONFIG",
    "DMLC_PS_ROOT_URI",
    "DMLC_PS_ROOT_PORT",
    "DMLC_NUM_SERVER",
    "DMLC_NUM_WORKER",
    "DMLC_ROLE",
    "DMLC_USE_KUBERNETES",
    "DMLC_WORKER_ID",
)
_RESERVED = frozenset(RESERVED_ENV)


@dataclass(frozen=True)
class ReplicaTypeContext:
    """What every pod and Service of one replica type shares, worked out once per sync: a
    job of 1,000 workers builds 1,000 pods from it, each adding only its own index."""

    rtype: ReplicaType
    # MX_CONFIG before and after the pod's replica index.
    mx_config: tuple[str, str]
    # DMLC_ROLE, and DMLC_USE_KUBERNETES where no ConfigMap carries it.
    role_env: tuple[dict[str, str], ...]
    # Template labels with ours; the replica index and attempt are filled in per pod.
    labels: dict[str, str]
    annotations: dict[str, str]
    # The template's pod spec with ours; containers are filled in per pod.
    spec: dict[str, Any]
    # Each container with our ports and `envFrom`, and the template's own variables that it
    # keeps.
    containers: tuple[tuple[dict[str, Any], list[Any]], ...]
    # Every Service of the type holds this one list: answers are serialized, never changed.
    service_ports: list[dict[str, Any]]
    # Names of the type's children, up to the replica index: `<job>-<type>-`.
    name_prefix: str
    # A Service's labels and selector; the replica index is filled in per Service.
    selector: dict[str, str]


@dataclass(frozen=True)
class JobContext:
    """What every child of one job shares, worked out once per sync."""

    name: str
    namespace: str | None
    spec: MXJobSpec
    # The cluster and labels maps as compact JSON with sorted keys, as MX_CONFIG has them,
    # keyed by the variables that carry them.
    shared: dict[str, str]
    # Our variables ahead of each container's own, up to MX_CONFIG: with `envFrom`, the
    # one required key reference (REQUIRED_KEY).
    head_env: tuple[dict[str, Any], ...]
    # The job-wide DMLC_* variables written into each pod's env: none with `envFrom`.
    dmlc_env: tuple[dict[str, str], ...]
    by_type: Mapping[ReplicaType, ReplicaTypeContext]
    gang: GangScheduler | None = None
    # True when the controller declares ConfigMap children: MX_CONFIG's shared parts and
    # the job-wide variables then live in the job's ConfigMap, and each pod carries only its
    # own few bytes.
    config_map: bool = False
    # True while an observed pod, created by release 0.1.0, reads the ConfigMap's keys
    # `cluster` and `labels`: the job keeps that release's layout (those two keys, and new
    # pods that read them key by key with every DMLC_* variable in their env), since an
    # `envFrom` of the same ConfigMap would import the two keys as variables too.
    legacy_keys: bool = False
    # Whether the ConfigMap holds the variables under their own names: always but in the
    # layout above, and there too while an observed pod takes them in through `envFrom`.
    named_keys: bool = True


@dataclass(frozen=True)
class Readers:
    """How the job's observed pods read its ConfigMap (`readers` finds out)."""

    # By release 0.1.0's keys `cluster` and `labels` (`configMapKeyRef`).
    old_keys: bool = False
    # Whole, through `envFrom`, as this version makes them.
    env_from: bool = False
    # Not at all: MX_CONFIG whole in their own env, made under a CompositeController that
    # declared no ConfigMaps.
    inline: bool = False


class Layout(Enum):
    """Where a job's pods find MX_CONFIG's shared parts, which decides how large its sync
    requests grow (the size rule, app/validation.py)."""

    # In the job's ConfigMap, through `envFrom`: a pod is O(1).
    CONFIG_MAP = "ConfigMap"
    # In the job's ConfigMap under release 0.1.0's keys, read key by key, with every DMLC_*
    # variable in the pod's own env: a pod is O(1).
    RELEASE_0_1_0 = "release 0.1.0"
    # Whole in every container's env: a pod is O(replicas), a sync request O(replicas^2).
    INLINE = "inline"


def layout(config_map: bool, observed: Readers) -> Layout:
    """The layout whose requests the size rule must bound: inline without ConfigMap children
    or while an observed pod carries MX_CONFIG whole (its env never changes), release
    0.1.0's while a pod reads its keys."""
    if not config_map or observed.inline:
        return Layout.INLINE
    return Layout.RELEASE_0_1_0 if observed.old_keys else Layout.CONFIG_MAP


def job_context(
    name: str,
    namespace: str | None,
    spec: MXJobSpec,
    scheduler: GangScheduler | None = None,
    config_map: bool = False,
    observed: Readers = Readers(),
) -> JobContext:
    """What every child of the job shares. `config_map`: the controller declares ConfigMap
    children; `observed`: how the job's observed pods read the ConfigMap."""
    legacy = config_map and observed.old_keys
    shared = _shared_parts(name, spec)
    # MX_CONFIG's shared parts as each pod's text has them: `$(VAR)` references the kubelet
    # replaces with them (a value it substitutes is not expanded again), or themselves with
    # every `$` doubled, since the kubelet expands the text (`$$` to `$`, `$(NAME)` to a
    # variable) and a label holds the user's text. Either way the process reads the same bytes.
    parts = {
        key: f"$({variable})" if config_map else kubelet_literal(shared[variable])
        for variable, key in SHARED_PARTS
    }
    # One `envFrom` of the job's ConfigMap, after the template's own sources (among
    # `envFrom` sources a later one wins, so none of the user's overrides ours).
    env_from = (
        {"configMapRef": {"name": config_map_name(name)}} if config_map and not legacy else None
    )
    by_type = {
        t: _type_context(name, t, r, parts, env_from) for t, r in spec.mxReplicaSpecs.items()
    }
    head_env = _shared_env(name) if legacy else _required_env(name) if env_from else ()
    dmlc_env = () if env_from else _dmlc_env(name, spec)
    return JobContext(
        name,
        namespace,
        spec,
        shared,
        head_env,
        dmlc_env,
        by_type,
        scheduler,
        config_map,
        legacy_keys=legacy,
        named_keys=not legacy or observed.env_from,
    )


def kubelet_literal(text: str) -> str:
    """`text` as an env `value` that the kubelet's `$(VAR)` expansion turns into `text`
    itself: every `$` doubled (`$$` expands to `$`, and nothing else does)."""
    return text.replace("$", "$$")


def readers(pods: Iterable[Any], name: str) -> Readers:
    """How these observed pods read the job's ConfigMap, in any order. Pods are never
    updated (OnDelete), so a pod keeps its env for life, and a container that restarts in it
    must still find what it reads."""
    wanted = config_map_name(name)
    old_keys = env_from = inline = False
    # Every container of every observed pod on every sync: one flat loop, no call per
    # container where its `envFrom` names no ConfigMap of the job's.
    for pod in pods:
        spec = pod.get("spec") if isinstance(pod, dict) else None
        containers = spec.get("containers") if isinstance(spec, dict) else None
        for container in containers if isinstance(containers, list) else ():
            if not isinstance(container, dict):
                continue
            # A container of this version's layout has no key reference to look for: its
            # `envFrom` is a list of one or two, its `env` would be a scan.
            sources = container.get("envFrom")
            for source in sources if isinstance(sources, list) else ():
                ref = source.get("configMapRef") if isinstance(source, dict) else None
                if isinstance(ref, dict) and ref.get("name") == wanted:
                    env_from = True
                    break
            else:
                if not old_keys:
                    old_keys = _reads_old_keys(container.get("env"), wanted)
                if not inline:
                    inline = _carries_whole_mx_config(container.get("env"))
    return Readers(old_keys, env_from, inline)


def _carries_whole_mx_config(env: Any) -> bool:
    """Whether MX_CONFIG's text holds the cluster itself, not a reference to it."""
    for var in env if isinstance(env, list) else ():
        if isinstance(var, dict) and var.get("name") == "MX_CONFIG":
            value = var.get("value")
            return isinstance(value, str) and value.startswith('{"cluster":{')
    return False


def _reads_old_keys(env: Any, config_map: str) -> bool:
    for var in env if isinstance(env, list) else ():
        source = var.get("valueFrom") if isinstance(var, dict) else None
        ref = source.get("configMapKeyRef") if isinstance(source, dict) else None
        if isinstance(ref, dict) and ref.get("name") == config_map:
            return ref.get("key") in LEGACY_KEYS
    return False


def _type_context(
    name: str,
    rtype: ReplicaType,
    replica: ReplicaSpec,
    parts: dict[str, str],
    env_from: dict[str, Any] | None,
) -> ReplicaTypeContext:
    template = replica.template
    meta = template.get("metadata") or {}
    # Placeholders keep each key where the per-pod value will go, so the order is the same.
    ours = names.selector(name, rtype, 0) | {names.LABEL_INDEX: ""}
    if rtype is ReplicaType.SERVER:
        ours[names.LABEL_ROLE] = "master"
    ours[names.LABEL_ATTEMPT] = ""
    containers = tuple(_container_base(c, env_from) for c in template["spec"]["containers"])
    main = next(c for c, _ in containers if c.get("name") == names.MAIN_CONTAINER)
    role: tuple[dict[str, str], ...] = ({"name": "DMLC_ROLE", "value": rtype.lowered},)
    if env_from is None:
        role += ({"name": "DMLC_USE_KUBERNETES", "value": "1"},)
    return ReplicaTypeContext(
        rtype=rtype,
        mx_config=mx_config_around_index(parts["cluster"], parts["labels"], rtype.lowered),
        role_env=role,
        labels=_template_labels(meta) | ours,
        # The restart count is the operator's bookkeeping: a template must not preset it.
        annotations={
            k: v
            for k, v in (meta.get("annotations") or {}).items()
            if k != names.ANNOTATION_RESTARTS
        },
        spec=template["spec"]
        | {"restartPolicy": _pod_restart_policy(replica.restartPolicy), "containers": []},
        containers=containers,
        service_ports=[service_port(p) for p in main["ports"]],
        name_prefix=names.child_name(name, rtype, 0)[:-1],
        selector=names.selector(name, rtype, 0),
    )


def _template_labels(meta: dict[str, Any]) -> dict[str, str]:
    # Metacontroller adds `controller-uid: <parent uid>` itself and refuses a desired child
    # whose value differs, so a template must not set it.
    labels: dict[str, str] = meta.get("labels") or {}
    return {k: v for k, v in labels.items() if k != CONTROLLER_UID}


def main_port(replica: ReplicaSpec) -> int:
    """The replica's mxjob-port: the one its mxnet container declares, or 9091."""
    for port in main_container(replica.template).get("ports") or []:
        if port.get("name") == PORT_NAME:
            number: int = port["containerPort"]
            return number
    return DEFAULT_PORT


def tuner_label(replica: ReplicaSpec) -> str:
    annotations = (replica.template.get("metadata") or {}).get("annotations") or {}
    label = annotations.get(TUNER_SERVER_KEY, replica.label or "")
    return str(label)


def main_container(template: dict[str, Any]) -> dict[str, Any]:
    """The template's mxnet container."""
    containers: list[dict[str, Any]] = template["spec"]["containers"]
    return next(c for c in containers if c.get("name") == names.MAIN_CONTAINER)


# What `json.dumps(value, sort_keys=True, separators=(",", ":"))` writes, without making an
# encoder on every call (a few microseconds each, several times a sync).
_COMPACT = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def _compact(value: Any) -> str:
    return _COMPACT.encode(value)


def _shared_parts(name: str, spec: MXJobSpec) -> dict[str, str]:
    """MX_CONFIG's `cluster` and `labels` values as JSON text, keyed by the variables that
    carry them."""
    cluster = {
        t.lowered: [{"port": port, "url": names.child_name(name, t, i)} for i in range(r.replicas)]
        for t, r in spec.mxReplicaSpecs.items()
        for port in (main_port(r),)
    }
    labels = {t.lowered: tuner_label(r) for t, r in spec.mxReplicaSpecs.items()}
    return {"MX_CONFIG_CLUSTER": _compact(cluster), "MX_CONFIG_LABELS": _compact(labels)}


# Where a pod's replica index goes in MX_CONFIG's text (`mx_config_around_index`).
_INDEX = "\x00"


def mx_config_around_index(cluster: str, labels: str, kind: str) -> tuple[str, str]:
    """MX_CONFIG for a replica type, in two pieces that each pod joins around its index: the
    JSON object `{"cluster": ..., "labels": ..., "task": {"index": <index>, "type": kind}}`,
    compact, keys sorted, with `cluster` and `labels` the JSON text given (or the `$(VAR)`
    references that stand for it). Written once per type by the JSON library, so a pod's
    MX_CONFIG costs a join."""
    text = orjson.dumps(
        {
            "cluster": orjson.Fragment(cluster),
            "labels": orjson.Fragment(labels),
            "task": {"index": orjson.Fragment(_INDEX), "type": kind},
        },
        option=orjson.OPT_SORT_KEYS,
    ).decode()
    before, after = text.split(_INDEX)
    return before, after


def mx_config_bytes(name: str, spec: MXJobSpec) -> int:
    """The length of the longest MX_CONFIG the job's processes read, worked out from the
    counts alone (a job of any size costs the same): what `_shared_parts` and
    `mx_config_around_index` write, character for character."""
    cluster = 1 + max(len(spec.mxReplicaSpecs) - 1, 0)  # its `{`, and commas between types
    task = 0
    for rtype, replica in spec.mxReplicaSpecs.items():
        n, kind = replica.replicas, rtype.lowered
        cluster += _cluster_length(name, rtype, replica)
        if n:
            task = max(task, len(f'"task":{{"index":,"type":"{kind}"}}}}') + len(str(n - 1)))
    labels = labels_text(spec)
    return len('{"cluster":}') + cluster + len(',"labels":,') + len(labels) + task


def labels_text(spec: MXJobSpec) -> str:
    """MX_CONFIG's `labels` map as the process reads it."""
    return _compact({t.lowered: tuner_label(r) for t, r in spec.mxReplicaSpecs.items()})


def cluster_text_counts(name: str, spec: MXJobSpec) -> tuple[int, int, int, int]:
    """MX_CONFIG's `cluster` map as (characters, `"`, `{`/`[`, `,`), from the counts alone
    as `mx_config_bytes` works it out: no name or port needs escaping in JSON or for the
    kubelet."""
    between = max(len(spec.mxReplicaSpecs) - 1, 0)  # commas between types
    length, quotes, brackets, commas = 2 + between, 0, 1, between
    for rtype, replica in spec.mxReplicaSpecs.items():
        n = replica.replicas
        length += _cluster_length(name, rtype, replica)
        quotes += 2 + 6 * n
        brackets += 1 + n
        commas += n + max(n - 1, 0)
    return length, quotes, brackets, commas


def _cluster_length(name: str, rtype: ReplicaType, replica: ReplicaSpec) -> int:
    """The characters of one replica type's `"<type>":[...]` in MX_CONFIG's `cluster`."""
    n, kind = replica.replicas, rtype.lowered
    entry = len('{"port":,"url":"--"}') + len(str(main_port(replica))) + len(name) + len(kind)
    return len(f'"{kind}":[]') + n * entry + _digits(n) + max(n - 1, 0)


def _digits(n: int) -> int:
    """How many digits the indices 0 to n-1 have in all."""
    total, low = 0, 0
    for width in range(1, len(str(n)) + 1):
        high = 10**width
        total += width * max(min(n, high) - low, 0)
        low = high
    return total


def config_map_name(job: str) -> str:
    return f"{job}-mx-config"


def _shared_env(name: str) -> tuple[dict[str, Any], ...]:
    """MX_CONFIG's shared parts read key by key, as release 0.1.0 wrote them."""
    return tuple(
        {
            "name": variable,
            "valueFrom": {"configMapKeyRef": {"name": config_map_name(name), "key": key}},
        }
        for variable, key in SHARED_PARTS
    )


def _required_env(name: str) -> tuple[dict[str, Any], ...]:
    """REQUIRED_KEY read by name, so that a ConfigMap without it holds the pod back."""
    ref = {"name": config_map_name(name), "key": REQUIRED_KEY}
    return ({"name": REQUIRED_KEY, "valueFrom": {"configMapKeyRef": ref}},)


def config_map(job: JobContext) -> dict[str, Any]:
    """The job's ConfigMap: the variables every container of the job reads with the same
    value (MX_CONFIG's shared parts and the job-wide DMLC_* ones), stored once and keyed by
    their names; in release 0.1.0's layout, MX_CONFIG's shared parts as `cluster` and
    `labels` (see `JobContext.legacy_keys`)."""
    labels = {names.LABEL_OPERATOR: names.OPERATOR_NAME, names.LABEL_JOB: job.name}
    meta = _metadata(job, config_map_name(job.name), labels, {})
    data: dict[str, str] = {}
    if job.named_keys:
        data |= job.shared | {e["name"]: e["value"] for e in _dmlc_env(job.name, job.spec)}
        data["DMLC_USE_KUBERNETES"] = "1"
    if job.legacy_keys:
        data |= {key: job.shared[variable] for variable, key in SHARED_PARTS}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def own_env(name: str, spec: MXJobSpec, config_map: bool) -> tuple[dict[str, Any], ...]:
    """What a container of release 0.1.0's layout (`config_map`) or of the inline one
    carries in its env beyond this version's ConfigMap layout, besides MX_CONFIG's text: the
    job-wide variables, and 0.1.0's `cluster` key reference (its `labels` one is no longer
    than this version's one, REQUIRED_KEY's)."""
    job_wide = (*_dmlc_env(name, spec), {"name": "DMLC_USE_KUBERNETES", "value": "1"})
    return (_shared_env(name)[0], *job_wide) if config_map else job_wide


def _dmlc_env(name: str, spec: MXJobSpec) -> tuple[dict[str, str], ...]:
    scheduler = spec.mxReplicaSpecs.get(ReplicaType.SCHEDULER)
    root = names.child_name(name, ReplicaType.SCHEDULER, 0) if scheduler else ""
    return (
        {"name": "DMLC_PS_ROOT_URI", "value": root},
        {"name": "DMLC_PS_ROOT_PORT", "value": str(main_port(scheduler) if scheduler else 0)},
        {"name": "DMLC_NUM_SERVER", "value": str(spec.replicas(ReplicaType.SERVER))},
        {"name": "DMLC_NUM_WORKER", "value": str(spec.replicas(ReplicaType.WORKER))},
    )


def _env(job: JobContext, kind: ReplicaTypeContext, index: str) -> list[dict[str, Any]]:
    """Our variables, ahead of the container's own (which may refer to them). `index`: the
    replica index as written."""
    before, after = kind.mx_config
    env: list[dict[str, Any]] = [
        *job.head_env,
        {"name": "MX_CONFIG", "value": before + index + after},
        *job.dmlc_env,
        *kind.role_env,
    ]
    if kind.rtype is ReplicaType.WORKER:
        env.append({"name": "DMLC_WORKER_ID", "value": index})
    return env


def _container_base(
    container: dict[str, Any], env_from: dict[str, Any] | None
) -> tuple[dict[str, Any], list[Any]]:
    """A container with our port, our `envFrom` source after its own, and an empty `env`
    where ours go, and the template's variables that follow ours."""
    # A reserved name from the template goes even where we set none (DMLC_WORKER_ID off
    # the workers): only the operator says what those variables are. So no explicit `env`
    # of the user's overrides the variables our `envFrom` brings (`env` beats `envFrom`).
    theirs = [e for e in container.get("env") or [] if e.get("name") not in _RESERVED]
    out = container | {"env": []}
    if env_from is not None:
        out["envFrom"] = [*(container.get("envFrom") or []), env_from]
    if container.get("name") == names.MAIN_CONTAINER:
        ports = container.get("ports") or []
        if not any(p.get("name") == PORT_NAME for p in ports):
            out["ports"] = [*ports, {"name": PORT_NAME, "containerPort": DEFAULT_PORT}]
    return out, theirs


def _pod_restart_policy(policy: RestartPolicy) -> str:
    # ExitCode is ours to enforce by replacing pods; the kubelet must leave them failed.
    return "Never" if policy is RestartPolicy.EXIT_CODE else policy.value


def _metadata(
    job: JobContext, name: str, labels: dict[str, str], annotations: dict[str, str]
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if job.namespace:
        meta["namespace"] = job.namespace
    meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return meta


def _recorded(attempt: int, restarts_before: int) -> dict[str, str]:
    if attempt == 0 and restarts_before == 0:
        return {}
    return {names.LABEL_ATTEMPT: str(attempt), names.ANNOTATION_RESTARTS: str(restarts_before)}


def pod(
    job: JobContext, rtype: ReplicaType, index: int, attempt: int, restarts_before: int
) -> dict[str, Any]:
    """The pod for one attempt of one replica: the template plus what the contract adds.
    It shares the template's objects with the request and its siblings (answers are only
    serialized); what differs from pod to pod is made fresh."""
    of_type = job.by_type[rtype]
    labels = of_type.labels.copy()
    labels[names.LABEL_INDEX] = written = str(index)
    labels[names.LABEL_ATTEMPT] = str(attempt)
    annotations = of_type.annotations.copy()
    if restarts_before:
        annotations[names.ANNOTATION_RESTARTS] = str(restarts_before)
    env = _env(job, of_type, written)
    containers = []
    for base, theirs in of_type.containers:
        container = base.copy()
        container["env"] = env + theirs
        containers.append(container)
    prefix = of_type.name_prefix
    name = f"{prefix}{written}" if attempt == 0 else f"{prefix}{written}-r{attempt}"
    spec = of_type.spec.copy()
    spec["containers"] = containers
    built = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(job, name, labels, annotations),
        "spec": spec,
    }
    if job.gang:
        join(job.gang, built, job.name)
    return built


def service(
    job: JobContext, rtype: ReplicaType, index: int, attempt: int, restarts_before: int
) -> dict[str, Any]:
    """The headless Service that gives a replica its stable DNS name across attempts."""
    of_type = job.by_type[rtype]
    labels = of_type.selector.copy()
    labels[names.LABEL_INDEX] = written = str(index)
    meta = _metadata(
        job, of_type.name_prefix + written, labels, _recorded(attempt, restarts_before)
    )
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"clusterIP": "None", "selector": labels.copy(), "ports": of_type.service_ports},
    }


def service_port(port: dict[str, Any]) -> dict[str, Any]:
    """The Service's port for a port of the mxnet container."""
    number = port["containerPort"]
    out = {"name": port.get("name") or f"port-{number}", "port": number, "targetPort": number}
    if port.get("protocol"):
        out["protocol"] = port["protocol"]
    return out
