"""The NetworkPolicy evaluator of the manifest tests (tests/support/netpol.py), on the cases of
the NetworkPolicy documentation: who is isolated, which peers and which ports a rule admits."""

from typing import Any

import pytest

from tests.support.netpol import Pod, admits, pods

WEB = Pod("app", {"role": "web"}, {("http", "TCP"): 8080}, frozenset({(8080, "TCP")}))
SAME_NS = Pod("app", {"role": "client"})
OTHER_NS = Pod("other", {"role": "client"})
NS_LABELS = {"app": {"kubernetes.io/metadata.name": "app"},
             "other": {"kubernetes.io/metadata.name": "other", "team": "a"}}  # fmt: skip


def policy(spec: dict[str, Any], namespace: str = "app") -> dict[str, Any]:
    return {"kind": "NetworkPolicy", "metadata": {"name": "p", "namespace": namespace},
            "spec": {"podSelector": {}} | spec}  # fmt: skip


DENY = {"policyTypes": ["Ingress"], "ingress": []}
FROM_TEAM_A = {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}
CASES = {
    "no-policy-admits-all": ([], OTHER_NS, 1, True),
    "empty-ingress-denies": ([policy(DENY)], SAME_NS, 8080, False),
    "policy-in-another-namespace-does-not-isolate": ([policy(DENY, "other")], OTHER_NS, 8080, True),
    "egress-only-does-not-isolate": ([policy({"policyTypes": ["Egress"]})], OTHER_NS, 8080, True),
    "no-policy-types-isolates-ingress": ([policy({"ingress": []})], OTHER_NS, 8080, False),
    "unselected-pod-is-open": (
        [policy(DENY | {"podSelector": {"matchLabels": {"role": "db"}}})], OTHER_NS, 8080, True),
    "match-expressions-select": (
        [policy(DENY | {"podSelector": {"matchExpressions": [
            {"key": "role", "operator": "In", "values": ["web"]}]}})], OTHER_NS, 8080, False),
    "rule-without-from-admits-every-source": (
        [policy(DENY | {"ingress": [{"ports": [{"port": 8080}]}]})], OTHER_NS, 8080, True),
    "rule-without-ports-admits-every-port": (
        [policy(DENY | {"ingress": [FROM_TEAM_A]})], OTHER_NS, 1, True),
    "namespace-selector-admits-its-namespaces": (
        [policy(DENY | {"ingress": [FROM_TEAM_A]})], SAME_NS, 8080, False),
    "pod-selector-alone-is-the-policys-namespace": (
        [policy(DENY | {"ingress": [{"from": [{"podSelector": {}}]}]})], OTHER_NS, 8080, False),
    "pod-selector-alone-admits-its-namespace": (
        [policy(DENY | {"ingress": [{"from": [{"podSelector": {}}]}]})], SAME_NS, 8080, True),
    "both-selectors-are-and": (
        [policy(DENY | {"ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}},
                                               "podSelector": {"matchLabels": {"role": "x"}}}]}]})],
        OTHER_NS, 8080, False),
    "named-port-resolves-to-the-container-port": (
        [policy(DENY | {"ingress": [{"ports": [{"port": "http"}]}]})], OTHER_NS, 8080, True),
    "named-port-is-not-another-port": (
        [policy(DENY | {"ingress": [{"ports": [{"port": "http"}]}]})], OTHER_NS, 9090, False),
    "unknown-port-name-admits-nothing": (
        [policy(DENY | {"ingress": [{"ports": [{"port": "metrics"}]}]})], OTHER_NS, 8080, False),
    "protocol-must-match": (
        [policy(DENY | {"ingress": [{"ports": [{"port": 8080, "protocol": "UDP"}]}]})],
        OTHER_NS, 8080, False),
    "end-port-range": (
        [policy(DENY | {"ingress": [{"ports": [{"port": 8000, "endPort": 8100}]}]})],
        OTHER_NS, 8080, True),
    "policies-add-up": ([policy(DENY), policy({"ingress": [{}]}, "app")], OTHER_NS, 8080, True),
    "ip-block-taken-to-admit": (
        [policy(DENY | {"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]})],
        OTHER_NS, 8080, True),
}  # fmt: skip


@pytest.mark.parametrize(("policies", "source", "port", "expected"), CASES.values(), ids=CASES)
def test_admits(policies: list[dict[str, Any]], source: Pod, port: int, expected: bool) -> None:
    assert admits(policies, source, NS_LABELS[source.namespace], WEB, port) is expected


def test_pods_of_workloads_with_their_named_ports() -> None:
    deployment = {
        "kind": "Deployment", "metadata": {"name": "d", "namespace": "app"},
        "spec": {"template": {"metadata": {"labels": {"role": "web"}}, "spec": {"containers": [
            {"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]}}},
    }  # fmt: skip
    assert pods([deployment, {"kind": "Service"}]) == {"Deployment/app/d": WEB}
