"""The legacy fields the hook accepts on purpose (docs/behaviour.md), named for `render`'s notes."""

from typing import Any

from app.core.model.spec import BY_LOWERED
from app.core.validate.validation import LEGACY_RUN_POLICY_FIELDS

_SUCCESS_POLICY_NOTE = (
    "spec.successPolicy: mxnet-operator v1beta1's success rule, read as it read it: AllWorkers "
    "makes a train job with a Scheduler succeed when every Worker has succeeded, not when the "
    'Scheduler exits; "" (the default) leaves success to the Scheduler, a single Worker or '
    "the Tuner"
)


def legacy_notes(job: Any) -> list[str]:
    """One line per legacy field of `job`: where it is, and how the hook reads it."""
    spec = job.get("spec") if isinstance(job, dict) else None
    if not isinstance(spec, dict):
        return []
    notes = [
        f"spec.{field}: mxnet-operator's place for it, accepted as spec.runPolicy.{field}"
        + (" (spec.runPolicy's wins)" if field in _run_policy(spec) else "")
        for field in LEGACY_RUN_POLICY_FIELDS
        if field in spec
    ]
    if "successPolicy" in spec:
        notes.append(_SUCCESS_POLICY_NOTE)
    replicas = spec.get("mxReplicaSpecs")
    for key, replica in replicas.items() if isinstance(replicas, dict) else ():
        rtype = BY_LOWERED.get(str(key).lower())
        if rtype is not None and key != rtype.value:
            notes.append(f"spec.mxReplicaSpecs.{key}: accepted as {rtype.value} (any case)")
        if isinstance(replica, dict) and "label" in replica:
            notes.append(
                f"spec.mxReplicaSpecs.{key}.label: the legacy tune label, accepted "
                "(the template's annotation tuner-server-key wins)"
            )
    return notes


def _run_policy(spec: dict[str, Any]) -> dict[str, Any]:
    run_policy = spec.get("runPolicy")
    return run_policy if isinstance(run_policy, dict) else {}
