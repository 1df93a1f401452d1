"""Metacontroller's ClusterRole in the with-metacontroller overlay, alone and with each component:
no wildcard, no Secrets, no RBAC kinds; every child kind of the CompositeController is granted,
every related kind the customize hook asks for is readable; docs/install.md gives the same rules
for Metacontroller's Helm chart. That the role is enough is shown on the real stack
(tests/apiserver/test_metacontroller_rbac.py and every real-stack test, which run under it)."""

import re
from collections.abc import Sequence
from typing import Any

import pytest
import yaml

from app.integrations.kueue import customize as customize_answer
from tests.support import REPO
from tests.support.kustomize import overlay_objects

OVERLAY = "with-metacontroller"
ROLE = "metacontroller"
CHILD_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}
READ = {"get", "list", "watch"}
# What no role of the install may grant: Secrets, and the kinds that grant rights.
FORBIDDEN_GROUPS = {"rbac.authorization.k8s.io", "certificates.k8s.io"}
FORBIDDEN_RESOURCES = {"secrets", "serviceaccounts/token", "tokenreviews"}
ALL_COMPONENTS = (
    "events", "katib", "kube-state-metrics", "kueue", "kueue-status",
    "monitoring", "networkpolicy-monitoring", "openshift", "ttl-controller", "volcano",
)  # fmt: skip
COMPONENT_SETS = [
    pytest.param((), id="alone"),
    pytest.param(("kueue",), id="kueue"),
    pytest.param(("volcano",), id="volcano"),
    pytest.param(("scheduler-plugins",), id="scheduler-plugins"),
    pytest.param(("events",), id="events"),
    pytest.param(("kueue", "volcano", "events"), id="kueue-volcano-events"),
    # Every component at once (but scheduler-plugins, which volcano's PodGroup excludes, and
    # adoption-guard, which the overlay has).
    pytest.param(ALL_COMPONENTS, id="all"),
]
INSTALL_MD = REPO / "docs" / "install.md"


def roles(objects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in objects if d["kind"] in ("Role", "ClusterRole")]


def metacontroller_rules(objects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    (role,) = (d for d in roles(objects) if d["metadata"]["name"] == ROLE)
    return list(role["rules"])


def granted(rules: list[dict[str, Any]], group: str, resource: str) -> set[str]:
    """The verbs `rules` grant on `resource` of `group`."""
    return {
        verb
        for rule in rules
        if group in rule.get("apiGroups", ()) and resource in rule.get("resources", ())
        for verb in rule["verbs"]
    }


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


@pytest.mark.parametrize("components", COMPONENT_SETS)
def test_no_role_grants_a_wildcard_secrets_or_rbac(components: tuple[str, ...]) -> None:
    objects = overlay_objects(OVERLAY, *components)
    assert roles(objects)
    for role in roles(objects):
        for rule in role["rules"]:
            fields = ("apiGroups", "resources", "verbs", "nonResourceURLs", "resourceNames")
            words = [w for f in fields for w in rule.get(f, ())]
            assert not [w for w in words if "*" in w], (role["metadata"]["name"], rule)
            assert not FORBIDDEN_RESOURCES & set(rule.get("resources", ())), rule
            assert not FORBIDDEN_GROUPS & set(rule.get("apiGroups", ())), rule


def lease_rules(role: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in role["rules"] if "leases" in r.get("resources", ())]


@pytest.mark.parametrize("components", COMPONENT_SETS)
def test_no_role_grants_a_lease_outside_its_namespace_or_a_revision_write(
    components: tuple[str, ...],
) -> None:
    """Leases only through Roles (a namespace's own), and Metacontroller's `get` and `update`
    only on its own Lease; ControllerRevisions read only (it writes none for our controller)."""
    objects = overlay_objects(OVERLAY, *components)
    for role in roles(objects):
        name = role["kind"], role["metadata"]["name"]
        assert role["kind"] == "Role" or not lease_rules(role), name
        for rule in role["rules"]:
            if "controllerrevisions" in rule.get("resources", ()):
                assert set(rule["verbs"]) <= READ, (name, rule)
    (election,) = [r for r in roles(objects) if lease_rules(r)]
    assert election["metadata"]["namespace"] == "metacontroller"
    assert lease_rules(election) == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "resourceNames": ["metacontroller"], "verbs": ["get", "update"]},
    ]  # fmt: skip


