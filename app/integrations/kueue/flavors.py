"""What an admission adds to the pods: its flavors' node labels and tolerations, then its
admission checks' updates, merged as Kueue merges them."""

from collections.abc import Mapping
from typing import Any

from app.core.model.spec import MXJobSpec, ReplicaType
from app.integrations.kueue.admission import Admission, PodSetInfo, merged
from app.integrations.kueue.api import FLAVOR_KIND, dicts, related_objects, strings


def pod_set_infos(
    state: Admission, related: Mapping[str, Any], spec: MXJobSpec
) -> dict[ReplicaType, PodSetInfo] | str:
    """What the admission adds to each replica type's pods, as Kueue's podset.FromAssignment and
    Merge make it (flavors' node labels and tolerations, then admission checks'), or a string
    saying why the pods cannot be made (docs/kueue.md)."""
    flavors = related_objects(related, FLAVOR_KIND)
    out: dict[ReplicaType, PodSetInfo] = {}
    for rtype in spec.types():
        info = PodSetInfo()
        for flavor in state.flavors.get(rtype.lowered, []):
            found = flavors.get(flavor)
            if found is None:
                return f"ResourceFlavor {flavor} assigned to pod set {rtype.lowered} is not known"
            flavor_spec = found.get("spec")
            flavor_spec = flavor_spec if isinstance(flavor_spec, dict) else {}
            own = PodSetInfo(
                strings(flavor_spec.get("nodeLabels")), dicts(flavor_spec.get("tolerations"))
            )
            info = merged(info, own)
        if rtype.lowered in state.updates:
            info = merged(info, state.updates[rtype.lowered])
        clash = _conflict(spec.mxReplicaSpecs[rtype].template, info)
        if clash:
            return f"the admission of pod set {rtype.lowered} {clash}"
        out[rtype] = info
    return out


def _conflict(template: Mapping[str, Any], info: PodSetInfo) -> str | None:
    """What of the admission contradicts the pod template, as Kueue's Merge refuses it."""
    meta = template.get("metadata") or {}
    pod_spec = template.get("spec") or {}
    for what, mine, theirs in (
        ("nodeSelector", pod_spec.get("nodeSelector"), info.node_selector),
        ("label", meta.get("labels"), info.labels),
        ("annotation", meta.get("annotations"), info.annotations),
    ):
        have = mine if isinstance(mine, dict) else {}
        for key, value in theirs.items():
            if key in have and have[key] != value:
                return f"sets {what} {key}={value}, which the pod template sets to {have[key]}"
    return None
