"""Normalise a raw MXJob spec: replica keys in any case, legacy run-policy placement."""

from typing import Any

from app.core.errors import SpecError
from app.core.spec import BY_LOWERED, ReplicaType

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
