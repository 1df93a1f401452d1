"""The seam between the core and its integrations: what one says before the decision and adds
to the pods, as values the core reads without naming the integration that made them."""

from collections.abc import Mapping
from typing import Any, Protocol

from app.core.spec import ReplicaType


class PodUpdate(Protocol):
    """What an integration adds to the pods of one replica type."""

    @property
    def node_selector(self) -> dict[str, str]: ...

    @property
    def tolerations(self) -> list[dict[str, Any]]: ...

    @property
    def labels(self) -> dict[str, str]: ...

    @property
    def annotations(self) -> dict[str, str]: ...


class Say(Protocol):
    """What an integration says before the decision: the Queued condition to set, as (status,
    reason, message), or None to leave it; whether the job waits (no pods, Services or job
    children); and what the pods of each replica type get."""

    @property
    def wait(self) -> bool: ...

    @property
    def condition(self) -> tuple[str, str, str] | None: ...

    @property
    def pod_sets(self) -> Mapping[ReplicaType, PodUpdate]: ...


def add_to_pod(pod: dict[str, Any], update: PodUpdate) -> None:
    """Add an update's labels, annotations, node selector and tolerations to a freshly built
    pod (its nested maps are its own, or shared read-only with its template)."""
    meta, spec = pod["metadata"], pod["spec"]
    if update.labels:
        meta["labels"] = meta["labels"] | update.labels
    if update.annotations:
        meta["annotations"] = (meta.get("annotations") or {}) | update.annotations
    if update.node_selector:
        spec["nodeSelector"] = (spec.get("nodeSelector") or {}) | update.node_selector
    if update.tolerations:
        have = list(spec.get("tolerations") or [])
        spec["tolerations"] = have + [t for t in update.tolerations if t not in have]
