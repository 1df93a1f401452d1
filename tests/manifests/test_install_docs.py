"""Every kustomization shown in docs/install.md, README.md, docs/metrics.md and docs/katib.md, laid out as the text says (a
folder beside the checkout's `manifests/`, `my-install/` where the block names it), builds with
the real `kubectl kustomize`: every Deployment's image names a registry and a version, and every
namespace its objects go to is created by the same build, but Kubeflow's `kubeflow`, which the
kubeflow overlay expects to exist."""

import re
from pathlib import Path
from typing import Any

import pytest

from app import __version__
from tests.support import REPO
from tests.support.kustomize import kept_documents

DOCS = ["docs/install.md", "README.md", "docs/metrics.md", "docs/katib.md"]
# The kubeflow overlay's namespace, Kubeflow's, never created by us; kube-system, where
# kube-state-metrics' own manifests run it (the kube-state-metrics component's ConfigMap).
EXISTING = {"kubeflow", "kube-system"}
# A registry host (a dot or a port in the first part) and a version tag.
PULLABLE = re.compile(r"[a-z0-9.-]+(\.[a-z]+|:\d+)/[a-z0-9./_-]+:\d+\.\d+\.\d+")


def kustomizations() -> list[Any]:
    found = []
    for doc in DOCS:
        text = (REPO / doc).read_text()
        for match in re.finditer(r"```ya?ml\n(.*?)```", text, re.S):
            block = match.group(1)
            if "kind: Kustomization" not in block:
                continue
            line = text[: match.start()].count("\n") + 2
            found.append(pytest.param(block, id=f"{doc}:{line}"))
    return found


def test_the_docs_show_kustomizations() -> None:
    assert len(kustomizations()) >= 4


def build(tmp_path: Path, block: str) -> list[dict[str, Any]]:
    named = re.match(r"# ([\w.-]+)/kustomization\.yaml\n", block)
    folder = tmp_path / (named.group(1) if named else "my-overlay")
    folder.mkdir()
    (tmp_path / "manifests").symlink_to(REPO / "manifests")
    (folder / "kustomization.yaml").write_text(block)
    return kept_documents(folder)


@pytest.mark.parametrize("block", kustomizations())
def test_docs_kustomization_is_pullable_and_creates_its_namespace(
    tmp_path: Path, block: str
) -> None:
    objects = build(tmp_path, block)
    deployments = [d for d in objects if d["kind"] == "Deployment"]
    assert deployments
    for deployment in deployments:
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            assert PULLABLE.fullmatch(container["image"]), container["image"]
            assert container["image"].endswith(f":{__version__}")
    created = {d["metadata"]["name"] for d in objects if d["kind"] == "Namespace"}
    used = {d["metadata"]["namespace"] for d in objects if "namespace" in d["metadata"]}
    assert used - created <= EXISTING


def test_the_other_namespace_example(tmp_path: Path) -> None:
    """ "Or another namespace": everything in ml-platform, which the build creates restricted,
    and the CompositeController calls the hook there."""
    (block,) = (
        p.values[0] for p in kustomizations() if "namespace: ml-platform" in str(p.values[0])
    )
    objects = build(tmp_path, str(block))
    (namespace,) = (d for d in objects if d["kind"] == "Namespace")
    assert namespace["metadata"]["name"] == "ml-platform"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    (controller,) = (d for d in objects if d["kind"] == "CompositeController")
    assert "namespace" not in controller["metadata"]
    assert controller["spec"]["hooks"]["sync"]["webhook"]["service"]["namespace"] == "ml-platform"
    assert {d["metadata"].get("namespace") for d in objects} == {None, "ml-platform"}


def test_migration_table_says_what_training_operator_did_in_every_row() -> None:
    """docs/migrating-from-training-operator.md, "What differs": no row leaves the
    training-operator column empty."""
    text = (REPO / "docs" / "migrating-from-training-operator.md").read_text()
    table = text.split("## What differs\n", 1)[1].strip().split("\n\n")[0]
    rows = [row.split(" | ") for row in table.splitlines()[2:]]
    assert len(rows) >= 9
    assert [row[0] for row in rows if len(row) < 4 or not row[1].strip()] == []
