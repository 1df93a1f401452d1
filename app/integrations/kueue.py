"""Queueing under Kueue: the job's Workload child, what its admission allows, and what the
admission's resource flavors add to the pods (as Kueue's own job integrations do)."""

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from app.core import conditions as c
from app.core import names
from app.core.conditions import Condition
from app.core.spec import MXJobSpec, ReplicaType

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"  # Kueue v0.17's storage version
WORKLOAD_TYPE = f"Workload.{API_VERSION}"
QUEUE_LABEL = f"{GROUP}/queue-name"
PRIORITY_CLASS_LABEL = f"{GROUP}/priority-class"
FLAVOR_KIND = "ResourceFlavor"
WORKLOAD_PRIORITY_CLASS_KIND = "WorkloadPriorityClass"
POD_PRIORITY_CLASS_KIND = "PriorityClass"
POD_PRIORITY_GROUP = "scheduling.k8s.io"
LOCAL_QUEUE_KIND = "LocalQueue"
# The LocalQueue a job without the label is queued in, where it exists (Kueue's
# LocalQueueDefaulting).
DEFAULT_QUEUE = "default"
# A namespace with this label set to "true" holds its MXJobs that name no queue (Kueue's
# manageJobsWithoutQueueName with managedJobsNamespaceSelector; docs/kueue.md).
MANAGED_NAMESPACE_LABEL = "kueue.mxjob-controller.kubeflow.org/manage-jobs-without-queue-name"

# Set on the Workload by Kueue's job integrations, and for MXJobs by the Workload-status writer
# (app/controllers/kueuestatus), never by Kueue's own controllers.
PODS_READY = "PodsReady"

REASON_QUEUED = "MXJobQueued"
REASON_EVICTED = "MXJobEvicted"
REASON_ADMITTED = "MXJobAdmitted"
REASON_UNQUEUED = "MXJobUnqueued"
REASON_REQUEUED = "MXJobRequeued"
REASON_NO_QUEUE = "MXJobNoQueue"

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
        {"apiVersion": "v1", "resource": "namespaces", "names": [namespace]},
        {
            "apiVersion": API_VERSION,
            "resource": "localqueues",
            "namespace": namespace,
            "names": [DEFAULT_QUEUE],
        },
    ]


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
            [(ctr.get("name"), ctr.get("resources") or {}) for ctr in _dicts(spec.get(key))]
            for key in ("containers", "initContainers")
        ],
    )


@dataclass(frozen=True)
class PodSetInfo:
    """What an admission adds to the pods of one pod set (Kueue's podset.PodSetInfo)."""

    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Admission:
    """An observed Workload's state, read from its status conditions."""

    admitted: bool
    evicted: bool
    cluster_queue: str | None
    # Kueue's own words: why it is not admitted, or why it was evicted.
    message: str
    reason: str
    # Per pod set: the flavor assigned to each resource.
    flavors: dict[str, list[str]]
    updates: dict[str, PodSetInfo]
    # Whether a Workload-status writer tends it (it alone writes PodsReady on our Workloads):
    # then an eviction keeps the Workload and the writer clears its reservation.
    kept_on_eviction: bool = False


def admission(workload: Mapping[str, Any]) -> Admission:
    """The state of an observed Workload; anything malformed reads as not admitted."""
    status = workload.get("status")
    status = status if isinstance(status, dict) else {}
    conds = {
        cond["type"]: cond
        for cond in status.get("conditions") or []
        if isinstance(cond, dict) and isinstance(cond.get("type"), str)
    }

    def true(ctype: str) -> bool:
        return conds.get(ctype, {}).get("status") == "True"

    def text(ctype: str, key: str) -> str:
        value = conds.get(ctype, {}).get(key)
        return value if isinstance(value, str) else ""

    admission_ = status.get("admission")
    admission_ = admission_ if isinstance(admission_, dict) else {}
    queue = admission_.get("clusterQueue")
    evicted = true("Evicted")
    if evicted:
        message, reason = text("Evicted", "message"), text("Evicted", "reason")
    else:
        message, reason = text("QuotaReserved", "message"), text("QuotaReserved", "reason")
        if true("QuotaReserved") and not true("Admitted"):
            message = text("Admitted", "message") or "waiting for admission checks"
    return Admission(
        admitted=true("Admitted") and not evicted,
        evicted=evicted,
        cluster_queue=queue if isinstance(queue, str) and queue else None,
        message=message,
        reason=reason,
        flavors=_assigned_flavors(admission_.get("podSetAssignments")),
        updates=_pod_set_updates(status.get("admissionChecks")),
        kept_on_eviction=PODS_READY in conds,
    )