def test_the_parents_finalizers_are_updatable_for_blockownerdeletion() -> None:
    """OwnerReferencesPermissionEnforcement lets Metacontroller set blockOwnerDeletion on a
    child only with `update` on mxjobs/finalizers; every child, of any component, has the
    MXJob as its owner, so this one rule serves them all."""
    rules = metacontroller_rules(overlay_objects(OVERLAY))
    assert granted(rules, "kubeflow.org", "mxjobs/finalizers") == {"update"}


@pytest.mark.parametrize("components", COMPONENT_SETS)
def test_metacontroller_may_manage_every_child_and_read_every_related_kind(
    components: tuple[str, ...],
) -> None:
    objects = overlay_objects(OVERLAY, *components)
    rules = metacontroller_rules(objects)
    (controller,) = (d for d in objects if d["kind"] == "CompositeController")
    parent = controller["spec"]["parentResource"]
    assert granted(rules, group_of(parent["apiVersion"]), parent["resource"]) == READ
    assert granted(rules, group_of(parent["apiVersion"]), f"{parent['resource']}/status") == {
        "update"
    }
    for child in controller["spec"]["childResources"]:
        assert granted(rules, group_of(child["apiVersion"]), child["resource"]) == CHILD_VERBS
    customize = "customize" in controller["spec"]["hooks"]
    assert customize == ("kueue" in components)
    # What the customize hook asks for a job in namespace "ns": the cluster-wide kinds and
    # that namespace's own (its Namespace, its default LocalQueue).
    answer = customize_answer({"parent": {"metadata": {"namespace": "ns"}}})
    assert answer is not None
    for related in answer["relatedResources"] if customize else ():
        assert granted(rules, group_of(related["apiVersion"]), related["resource"]) == READ


def test_the_binding_gives_the_role_to_metacontrollers_service_account_only() -> None:
    objects = overlay_objects(OVERLAY)
    bindings = [
        d for d in objects if d["kind"] == "ClusterRoleBinding" and d["roleRef"]["name"] == ROLE
    ]
    assert [b["subjects"] for b in bindings] == [
        [{"kind": "ServiceAccount", "name": "metacontroller", "namespace": "metacontroller"}]
    ]


def documented_helm_values() -> dict[str, Any]:
    """docs/install.md's values for Metacontroller's Helm chart (`metacontroller-helm`)."""
    (values,) = re.findall(
        r"```yaml\n(# values for metacontroller-helm\n.*?)```", INSTALL_MD.read_text(), re.S
    )
    found: dict[str, Any] = yaml.safe_load(values)
    return found


def documented_rules() -> dict[str, list[dict[str, Any]]]:
    """docs/install.md's rules for Metacontroller's Helm chart: its `clusterRole.rules` value,
    and the rules each component adds (component name: rules)."""
    text = INSTALL_MD.read_text()
    found = {"": documented_helm_values()["clusterRole"]["rules"]}
    for name, block in re.findall(
        r"With `manifests/components/([\w-]+)`, add to `clusterRole.rules`:\n+```yaml\n(.*?)```",
        text,
        re.S,
    ):
        found[name] = yaml.safe_load(block)
    return found


def test_install_md_gives_the_shipped_rules_for_the_helm_chart() -> None:
    documented = documented_rules()
    shipped = metacontroller_rules(overlay_objects(OVERLAY))
    assert documented.pop("") == shipped
    assert sorted(documented) == ["events", "kueue", "scheduler-plugins", "volcano"]
    for component, rules in documented.items():
        with_it = metacontroller_rules(overlay_objects(OVERLAY, component))
        assert shipped + rules == with_it, component


def test_install_md_gives_the_overlays_leader_election_role_for_the_helm_chart() -> None:
    """The Role and binding docs/install.md gives a Metacontroller installed with its Helm chart
    are the overlay's, bound to the chart's ServiceAccount `<release>-metacontroller-helm`."""
    (block,) = re.findall(
        r"```yaml\n# leader election for metacontroller-helm\n(.*?)```",
        INSTALL_MD.read_text(),
        re.S,
    )
    documented = [d for d in yaml.safe_load_all(block) if d]
    shipped = [
        d for d in overlay_objects(OVERLAY)
        if d["kind"] in ("Role", "RoleBinding")
        and d["metadata"]["name"] == "metacontroller-leader-election"
    ]  # fmt: skip
    for document in shipped:
        document = yaml.safe_load(yaml.safe_dump(document))  # a copy
        document["metadata"].pop("labels")
        if document["kind"] == "RoleBinding":
            document["subjects"][0]["name"] = "metacontroller-metacontroller-helm"
        assert document in documented
    assert len(documented) == len(shipped) == 2
