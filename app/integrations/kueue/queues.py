"""Which LocalQueue a job queues in, or whether, naming none, its namespace holds it."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.integrations.kueue.api import (
    DEFAULT_QUEUE,
    LOCAL_QUEUE_KIND,
    MANAGED_NAMESPACE_LABEL,
    QUEUE_LABEL,
    related_objects,
)


def queue_name(labels: Any) -> str | None:
    """The LocalQueue a job's labels name, if any."""
    queue = labels.get(QUEUE_LABEL) if isinstance(labels, dict) else None
    return queue if isinstance(queue, str) and queue else None


@dataclass(frozen=True)
class Queueing:
    """Where a job queues: the LocalQueue, or None; and whether, having none, it is held."""

    queue: str | None
    held: bool


def queueing(
    labels: Any,
    namespace: str | None,
    workloads: Sequence[Mapping[str, Any]],
    related: Mapping[str, Any],
) -> Queueing:
    """The job's LocalQueue: its label; else the queue its Workload was made for (a default
    queue deleted under a waiting job leaves it waiting, as Kueue's defaulted label would);
    else the namespace's LocalQueue `default`. Without one, a job in a namespace labelled
    MANAGED_NAMESPACE_LABEL is held (docs/kueue.md)."""
    queue = queue_name(labels)
    for workload in workloads:
        if queue is None:
            spec = workload.get("spec")
            found = spec.get("queueName") if isinstance(spec, dict) else None
            queue = found if isinstance(found, str) and found else None
    if queue is None and _in_namespace(related_objects(related, LOCAL_QUEUE_KIND), namespace):
        queue = DEFAULT_QUEUE
    if queue is not None:
        return Queueing(queue, held=False)
    ns = related_objects(related, "Namespace").get(namespace or "")
    ns_meta = ns.get("metadata") if ns else None
    ns_labels = ns_meta.get("labels") if isinstance(ns_meta, dict) else None
    managed = isinstance(ns_labels, dict) and ns_labels.get(MANAGED_NAMESPACE_LABEL) == "true"
    return Queueing(None, held=managed)


def _in_namespace(queues: Mapping[str, Mapping[str, Any]], namespace: str | None) -> bool:
    """Whether the LocalQueue `default` of this namespace is among the related objects."""
    found = queues.get(DEFAULT_QUEUE)
    meta = found.get("metadata") if found else None
    return isinstance(meta, dict) and meta.get("namespace") == namespace