def _assigned_flavors(assignments: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in assignments if isinstance(assignments, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        flavors = item.get("flavors")
        flavors = flavors if isinstance(flavors, dict) else {}
        # Each flavor once, in the order of the resources it was assigned for.
        unique = dict.fromkeys(f for _, f in sorted(flavors.items()) if isinstance(f, str))
        out[item["name"]] = list(unique)
    return out


def _pod_set_updates(checks: Any) -> dict[str, PodSetInfo]:
    """What admission checks ask of each pod set (`podSetUpdates`), merged in check order."""
    out: dict[str, PodSetInfo] = {}
    for check in checks if isinstance(checks, list) else ():
        updates = check.get("podSetUpdates") if isinstance(check, dict) else None
        for update in updates if isinstance(updates, list) else ():
            if not isinstance(update, dict) or not isinstance(update.get("name"), str):
                continue
            info = PodSetInfo(
                node_selector=_strings(update.get("nodeSelector")),
                tolerations=_dicts(update.get("tolerations")),
                labels=_strings(update.get("labels")),
                annotations=_strings(update.get("annotations")),
            )
            name = update["name"]
            out[name] = _merged(out[name], info) if name in out else info
    return out


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _merged(base: PodSetInfo, other: PodSetInfo) -> PodSetInfo:
    tolerations = base.tolerations + [t for t in other.tolerations if t not in base.tolerations]
    return PodSetInfo(
        base.node_selector | other.node_selector,
        tolerations,
        base.labels | other.labels,
        base.annotations | other.annotations,
    )


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
                _strings(flavor_spec.get("nodeLabels")), _dicts(flavor_spec.get("tolerations"))
            )
            info = _merged(info, own)
        if rtype.lowered in state.updates:
            info = _merged(info, state.updates[rtype.lowered])
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


def inject(pod: dict[str, Any], info: PodSetInfo) -> None:
    """Add an admission's node selector, tolerations, labels and annotations to a freshly
    built pod (its nested maps are its own, or shared read-only with its template)."""
    meta, spec = pod["metadata"], pod["spec"]
    if info.labels:
        meta["labels"] = meta["labels"] | info.labels
    if info.annotations:
        meta["annotations"] = (meta.get("annotations") or {}) | info.annotations
    if info.node_selector:
        spec["nodeSelector"] = (spec.get("nodeSelector") or {}) | info.node_selector
    if info.tolerations:
        have = list(spec.get("tolerations") or [])
        spec["tolerations"] = have + [t for t in info.tolerations if t not in have]


def related_objects(related: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """The related objects of one kind, by name (the map's keys differ between hook
    versions, so names come from metadata)."""
    out: dict[str, dict[str, Any]] = {}
    for group in related.values():
        for obj in group.values() if isinstance(group, dict) else ():
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            if obj.get("kind") == kind and isinstance(meta, dict):
                name = meta.get("name")
                if isinstance(name, str):
                    out[name] = obj
    return out


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
    meta: dict[str, Any] = {"name": workload_name_}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {names.LABEL_OPERATOR: names.OPERATOR_NAME, names.LABEL_JOB: name}
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": meta, "spec": body}


def pod_template(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod set's template from a built pod: its labels, annotations and spec."""
    meta = {k: v for k, v in pod["metadata"].items() if k in ("labels", "annotations")}
    return {"metadata": meta, "spec": pod["spec"]}


@dataclass(frozen=True)
class Gate:
    """What Kueue allows a job this sync: whether it waits (no pods, Services or job
    children), the Queued condition to set, and what admitted pods get."""

    wait: bool
    # (status, reason, message) of the Queued condition, or None to leave it as it is.
    condition: tuple[str, str, str] | None
    # Whether the job wants its Workload (False: the Workload, if any, is deleted).
    wants_workload: bool
    pod_sets: dict[ReplicaType, PodSetInfo] = field(default_factory=dict)
    # An admitted Workload for other pod sets, kept (its quota held) while the pods it
    # admitted stop.
    keep: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class JobView:
    """What `gate` reads of the job and its observed children."""

    name: str
    queue: str | None
    # The Workload for the job's pod sets as they are now, if observed.
    workload: Mapping[str, Any] | None
    # Pods of the job that are not being deleted.
    live_pods: bool
    finished: bool
    suspended: bool
    # Without a queue, whether its namespace holds it (MANAGED_NAMESPACE_LABEL).
    held: bool = False
    # The job's other observed Workloads: made for pod sets the spec no longer asks for.
    stale: tuple[Mapping[str, Any], ...] = ()
    # Pods of the job that may still run: not Succeeded or Failed, deleted or not.
    active_pods: bool = False


def gate(
    job: JobView, previous: list[Condition], related: Mapping[str, Any], spec: MXJobSpec
) -> Gate | None:
    """Kueue's say over this sync, or None when it has none (the job behaves exactly as
    without Kueue). See docs/kueue.md for each case."""
    before = c.find(previous, c.QUEUED)
    waiting_before = before is not None and before.get("status") == "True"
    # A job that ran before its namespace held such jobs runs on, as under Kueue's webhook.
    started_unqueued = before is None and job.live_pods
    if job.queue is None and job.held and not (job.finished or job.suspended or started_unqueued):
        return _held(job.name)
    if job.queue is None or job.finished:
        if waiting_before and not job.finished:
            message = f"MXJob {job.name} is no longer queued: its {QUEUE_LABEL} label was removed."
            return Gate(False, ("False", REASON_UNQUEUED, message), wants_workload=False)
        return None
    if before is None and job.live_pods:
        # Started without Kueue (the label came later): it runs to its end unqueued.
        return None
    if job.suspended:
        return None
    where = f"LocalQueue {job.queue}"
    outgrown = next((w for w in job.stale if admission(w).admitted), None)
    if outgrown is not None:
        # Kueue's "No matching Workload": the pods go, and only then the Workload, so its
        # quota is held until they are gone; the new Workload follows (docs/kueue.md).
        message = (
            f"MXJob {job.name} no longer matches the pod sets Kueue admitted: its pods are "
            f"stopped and it is queued again in {where}."
        )
        if job.active_pods:
            return Gate(True, ("True", REASON_REQUEUED, message), False, keep=outgrown)
        # The outgrown Workload is the evidence, not the status, which a sync may see one
        # write behind: the job waits as requeued from here on.
        before = {"type": c.QUEUED, "status": "True", "reason": REASON_REQUEUED, "message": message}
        waiting_before = True
    admitted_before = before is not None and before.get("reason") == REASON_ADMITTED
    keeps_running = job.live_pods and not waiting_before and admitted_before and not job.stale
    if job.workload is None:
        if keeps_running:
            return Gate(False, None, wants_workload=True)
        return _waiting(job.name, where, "", before, wants_workload=True)
    state = admission(job.workload)
    if state.cluster_queue:
        where += f" (ClusterQueue {state.cluster_queue})"
    if state.evicted:
        if waiting_before and before is not None and before.get("reason") == REASON_EVICTED:
            # The status records the eviction. With the writer, which clears the reservation
            # once the pods are gone, the Workload and its requeueState stay and Kueue requeues
            # it with its backoff; without it, the Workload goes (releasing its quota) and the
            # next sync makes it again, pending; not earlier, so a sync one status behind still
            # finds the evidence (docs/kueue.md).
            said = ("True", REASON_EVICTED, before.get("message", ""))
            return Gate(True, said, wants_workload=state.kept_on_eviction)
        why = f" ({state.reason})" if state.reason else ""
        message = (
            f"MXJob {job.name} was evicted by Kueue{why}: {state.message or 'no message'}; "
            f"it is queued again in LocalQueue {job.queue}."
        )
        return Gate(True, ("True", REASON_EVICTED, message), wants_workload=True)
    if state.admitted:
        infos = pod_set_infos(state, related, spec)
        if isinstance(infos, str) and keeps_running:
            # A flavor gone from under a running job (say) does not stop it.
            return Gate(False, None, wants_workload=True)
        if isinstance(infos, str):
            message = f"MXJob {job.name} is admitted by Kueue in {where}, but {infos}."
            return Gate(True, ("True", REASON_QUEUED, message), wants_workload=True)
        message = f"MXJob {job.name} is admitted by Kueue in {where}."
        return Gate(False, ("False", REASON_ADMITTED, message), True, infos)
    if keeps_running:
        return Gate(False, None, wants_workload=True)
    return _waiting(job.name, where, state.message, before, wants_workload=True)


def _waiting(
    name: str, where: str, why: str, before: Condition | None, wants_workload: bool
) -> Gate:
    again = (REASON_EVICTED, REASON_REQUEUED)
    if before and before.get("status") == "True" and before.get("reason") in again:
        # Re-queued after an eviction or an edit: the condition keeps saying why, until
        # admitted.
        return Gate(
            True, ("True", str(before["reason"]), before.get("message", "")), wants_workload
        )
    message = f"MXJob {name} is queued in {where}, waiting for Kueue to admit it"
    message += f": {why}" if why else "."
    return Gate(True, ("True", REASON_QUEUED, message), wants_workload)


def _held(name: str) -> Gate:
    """A job that names no queue, in a namespace that holds such jobs."""
    message = (
        f"MXJob {name} names no LocalQueue and its namespace runs no job outside Kueue: it "
        f"is held. Suspend it, add the {QUEUE_LABEL} label, and resume it."
    )
    return Gate(True, ("True", REASON_NO_QUEUE, message), wants_workload=False)
