"""The customize hook: which Kueue objects Metacontroller hands the sync of a job."""

from typing import Any

from app.core.model.kinds import CORE_API_VERSION
from app.integrations.kueue.api import API_VERSION, DEFAULT_QUEUE, POD_PRIORITY_GROUP

# What the customize hook answers: every ResourceFlavor and priority class, then the job's
# namespace and its default LocalQueue. Metacontroller caches the answer by the job's
# generation, which a label edit does not change, so the answer depends on nothing but the
# namespace, which a job never changes (docs/kueue.md).
RELATED_RESOURCES = (
    {"apiVersion": API_VERSION, "resource": "resourceflavors"},
    {"apiVersion": API_VERSION, "resource": "workloadpriorityclasses"},
    {"apiVersion": f"{POD_PRIORITY_GROUP}/v1", "resource": "priorityclasses"},
)


def customize(body: Any) -> dict[str, Any] | None:
    """The customize hook's answer, or None for a request that is not one."""
    if not isinstance(body, dict) or not isinstance(body.get("parent"), dict):
        return None
    rules = [dict(rule) for rule in RELATED_RESOURCES]
    meta = body["parent"].get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    if isinstance(namespace, str) and namespace:
        rules += namespace_rules(namespace)
    return {"relatedResources": rules}


def namespace_rules(namespace: str) -> list[dict[str, Any]]:
    """The related objects a job's namespace adds: the Namespace (its labels say whether it
    holds jobs without a queue) and its default LocalQueue."""
    return [
        {"apiVersion": CORE_API_VERSION, "resource": "namespaces", "names": [namespace]},
        {
            "apiVersion": API_VERSION,
            "resource": "localqueues",
            "namespace": namespace,
            "names": [DEFAULT_QUEUE],
        },
    ]
