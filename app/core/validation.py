"""Check an MXJob against the contract's rules (docs/behaviour.md#validation) and return its
typed spec."""

import re
from typing import Any

from pydantic import ValidationError

from app.core.errors import SpecError
from app.core.kubeenv import ENV_NAME
from app.core.layout import Layout
from app.core.names import (
    ANNOTATION_REPLICA_SERVICES,
    MAIN_CONTAINER,
    MAX_NAME,
    ReplicaServices,
    child_name,
)
from app.core.normalise import LEGACY_RUN_POLICY_FIELDS, normalise
from app.core.sizerule import MAX_REPLICAS, size_problems
from app.core.spec import TRAIN_TYPES, TUNE_TYPES, MXJobSpec, ReplicaSpec, ReplicaType

_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# Kubernetes' syntax for label and annotation keys (a qualified name) and label values.
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
MAX_SUBDOMAIN = 253
MAX_LABEL = 63
_QUALIFIED = (
    "a qualified name: an optional DNS subdomain prefix and '/', then at most 63 letters, "
    "digits, '-', '_' or '.', starting and ending with a letter or digit"
)


def validated_spec(
    job_name: str,
    raw_spec: Any,
    layout: Layout = Layout.CONFIG_MAP,
    fresh: Layout | None = None,
) -> MXJobSpec:
    """The defaulted, validated spec, or SpecError naming every broken rule where the user wrote
    it. The size rule judges `layout`, the one the job's requests carry (`layout.layout_for`), or
    for a suspended job `fresh`, the one its pods are made anew in when it resumes."""
    try:
        return _validated_spec(job_name, raw_spec, layout, fresh or layout)
    except SpecError as err:
        raise SpecError(_as_written(raw_spec, err.problems)) from None


def replica_services(annotations: Any, spec: MXJobSpec) -> ReplicaServices:
    """Which replicas get a Service, as the job's ANNOTATION_REPLICA_SERVICES asks (`all`
    without it), or SpecError naming the annotation (docs/behaviour.md#replica-services)."""
    value = annotations.get(ANNOTATION_REPLICA_SERVICES) if isinstance(annotations, dict) else None
    if value is None:
        return ReplicaServices.ALL
    field = f"metadata.annotations[{ANNOTATION_REPLICA_SERVICES!r}]"
    allowed = " or ".join(repr(v.value) for v in ReplicaServices)
    if not isinstance(value, str) or value not in set(ReplicaServices):
        raise SpecError([f"{field}: must be {allowed}, got {value!r}"])
    wanted = ReplicaServices(value)
    if wanted is ReplicaServices.SCHEDULER and spec.jobMode != "MXTrain":
        raise SpecError([
            f"{field}: 'scheduler' needs an MXTrain job: an MXTune job has no Scheduler and "
            "its replicas reach each other by their Services' names, so it keeps every Service "
            "('all', or no annotation)"
        ])  # fmt: skip
    return wanted


def _as_written(raw_spec: Any, problems: list[str]) -> list[str]:
    """`problems` with `spec.runPolicy.<field>` named `spec.<field>` where the field is in its
    legacy placement (`normalise` moved it, and `spec.runPolicy` does not set it too)."""
    if not isinstance(raw_spec, dict):
        return problems
    run_policy = raw_spec.get("runPolicy")
    legacy = [
        field
        for field in LEGACY_RUN_POLICY_FIELDS
        if field in raw_spec and not (isinstance(run_policy, dict) and field in run_policy)
    ]
    out = []
    for problem in problems:
        for field in legacy:
            moved = f"spec.runPolicy.{field}"
            if problem.startswith(moved) and problem[len(moved)] in ".:":
                problem = f"spec.{field}{problem[len(moved) :]}"
        out.append(problem)
    return out


