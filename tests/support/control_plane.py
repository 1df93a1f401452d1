"""The control plane's guarantees (docs/security.md, "Layers"), as checks over the objects of a
build (a `kubectl kustomize` or a `helm template`): each returns what is wrong, naming the
object, so that a test asserts an empty list and a planted case names what it broke.

- priority: every workload names the PriorityClass `mxjob-controller-control-plane`, which the
  build has: no pod's default, a value far below the system classes, a stated preemption policy;
- spread: Metacontroller's replicas on different nodes, as a hard rule counted among the nodes
  eligible for its pods;
- read-only: every container's root file system is read-only;
- budgets: no PodDisruptionBudget leaves a drain no eviction, or evicts the last replica of two;
- aggregation: no role joins the built-in view/edit/admin roles, none of Metacontroller's
  aggregates into any role, and the roles that do aggregate grant MXJobs only;
- network: the hook opens no connection; no pod reaches Metacontroller but the namespace
  `monitoring`, on its metrics port;
- writer policy: where the Kueue status writer runs, the admission policy that narrows its
  rights matches its ServiceAccount by name, in its namespace, and denies.
"""

import math
from collections.abc import Iterable, Sequence
from typing import Any

from tests.support.kustomize import is_metacontroller
from tests.support.netpol import WORKLOADS, Pod, pods, reachable, selects

Objects = Sequence[dict[str, Any]]
PRIORITY_CLASS = "mxjob-controller-control-plane"
SYSTEM_CLUSTER_CRITICAL = 2_000_000_000
# "Well below": at most a thousandth of system-cluster-critical's value.
HIGHEST_VALUE = SYSTEM_CLUSTER_CRITICAL // 1000
BUILTIN_AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"
# Labels that gather a role into another: Kubernetes' and Kubeflow's `aggregate-to-*`, Kueue's.
KUEUE_BATCH = ("rbac.kueue.x-k8s.io/batch-admin", "rbac.kueue.x-k8s.io/batch-user")
MXJOB_RESOURCES = {"mxjobs", "mxjobs/status"}
WRITER = "mxjob-controller-kueue-status"  # its Deployment, policy and binding
METACONTROLLER_METRICS = 9999
PORTS_TRIED = {1, 22, 80, 443, 8080, 8081, 8443, 9090, 9443, METACONTROLLER_METRICS, 65535}


def name_of(obj: dict[str, Any]) -> str:
    namespace = obj["metadata"].get("namespace")
    return f"{obj['kind']}/{namespace + '/' if namespace else ''}{obj['metadata']['name']}"


def workloads(objects: Objects) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in WORKLOADS]


def problems(objects: Objects) -> list[str]:
    """Everything the build does wrong, by every check."""
    checks = (priority, spread, read_only, budgets, aggregation, network, writer_policy)
    return [found for check in checks for found in check(objects)]


def priority(objects: Objects) -> list[str]:
    found = []
    classes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PriorityClass"}
    if workloads(objects) and PRIORITY_CLASS not in classes:
        found.append(f"no PriorityClass {PRIORITY_CLASS} beside the workloads")
    for workload in workloads(objects):
        named = workload["spec"]["template"]["spec"].get("priorityClassName")
        if named != PRIORITY_CLASS:
            found.append(f"{name_of(workload)}: priorityClassName {named!r}")
    for pc in classes.values():
        if pc.get("globalDefault") is not False:
            found.append(f"{name_of(pc)}: globalDefault {pc.get('globalDefault')!r}")
        if not 0 < pc["value"] <= HIGHEST_VALUE:
            found.append(f"{name_of(pc)}: value {pc['value']} not in 1..{HIGHEST_VALUE}")
        if pc.get("preemptionPolicy") not in ("PreemptLowerPriority", "Never"):
            found.append(f"{name_of(pc)}: no preemptionPolicy stated")
        if not pc.get("description"):
            found.append(f"{name_of(pc)}: no description")
    return found


def spread(objects: Objects) -> list[str]:
    found = []
    for workload in (w for w in workloads(objects) if is_metacontroller(w)):
        template = workload["spec"]["template"]
        labels = template["metadata"].get("labels") or {}
        hard = [
            c
            for c in template["spec"].get("topologySpreadConstraints") or ()
            if c["topologyKey"] == "kubernetes.io/hostname"
            and c["whenUnsatisfiable"] == "DoNotSchedule"
            and c["maxSkew"] == 1
            and c.get("nodeTaintsPolicy") == "Honor"
            and c.get("nodeAffinityPolicy", "Honor") == "Honor"
            and selects(c.get("labelSelector"), labels)
        ]
        if not hard:
            found.append(f"{name_of(workload)}: no hard spread over kubernetes.io/hostname")
        if workload["spec"].get("replicas", 1) < 2:
            found.append(f"{name_of(workload)}: fewer than two replicas")
    return found


def read_only(objects: Objects) -> list[str]:
    found = []
    for workload in workloads(objects):
        spec = workload["spec"]["template"]["spec"]
        for container in [*spec.get("initContainers", ()), *spec["containers"]]:
            if (container.get("securityContext") or {}).get("readOnlyRootFilesystem") is not True:
                found.append(f"{name_of(workload)}: container {container['name']} writable")
    return found


def _count(value: int | str, replicas: int, round_up: bool) -> int:
    if isinstance(value, int):
        return value
    share = replicas * int(value.rstrip("%")) / 100
    return math.ceil(share) if round_up else math.floor(share)


