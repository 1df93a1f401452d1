"""Desired children: one pod and one headless Service per replica index."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.core.model import kinds
from app.core.model.spec import MXJobSpec, ReplicaSpec, ReplicaType, RestartPolicy
from app.core.mxnet import names
from app.core.mxnet.layout import NO_PODS, ConfigMapUse, NewPods, new_pods
from app.core.mxnet.mxconfig import (
    DEFAULT_PORT,
    PORT_NAME,
    REQUIRED_KEY,
    RESERVED_ENV,
    SHARED_PARTS,
    config_map_name,
    dmlc_env,
    kubelet_literal,
    legacy_key_env,
    mx_config_around_index,
    service_port,
    shared_parts,
)

CONTROLLER_UID = "controller-uid"
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
    # How the pods read the job's ConfigMap, if it has one: MX_CONFIG's shared parts and the
    # job-wide variables then live there, and each pod carries only its own few bytes.
    reads: NewPods
    # Which replicas get a headless Service: each one, or the Scheduler only.
    services: names.ReplicaServices = names.ReplicaServices.ALL
    # What the integrations that contributed to the sync add to every pod as it is built
    # (app/core/model/seam.py, `Contribution.fit_pod`).
    fits: tuple[Callable[[dict[str, Any]], None], ...] = ()

    def has_service(self, rtype: ReplicaType) -> bool:
        """Whether the replicas of this type get a Service (`services`)."""
        return self.services is names.ReplicaServices.ALL or rtype is ReplicaType.SCHEDULER


def job_context(
    name: str,
    namespace: str | None,
    spec: MXJobSpec,
    config_map: bool = False,
    observed: ConfigMapUse = NO_PODS,
    services: names.ReplicaServices = names.ReplicaServices.ALL,
) -> JobContext:
    """What every child of the job shares. `config_map`: the controller declares ConfigMap
    children; `observed`: how the job's observed pods read the ConfigMap; `services`: which
    replicas get a Service."""
    reads = new_pods(config_map, observed)
    shared = shared_parts(name, spec)
    # MX_CONFIG's shared parts as each pod's text has them: `$(VAR)` references, or the text
    # with every `$` doubled; the kubelet's expansion gives the process the same bytes either
    # way (docs/behaviour.md#user-text-and-the-kubelets-var-expansion).
    parts = {
        key: f"$({variable})" if config_map else kubelet_literal(shared[variable])
        for variable, key in SHARED_PARTS
    }
    # One `envFrom` of the job's ConfigMap, after the template's own sources (among
    # `envFrom` sources a later one wins, so none of the user's overrides ours).
    env_from = {"configMapRef": {"name": config_map_name(name)}} if reads.env_from else None
    by_type = {
        t: _type_context(name, t, r, parts, env_from) for t, r in spec.mxReplicaSpecs.items()
    }
    head_env = (
        legacy_key_env(name) if reads.legacy_keys else _required_env(name) if env_from else ()
    )
    dmlc = () if env_from else dmlc_env(name, spec)
    return JobContext(
        name,
        namespace,
        spec,
        shared,
        head_env,
        dmlc,
        by_type,
        reads,
        services=services,
    )


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


def _required_env(name: str) -> tuple[dict[str, Any], ...]:
    """REQUIRED_KEY read by name, so that a ConfigMap without it holds the pod back."""
    ref = {"name": config_map_name(name), "key": REQUIRED_KEY}
    return ({"name": REQUIRED_KEY, "valueFrom": {"configMapKeyRef": ref}},)


def config_map(job: JobContext) -> dict[str, Any]:
    """The job's ConfigMap: the variables every container of the job reads with the same
    value, once, keyed by their names; in release 0.1.0's layout, MX_CONFIG's shared parts
    under that release's keys (`NewPods.legacy_keys`)."""
    meta = names.metadata(config_map_name(job.name), job.namespace, names.job_labels(job.name), {})
    data: dict[str, str] = {}
    if job.reads.named_keys:
        data |= job.shared | {e["name"]: e["value"] for e in dmlc_env(job.name, job.spec)}
        data["DMLC_USE_KUBERNETES"] = "1"
    if job.reads.legacy_keys:
        data |= {key: job.shared[variable] for variable, key in SHARED_PARTS}
    return kinds.header(kinds.CONFIG_MAP) | {"metadata": meta, "data": data}


def _env(job: JobContext, of_type: ReplicaTypeContext, index: str) -> list[dict[str, Any]]:
    """Our variables, ahead of the container's own (which may refer to them). `index`: the
    replica index as written."""
    before, after = of_type.mx_config
    env: list[dict[str, Any]] = [
        *job.head_env,
        {"name": "MX_CONFIG", "value": before + index + after},
        *job.dmlc_env,
        *of_type.role_env,
    ]
    if of_type.rtype is ReplicaType.WORKER:
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


def _recorded(attempt: int, restarts_before: int) -> dict[str, str]:
    if attempt == 0 and restarts_before == 0:
        return {}
    return {names.LABEL_ATTEMPT: str(attempt), names.ANNOTATION_RESTARTS: str(restarts_before)}


def pod(
    job: JobContext, rtype: ReplicaType, index: int, attempt: int, restarts_before: int
) -> dict[str, Any]:
    """The pod for one attempt of one replica: the template plus what docs/behaviour.md#children
    adds. It shares the template's objects with the request and its siblings (answers are
    only serialized); what differs from pod to pod is made fresh."""
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
    name = names.attempt_name(of_type.name_prefix + written, attempt)
    spec = of_type.spec.copy()
    spec["containers"] = containers
    built = kinds.header(kinds.POD) | {
        "metadata": names.metadata(name, job.namespace, labels, annotations),
        "spec": spec,
    }
    for fit in job.fits:
        fit(built)
    return built


def service(
    job: JobContext, rtype: ReplicaType, index: int, attempt: int, restarts_before: int
) -> dict[str, Any]:
    """The headless Service that gives a replica its stable DNS name across attempts."""
    of_type = job.by_type[rtype]
    labels = of_type.selector.copy()
    labels[names.LABEL_INDEX] = written = str(index)
    recorded = _recorded(attempt, restarts_before)
    meta = names.metadata(of_type.name_prefix + written, job.namespace, labels, recorded)
    return kinds.header(kinds.SERVICE) | {
        "metadata": meta,
        "spec": {"clusterIP": "None", "selector": labels.copy(), "ports": of_type.service_ports},
    }