def _validated_spec(job_name: str, raw_spec: Any, layout: Layout, fresh: Layout) -> MXJobSpec:
    try:
        spec = MXJobSpec.model_validate(normalise(raw_spec))
    except ValidationError as err:
        raise SpecError([_describe(e) for e in err.errors()]) from None
    problems = _name_problems(job_name, spec) + _shape_problems(spec) + _scheduling_problems(spec)
    for rtype, replica in spec.mxReplicaSpecs.items():
        problems += _template_problems(rtype, replica)
    if problems:
        raise SpecError(problems)
    problems = size_problems(job_name, spec, fresh if spec.runPolicy.suspend else layout)
    if problems:
        raise SpecError(problems)
    return spec


def _describe(error: Any) -> str:
    field = ".".join(str(part) for part in ("spec", *error["loc"]))
    return f"{field}: {error['msg']}"


def _name_problems(job_name: str, spec: MXJobSpec) -> list[str]:
    if not _DNS_1035.fullmatch(job_name):
        return [
            f"metadata.name: {job_name!r} must be a DNS-1035 label "
            "(lower-case letters, digits and '-', starting with a letter)"
        ]
    for rtype, replica in spec.mxReplicaSpecs.items():
        longest = child_name(job_name, rtype, max(replica.replicas - 1, 0))
        if len(longest) > MAX_NAME:
            return [
                f"metadata.name: too long: child name {longest!r} has {len(longest)} "
                f"characters, a Service name allows at most {MAX_NAME}"
            ]
    return []


def _shape_problems(spec: MXJobSpec) -> list[str]:
    types = set(spec.mxReplicaSpecs)
    if not types:
        return ["spec.mxReplicaSpecs: needs at least one replica spec"]
    total = sum(r.replicas for r in spec.mxReplicaSpecs.values())
    if total > MAX_REPLICAS:
        return [f"spec.mxReplicaSpecs: {total} replicas in all, at most {MAX_REPLICAS}"]
    allowed = TRAIN_TYPES if spec.jobMode == "MXTrain" else TUNE_TYPES
    foreign = sorted(t.value for t in types - set(allowed))
    if foreign:
        names = ", ".join(t.value for t in allowed)
        return [f"spec.mxReplicaSpecs: jobMode {spec.jobMode} allows only {names}, got {foreign}"]
    if spec.jobMode == "MXTrain":
        return _train_problems(spec)
    return _tune_problems(spec)


def _scheduling_problems(spec: MXJobSpec) -> list[str]:
    policy = spec.runPolicy.schedulingPolicy
    queue = policy.queue if policy else None
    if queue is None or _subdomain(queue):
        return []
    return [
        f"spec.runPolicy.schedulingPolicy.queue: {queue!r} must name a Volcano Queue, so be a "
        f"DNS-1123 subdomain (at most {MAX_SUBDOMAIN} lower-case letters, digits, '-' and '.')"
    ]


def _subdomain(value: str) -> bool:
    return len(value) <= MAX_SUBDOMAIN and _DNS_1123_SUBDOMAIN.fullmatch(value) is not None


