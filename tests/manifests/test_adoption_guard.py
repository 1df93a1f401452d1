"""The adoption guard (manifests/components/adoption-guard) matches every kind of child: each
childResources entry of the CompositeController that an overlay renders, or the standalone
overlay with any one component, is an update one of the policy's resourceRules matches. A
component that adds a kind of child cannot leave it open to a takeover by server-side apply.
The real API server's answer, kind by kind: tests/apiserver/test_adoption_guard.py."""

from typing import Any

import pytest
import yaml

from localcluster.stack import ADOPTION_GUARD
from tests.support import REPO
from tests.support.kustomize import overlay_objects
from tests.support.overlays import LAYOUT

COMPONENTS = sorted(p.name for p in (REPO / "manifests" / "components").iterdir())
CONFIG_MAPS = {"apiVersion": "v1", "resource": "configmaps"}
WORKLOADS = {"apiVersion": "kueue.x-k8s.io/v1beta2", "resource": "workloads"}


def guard_rules() -> list[dict[str, Any]]:
    (policy,) = (
        d
        for d in yaml.safe_load_all(ADOPTION_GUARD.read_text())
        if d["kind"] == "ValidatingAdmissionPolicy"
    )
    rules: list[dict[str, Any]] = policy["spec"]["matchConstraints"]["resourceRules"]
    return rules


def guarded(child: dict[str, Any], rules: list[dict[str, Any]]) -> bool:
    """Whether an update of `child` (a childResources entry) is matched by one of `rules`."""
    group, _, version = child["apiVersion"].rpartition("/")
    wanted = {
        "apiGroups": group,
        "apiVersions": version,
        "resources": child["resource"],
        "operations": "UPDATE",
    }
    return any(
        all(value in rule[field] or "*" in rule[field] for field, value in wanted.items())
        for rule in rules
    )


@pytest.mark.parametrize(
    ("child", "rules", "expected"),
    [
        pytest.param(CONFIG_MAPS, guard_rules(), True, id="a-configmap"),
        pytest.param(WORKLOADS, guard_rules(), True, id="a-workload"),
        pytest.param(
            WORKLOADS,
            [r for r in guard_rules() if "kueue.x-k8s.io" not in r["apiGroups"]],
            False,
            id="a-workload-without-its-rule",
        ),
        pytest.param(
            CONFIG_MAPS,
            [r | {"operations": ["CREATE"]} for r in guard_rules()],
            False,
            id="creates-only",
        ),
        pytest.param(
            CONFIG_MAPS,
            [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}],
            True,
            id="wildcards",
        ),
    ],
)
def test_guarded(child: dict[str, Any], rules: list[dict[str, Any]], expected: bool) -> None:
    assert guarded(child, rules) is expected


BUILDS = [(o,) for o in sorted(LAYOUT)] + [("standalone", c) for c in COMPONENTS]


def children(build: tuple[str, ...]) -> list[dict[str, Any]]:
    """The childResources of the CompositeController `build` renders (an overlay and components)."""
    (controller,) = (d for d in overlay_objects(*build) if d["kind"] == "CompositeController")
    entries: list[dict[str, Any]] = controller["spec"]["childResources"]
    return entries


@pytest.mark.parametrize("build", BUILDS, ids="+".join)
def test_the_guard_matches_every_child_kind(build: tuple[str, ...]) -> None:
    assert [c for c in children(build) if not guarded(c, guard_rules())] == []


def test_the_builds_declare_every_kind_of_child() -> None:
    """What the case above covers, among them each component's kinds."""
    kinds = {(c["apiVersion"], c["resource"]) for build in BUILDS for c in children(build)}
    assert kinds == {
        ("v1", "configmaps"),
        ("v1", "pods"),
        ("v1", "services"),
        ("v1", "events"),
        ("kueue.x-k8s.io/v1beta2", "workloads"),
        ("scheduling.volcano.sh/v1beta1", "podgroups"),
        ("scheduling.x-k8s.io/v1alpha1", "podgroups"),
    }
