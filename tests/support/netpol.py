"""Which connections a set of NetworkPolicies admits to a pod, as networking.k8s.io/v1 defines it
(the API reference and the Kubernetes documentation's "Network Policies" page), evaluated on
rendered manifests with no cluster.

What it models: a pod is isolated for ingress when any policy in its namespace selects it
(`podSelector`, matchLabels and matchExpressions) and lists `Ingress` in `policyTypes` (or,
without policyTypes, always: every policy governs ingress); an isolated pod admits a
connection when some such policy has an ingress rule whose `from` admits the source (absent or
empty: every source; a peer of `podSelector` alone: pods of the policy's namespace; of
`namespaceSelector` alone: every pod of the namespaces it selects; of both: the pods it selects
in those namespaces) and whose `ports` admit the destination port (absent or empty: every
port; a number; a name, resolved against the destination container's ports of that protocol;
`endPort` ranges; protocol TCP unless given). A pod no policy isolates admits everything.

What it does not model: `ipBlock` peers are taken to admit every pod (a pod's IP may be in any
block: the safe answer for "cannot reach"); egress policies of the source; traffic from the node
(the kubelet's probes), which NetworkPolicy always admits; host-network pods; whether the
cluster's network plugin enforces NetworkPolicy at all; AdminNetworkPolicy and plugin-specific
kinds; SCTP beyond its name.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Labels = Mapping[str, str]
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")


@dataclass(frozen=True)
class Pod:
    """A pod as a policy sees it: namespace, labels, and its containers' ports by name."""

    namespace: str
    labels: Labels
    # (name, protocol) -> number, of every container port that has a name.
    named_ports: Mapping[tuple[str, str], int] = field(default_factory=dict)
    # (number, protocol) of every container port declared.
    ports: frozenset[tuple[int, str]] = frozenset()


def selects(selector: Mapping[str, Any] | None, labels: Labels) -> bool:
    """A LabelSelector's verdict on `labels`; an empty selector selects everything."""
    if selector is None:
        return True
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expression(e, labels) for e in selector.get("matchExpressions") or ())


def _expression(expression: Mapping[str, Any], labels: Labels) -> bool:
    key, operator = expression["key"], expression["operator"]
    values = expression.get("values") or ()
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise ValueError(f"unknown selector operator {operator!r}")


def governs_ingress(policy: Mapping[str, Any]) -> bool:
    types = policy["spec"].get("policyTypes")
    return types is None or "Ingress" in types


def isolating(policies: Iterable[Mapping[str, Any]], pod: Pod) -> list[Mapping[str, Any]]:
    """The policies that select `pod` for ingress."""
    return [
        p
        for p in policies
        if p["metadata"].get("namespace") == pod.namespace
        and governs_ingress(p)
        and selects(p["spec"].get("podSelector") or {}, pod.labels)
    ]


def peer_admits(peer: Mapping[str, Any], policy_ns: str, source: Pod, ns_labels: Labels) -> bool:
    """Whether one `from` entry admits a connection from `source` (whose namespace has
    `ns_labels`)."""
    if "ipBlock" in peer:
        return True  # not modelled: see the module's header
    pods, namespaces = peer.get("podSelector"), peer.get("namespaceSelector")
    if namespaces is None and source.namespace != policy_ns:
        return False
    if namespaces is not None and not selects(namespaces, ns_labels):
        return False
    return pods is None or selects(pods, source.labels)


def port_admits(entry: Mapping[str, Any], port: int, protocol: str, dest: Pod) -> bool:
    """Whether one `ports` entry admits `port`/`protocol` on `dest`."""
    if entry.get("protocol", "TCP") != protocol:
        return False
    wanted = entry.get("port")
    if wanted is None:
        return True
    if isinstance(wanted, str):
        return dest.named_ports.get((wanted, protocol)) == port
    return bool(wanted <= port <= entry.get("endPort", wanted))


def admits(
    policies: Iterable[Mapping[str, Any]],
    source: Pod,
    ns_labels: Labels,
    dest: Pod,
    port: int,
    protocol: str = "TCP",
) -> bool:
    """Whether a connection from `source` to `port` of `dest` is admitted."""
    chosen = isolating(policies, dest)
    if not chosen:
        return True
    for policy in chosen:
        for rule in policy["spec"].get("ingress") or ():
            peers, ports = rule.get("from") or (), rule.get("ports") or ()
            policy_ns = policy["metadata"]["namespace"]
            if peers and not any(peer_admits(p, policy_ns, source, ns_labels) for p in peers):
                continue
            if not ports or any(port_admits(e, port, protocol, dest) for e in ports):
                return True
    return False


def reachable(
    objects: Iterable[Mapping[str, Any]], source: Pod, dest: Pod, ports: Iterable[int]
) -> set[int]:
    """The ports of `dest` that the NetworkPolicies among `objects` let `source` connect to,
    of `ports` and those `dest` declares; the source's namespace carries the label every
    namespace has (`kubernetes.io/metadata.name`, Kubernetes 1.22 and later)."""
    policies = [o for o in objects if o.get("kind") == "NetworkPolicy"]
    labels = {"kubernetes.io/metadata.name": source.namespace}
    tried = set(ports) | {number for number, _ in dest.ports}
    return {p for p in tried if admits(policies, source, labels, dest, p)}


def pods(objects: Iterable[Mapping[str, Any]]) -> dict[str, Pod]:
    """The pods each workload of `objects` runs, by `Kind/namespace/name` of the workload."""
    found = {}
    for obj in objects:
        if obj.get("kind") not in WORKLOADS:
            continue
        template = obj["spec"]["template"]
        containers = template["spec"].get("containers", [])
        declared = [p for c in containers for p in c.get("ports") or ()]
        key = f"{obj['kind']}/{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
        found[key] = Pod(
            namespace=obj["metadata"]["namespace"],
            labels=template["metadata"].get("labels") or {},
            named_ports={
                (p["name"], p.get("protocol", "TCP")): p["containerPort"]
                for p in declared
                if "name" in p
            },
            ports=frozenset((p["containerPort"], p.get("protocol", "TCP")) for p in declared),
        )
    return found