def _qualified_name(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and not _subdomain(prefix):
        return False
    return len(name) <= MAX_LABEL and _NAME.fullmatch(name) is not None


def _label_value(value: str) -> bool:
    return value == "" or (len(value) <= MAX_LABEL and _NAME.fullmatch(value) is not None)


def _train_problems(spec: MXJobSpec) -> list[str]:
    problems = []
    schedulers = spec.replicas(ReplicaType.SCHEDULER)
    if schedulers > 1:
        problems.append("spec.mxReplicaSpecs.Scheduler.replicas: must be at most 1")
    needs_scheduler = spec.replicas(ReplicaType.SERVER) > 0 or spec.replicas(ReplicaType.WORKER) > 1
    if needs_scheduler and schedulers == 0:
        problems.append(
            "spec.mxReplicaSpecs.Scheduler: required (1 replica) when the job has a Server "
            "or more than one Worker"
        )
    return problems


def _tune_problems(spec: MXJobSpec) -> list[str]:
    return [
        f"spec.mxReplicaSpecs.{rtype.value}.replicas: an MXTune job needs exactly one {rtype.value}"
        for rtype in (ReplicaType.TUNER_TRACKER, ReplicaType.TUNER)
        if spec.replicas(rtype) != 1
    ]


def _template_problems(rtype: ReplicaType, replica: ReplicaSpec) -> list[str]:
    field = f"spec.mxReplicaSpecs.{rtype.value}.template"
    problems = _metadata_problems(field, replica.template.get("metadata"))
    return problems + _containers_problems(field, replica.template.get("spec"))


def _metadata_problems(field: str, metadata: Any) -> list[str]:
    if metadata is None:
        return []
    if not isinstance(metadata, dict):
        return [f"{field}.metadata: must be an object"]
    problems = [
        f"{field}.metadata.{key}: must map strings to strings"
        for key in ("labels", "annotations")
        if not _string_map(metadata.get(key, {}))
    ]
    return problems or _key_problems(f"{field}.metadata", metadata)


def _key_problems(field: str, metadata: dict[str, Any]) -> list[str]:
    """Keys and values Kubernetes would refuse on the pod: say so now, not at pod creation."""
    problems = [
        f"{field}.{kind}: key {key!r} must be {_QUALIFIED}"
        for kind in ("labels", "annotations")
        for key in metadata.get(kind, {})
        if not _qualified_name(key)
    ]
    return problems + [
        f"{field}.labels.{key}: value {value!r} must be empty or at most {MAX_LABEL} letters, "
        "digits, '-', '_' or '.', starting and ending with a letter or digit"
        for key, value in metadata.get("labels", {}).items()
        if not _label_value(value)
    ]


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _containers_problems(field: str, pod_spec: Any) -> list[str]:
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return [f"{field}.spec.containers: needs at least one container"]
    problems = []
    for n, container in enumerate(containers):
        problems += _container_problems(f"{field}.spec.containers[{n}]", container)
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if MAIN_CONTAINER not in names:
        problems.append(f"{field}.spec.containers: one container must be named {MAIN_CONTAINER!r}")
    return problems + _port_problems(field, containers) + _init_problems(field, pod_spec)


def _init_problems(field: str, pod_spec: dict[str, Any]) -> list[str]:
    """Init containers: only what would fail the pod's creation, their env names."""
    inits = pod_spec.get("initContainers", [])
    if not isinstance(inits, list):
        return [f"{field}.spec.initContainers: must be a list of containers"]
    problems = []
    for n, init in enumerate(inits):
        env = init.get("env", []) if isinstance(init, dict) else []
        problems += _env_problems(f"{field}.spec.initContainers[{n}]", env)
    return problems


def _container_problems(field: str, container: Any) -> list[str]:
    if not isinstance(container, dict):
        return [f"{field}: must be an object"]
    problems = []
    if not isinstance(container.get("image"), str) or not container["image"]:
        problems.append(f"{field}.image: must be a non-empty string")
    return problems + _env_problems(field, container.get("env", []))


def _env_problems(field: str, env: Any) -> list[str]:
    if not isinstance(env, list):
        return [f"{field}.env: must be a list of objects with a name"]
    return [
        f"{field}.env[{n}].name: {_env_name_problem(entry)}"
        for n, entry in enumerate(env)
        if _env_name_problem(entry)
    ]


def _env_name_problem(entry: Any) -> str:
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, str):
        return "required: every env entry needs a name"
    if not ENV_NAME.fullmatch(name):
        return f"{name!r} must be printable ASCII without '=', at least one character"
    return ""


def _port_problems(field: str, containers: list[Any]) -> list[str]:
    for n, container in enumerate(containers):
        if not isinstance(container, dict) or container.get("name") != MAIN_CONTAINER:
            continue
        ports = container.get("ports", [])
        if not isinstance(ports, list) or not all(isinstance(p, dict) for p in ports):
            return [f"{field}.spec.containers[{n}].ports: must be a list of objects"]
        for m, port in enumerate(ports):
            number = port.get("containerPort")
            if type(number) is not int or not 0 < number < 65536:
                return [f"{field}.spec.containers[{n}].ports[{m}].containerPort: must be 1-65535"]
    return []
