"""Check an MXJob against the contract's rules (docs/behaviour.md#validation) and return its
typed spec: normalised first (replica keys in any case, legacy run-policy placement), then
checked as a whole; its pod templates are checked in app/core/validate/templates.py."""

import re
from typing import Any

from pydantic import ValidationError

from app.core.model.errors import SpecError
from app.core.model.spec import BY_LOWERED, TRAIN_TYPES, TUNE_TYPES, MXJobSpec, ReplicaType
from app.core.mxnet.layout import Layout
from app.core.mxnet.names import (
    ANNOTATION_REPLICA_SERVICES,
    MAX_NAME,
    ReplicaServices,
    child_name,
)
from app.core.validate.sizerule import MAX_REPLICAS, size_problems
from app.core.validate.templates import MAX_SUBDOMAIN, subdomain, template_problems

# mxnet-operator v1 put these directly under `spec`; `spec.runPolicy` wins where both are set.
LEGACY_RUN_POLICY_FIELDS = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "suspend",
    "schedulingPolicy",
)


def normalise(spec: Any) -> dict[str, Any]:
    """Return a copy of `spec` in the canonical layout, or raise SpecError."""
    if not isinstance(spec, dict):
        raise SpecError(["spec: must be an object"])
    out = {k: v for k, v in spec.items() if k not in LEGACY_RUN_POLICY_FIELDS}
    out["runPolicy"] = _run_policy(spec)
    if "mxReplicaSpecs" in spec:
        out["mxReplicaSpecs"] = _replica_specs(spec["mxReplicaSpecs"])
    return out


def _run_policy(spec: dict[str, Any]) -> Any:
    run_policy = spec.get("runPolicy", {})
    if not isinstance(run_policy, dict):
        return run_policy
    legacy = {k: spec[k] for k in LEGACY_RUN_POLICY_FIELDS if k in spec}
    return legacy | run_policy


def _replica_specs(specs: Any) -> Any:
    if not isinstance(specs, dict):
        return specs
    out: dict[str, Any] = {}
    problems = []
    for key, value in specs.items():
        rtype = BY_LOWERED.get(str(key).lower())
        if rtype is None:
            expected = ", ".join(t.value for t in ReplicaType)
            problems.append(f"spec.mxReplicaSpecs.{key}: unknown replica type (one of {expected})")
        elif rtype.value in out:
            problems.append(f"spec.mxReplicaSpecs.{key}: duplicates replica type {rtype.value}")
        else:
            out[rtype.value] = value
    if problems:
        raise SpecError(problems)
    return out


_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


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
        problems += template_problems(rtype, replica)
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
    if queue is None or subdomain(queue):
        return []
    return [
        f"spec.runPolicy.schedulingPolicy.queue: {queue!r} must name a Volcano Queue, so be a "
        f"DNS-1123 subdomain (at most {MAX_SUBDOMAIN} lower-case letters, digits, '-' and '.')"
    ]


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