def evictions_allowed(budget: dict[str, Any], replicas: int) -> int:
    """How many of `replicas` healthy pods the budget lets a drain evict (the disruption
    controller's arithmetic: minAvailable rounds up, maxUnavailable rounds up)."""
    spec = budget["spec"]
    if "minAvailable" in spec:
        return max(0, replicas - _count(spec["minAvailable"], replicas, round_up=True))
    return max(0, min(replicas, _count(spec["maxUnavailable"], replicas, round_up=True)))


def budgets(objects: Objects) -> list[str]:
    found = []
    for budget in (o for o in objects if o["kind"] == "PodDisruptionBudget"):
        namespace = budget["metadata"].get("namespace")
        for workload in workloads(objects):
            labels = workload["spec"]["template"]["metadata"].get("labels") or {}
            if workload["metadata"].get("namespace") != namespace or not selects(
                budget["spec"].get("selector"), labels
            ):
                continue
            replicas = workload["spec"].get("replicas", 1)
            allowed = evictions_allowed(budget, replicas)
            if allowed < 1:
                found.append(f"{name_of(budget)}: blocks every drain of {name_of(workload)}")
            if replicas >= 2 and allowed >= replicas:
                found.append(f"{name_of(budget)}: lets a drain evict all of {name_of(workload)}")
    return found


def aggregating(role: dict[str, Any]) -> list[str]:
    """The labels by which `role` joins an aggregated role."""
    labels = role["metadata"].get("labels") or {}
    return [k for k in labels if "/aggregate-to-" in k or k in KUEUE_BATCH]


def aggregation(objects: Objects) -> list[str]:
    found = []
    for role in (o for o in objects if o["kind"] in ("ClusterRole", "Role")):
        labels = aggregating(role)
        builtin = [k for k in labels if k.startswith(BUILTIN_AGGREGATE)]
        if builtin:
            found.append(f"{name_of(role)}: joins the built-in roles ({', '.join(builtin)})")
        if labels and is_metacontroller(role):
            found.append(f"{name_of(role)}: a role of Metacontroller's that aggregates")
        for rule in (role.get("rules") or ()) if labels else ():
            groups, resources = set(rule.get("apiGroups", ())), set(rule.get("resources", ()))
            if groups != {"kubeflow.org"} or not resources <= MXJOB_RESOURCES:
                found.append(f"{name_of(role)}: aggregates more than MXJobs ({rule})")
    return found


def egress_open(policies: Iterable[dict[str, Any]], pod: Pod) -> bool:
    """Whether `pod` may open any connection: no policy isolates its egress, or one has a rule."""
    chosen = [
        p
        for p in policies
        if p["metadata"].get("namespace") == pod.namespace
        and "Egress" in (p["spec"].get("policyTypes") or ())
        and selects(p["spec"].get("podSelector") or {}, pod.labels)
    ]
    return not chosen or any(p["spec"].get("egress") for p in chosen)


def network(objects: Objects) -> list[str]:
    found = []
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    ours = pods(objects)
    for key, pod in ours.items():
        if pod.labels.get("app.kubernetes.io/component") == "sync-hook" and egress_open(
            policies, pod
        ):
            found.append(f"{key}: the hook may open connections")
    sources = [
        Pod(namespace, labels)
        for namespace in ("tenant", "default", "kube-system", "metacontroller", "monitoring")
        for labels in ({}, *(p.labels for p in ours.values()))
    ]
    for key, pod in ours.items():
        if pod.labels.get("app.kubernetes.io/name") != "metacontroller":
            continue
        for source in sources:
            allowed = {METACONTROLLER_METRICS} if source.namespace == "monitoring" else set()
            if not reachable(policies, source, pod, PORTS_TRIED) <= allowed:
                found.append(f"{key}: reachable from {source}")
    return found


def writer_policy(objects: Objects) -> list[str]:
    writers = [w for w in workloads(objects) if w["metadata"]["name"] == WRITER]
    if not writers:
        return []
    (writer,) = writers
    account = writer["spec"]["template"]["spec"]["serviceAccountName"]
    who = f"system:serviceaccount:{writer['metadata']['namespace']}:{account}"
    policies = [o for o in objects if o["metadata"]["name"] == WRITER]
    policy = next((o for o in policies if o["kind"] == "ValidatingAdmissionPolicy"), None)
    binding = next((o for o in policies if o["kind"].endswith("PolicyBinding")), None)
    if policy is None or binding is None:
        return ["the Kueue status writer runs without its admission policy and binding"]
    spec, found = policy["spec"], []
    conditions = [c["expression"] for c in spec.get("matchConditions", ())]
    if conditions != [f"request.userInfo.username == '{who}'"]:
        found.append(f"{name_of(policy)}: matches {conditions}, not {who}")
    rules = spec["matchConstraints"]["resourceRules"]
    if [(r["apiGroups"], r["resources"], r["operations"]) for r in rules] != [
        (["kueue.x-k8s.io"], ["workloads/status"], ["UPDATE"])
    ]:
        found.append(f"{name_of(policy)}: matches {rules}")
    owner = spec["validations"][0]["expression"]
    if spec.get("failurePolicy") != "Fail" or "'MXJob'" not in owner:
        found.append(f"{name_of(policy)}: no MXJob-owner rule failing closed")
    if binding["spec"] != {"policyName": WRITER, "validationActions": ["Deny"]}:
        found.append(f"{name_of(binding)}: {binding['spec']}")
    return found
