"""The Workload's priority, as Kueue's job integrations read it from the job."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.core.model.spec import MXJobSpec
from app.integrations.kueue.api import (
    GROUP,
    POD_PRIORITY_CLASS_KIND,
    POD_PRIORITY_GROUP,
    PRIORITY_CLASS_LABEL,
    WORKLOAD_PRIORITY_CLASS_KIND,
    related_objects,
)


@dataclass(frozen=True)
class Priority:
    """The Workload's priority class reference and value."""

    kind: str
    group: str
    name: str
    value: int | None


def priority(labels: Any, spec: MXJobSpec, related: Mapping[str, Any]) -> Priority | None:
    """The job's priority as Kueue's job integrations read it: the Workload priority class
    label, else the pod priority class (the scheduling policy's, else a template's), valued from
    the class the customize hook handed over; no such class: unset (docs/kueue.md)."""
    label = labels.get(PRIORITY_CLASS_LABEL) if isinstance(labels, dict) else None
    if isinstance(label, str) and label:
        value = _value(related_objects(related, WORKLOAD_PRIORITY_CLASS_KIND).get(label))
        return Priority(WORKLOAD_PRIORITY_CLASS_KIND, GROUP, label, value)
    policy = spec.runPolicy.schedulingPolicy
    name = policy.priorityClass if policy else None
    for rtype in spec.types():
        if name:
            break
        found = (spec.mxReplicaSpecs[rtype].template.get("spec") or {}).get("priorityClassName")
        name = found if isinstance(found, str) else None
    if not name:
        return None
    value = _value(related_objects(related, POD_PRIORITY_CLASS_KIND).get(name))
    return Priority(POD_PRIORITY_CLASS_KIND, POD_PRIORITY_GROUP, name, value)


def _value(obj: dict[str, Any] | None) -> int | None:
    value = obj.get("value") if obj else None
    return value if type(value) is int else None
