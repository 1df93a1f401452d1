"""Queueing under Kueue: the job's Workload child, what its admission allows, and what the
admission's resource flavors add to the pods (as Kueue's own job integrations do)."""

from app.integrations.kueue.admission import PodSetInfo, admission
from app.integrations.kueue.api import (
    API_VERSION,
    GROUP,
    MANAGED_NAMESPACE_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    QUEUED,
    WORKLOAD_TYPE,
)
from app.integrations.kueue.flavors import pod_set_infos
from app.integrations.kueue.hook import RELATED_RESOURCES, customize, namespace_rules
from app.integrations.kueue.priorities import Priority, priority
from app.integrations.kueue.queues import Queueing, queueing
from app.integrations.kueue.sync import INTEGRATION, contribute
from app.integrations.kueue.workloads import HASH_LENGTH, legacy_workload_name

__all__ = [
    "API_VERSION",
    "GROUP",
    "HASH_LENGTH",
    "INTEGRATION",
    "MANAGED_NAMESPACE_LABEL",
    "PRIORITY_CLASS_LABEL",
    "QUEUED",
    "QUEUE_LABEL",
    "RELATED_RESOURCES",
    "WORKLOAD_TYPE",
    "PodSetInfo",
    "Priority",
    "Queueing",
    "admission",
    "contribute",
    "customize",
    "legacy_workload_name",
    "namespace_rules",
    "pod_set_infos",
    "priority",
    "queueing",
]
