"""The job's Workload child: its name, its pod sets, and whether an observed one still fits."""

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from app.core.model.kinds import header
from app.core.model.spec import MXJobSpec, ReplicaType
from app.core.mxnet import names
from app.integrations.kueue.api import API_VERSION, WORKLOAD_KIND, dicts
from app.integrations.kueue.priorities import Priority

# Hex digits of the pod sets' hash in a Workload's name (Kueue's own names carry 5).
HASH_LENGTH = 8


def workload_name(job: str, pod_sets: Sequence[Mapping[str, Any]]) -> str:
    """The name of the Workload for these pod sets: a spec edit that changes what Kueue
    compares (Kueue's EquivalentToWorkload: names, counts, containers, init containers,
    tolerations) changes the name, so that the Workload is replaced in one sync."""
    compared = [
        {
            "name": ps["name"],
            "count": ps["count"],
            **{k: ps["template"]["spec"].get(k) for k in _COMPARED},
        }
        for ps in pod_sets
    ]
    digest = hashlib.sha1(orjson.dumps(compared, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"mxjob-{job}-{digest[:HASH_LENGTH]}"


_COMPARED = ("containers", "initContainers", "tolerations")


def legacy_workload_name(job: str) -> str:
    """The name earlier releases gave every Workload of a job."""
    return f"mxjob-{job}"


def covers(workload: Mapping[str, Any], pod_sets: Sequence[Mapping[str, Any]]) -> bool:
    """Whether an observed Workload asks for these pod sets' counts and requests: the same
    pod sets, counts, and containers' and init containers' resources."""
    spec = workload.get("spec")
    theirs = spec.get("podSets") if isinstance(spec, dict) else None
    if not isinstance(theirs, list):
        return False
    return [_quota_shape(p) for p in theirs] == [_quota_shape(p) for p in pod_sets]


def _quota_shape(pod_set: Any) -> Any:
    if not isinstance(pod_set, Mapping):
        return None
    template = pod_set.get("template")
    spec = template.get("spec") if isinstance(template, Mapping) else None
    spec = spec if isinstance(spec, Mapping) else {}
    return (
        pod_set.get("name"),
        pod_set.get("count"),
        [
            [(ctr.get("name"), ctr.get("resources") or {}) for ctr in dicts(spec.get(key))]
            for key in ("containers", "initContainers")
        ],
    )


def pod_sets(
    templates: Mapping[ReplicaType, dict[str, Any]], spec: MXJobSpec
) -> list[dict[str, Any]]:
    """One pod set per replica type that has replicas (name = the type in lower case, count =
    its replicas, template = its pods as they are made)."""
    return [
        {"name": t.lowered, "count": spec.replicas(t), "template": templates[t]}
        for t in spec.types()
        if spec.replicas(t) > 0
    ]


def workload(
    name: str,
    namespace: str | None,
    queue: str,
    sets: list[dict[str, Any]],
    prio: Priority | None,
    workload_name_: str,
) -> dict[str, Any]:
    """The job's Workload: its pod sets, the queue, and the priority. Written whole here: no
    Kueue webhook defaults it."""
    body: dict[str, Any] = {"podSets": sets, "queueName": queue}
    if prio is not None and prio.value is not None:
        # Both or neither (the Workload CRD's rule): a class that does not exist gives none.
        body["priorityClassRef"] = {"group": prio.group, "kind": prio.kind, "name": prio.name}
        body["priority"] = prio.value
    meta = names.metadata(workload_name_, namespace, names.job_labels(name), {})
    return header(WORKLOAD_KIND, API_VERSION) | {"metadata": meta, "spec": body}


def pod_template(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod set's template from a built pod: its labels, annotations and spec."""
    meta = {k: v for k, v in pod["metadata"].items() if k in ("labels", "annotations")}
    return {"metadata": meta, "spec": pod["spec"]}
