"""What the user-facing docs point at exists: every relative link and its anchor, every `make`
target, every repository path in code (tests/support/doclinks.py says how each is found)."""

import re
from pathlib import Path

import pytest

from app.core.model import conditions
from app.integrations import INTEGRATIONS
from tests.support import REPO
from tests.support.doclinks import broken_links, missing_paths, missing_targets

PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]
# Paths in other projects' repositories that these pages name, each beside its project's name.
ELSEWHERE = frozenset({
    "manifests/production",  # Metacontroller's release manifests
    "manifests/production/metacontroller-crds-v1.yaml",
    "manifests/metacontroller-crds-v1.yaml",
    "metacontroller/deploy/helm/metacontroller",  # Metacontroller's chart
    "manifests/coscheduling/crd.yaml",  # scheduler-plugins' PodGroup CRD
    "app/rbac.go",  # kube-controller-manager's aggregation and GC controllers
    "app/core.go",
})  # fmt: skip


def name(page: Path) -> str:
    return str(page.relative_to(REPO))


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_every_relative_link_and_anchor_exists(page: Path) -> None:
    assert list(broken_links(page, REPO)) == []


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_every_make_target_named_exists(page: Path) -> None:
    assert list(missing_targets(page, REPO)) == []


# CHANGELOG.md's released sections name files as they were then (`examples/byteps.yaml` is gone).
@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "CHANGELOG.md"], ids=name)
def test_every_repository_path_named_exists(page: Path) -> None:
    assert list(missing_paths(page, REPO, ELSEWHERE)) == []


def test_the_readme_names_every_condition_type() -> None:
    readme = (REPO / "README.md").read_text()
    listed = re.search(r"status conditions \((.*?)\)\.", readme, re.S)
    assert listed, "README's How it works lists the job's status conditions"
    guests = {t for integration in INTEGRATIONS for t in integration.condition_types}
    assert set(re.findall(r"`(\w+)`", listed.group(1))) == set(conditions.TYPES) | guests
