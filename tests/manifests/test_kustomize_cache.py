"""Overlay builds kept between runs (tests/support/kustomize_cache.py) are what kustomize builds
now: their key sees every file a build reads, a kept build equals a fresh one, and the objects
kept as JSON are the build's."""

from pathlib import Path

import pytest

from tests.support import kustomize, kustomize_cache, yamls
from tests.support.kustomize_cache import ROOTS, cached, inputs_digest, outside_references

KUSTOMIZATION = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"


def test_no_kustomization_reads_outside_the_folders_the_key_covers() -> None:
    assert outside_references(ROOTS) == []


@pytest.mark.parametrize(
    ("field", "reference"),
    [
        ("resources:\n  - ../../elsewhere\n", "../../elsewhere"),
        ("components:\n  - ../../elsewhere\n", "../../elsewhere"),
        ("patches:\n  - path: ../../elsewhere/p.yaml\n", "../../elsewhere/p.yaml"),
        ("configMapGenerator:\n  - name: c\n    files:\n      - k=../../f\n", "../../f"),
    ],
    ids=["resources", "components", "patches", "generator-files"],
)
def test_a_reference_outside_the_folders_is_found(
    tmp_path: Path, field: str, reference: str
) -> None:
    (tmp_path / "root" / "overlay").mkdir(parents=True)
    (tmp_path / "root" / "overlay" / "kustomization.yaml").write_text(KUSTOMIZATION + field)
    (tmp_path / "root" / "base").mkdir()
    inside = KUSTOMIZATION + "resources:\n  - ../overlay\n"
    (tmp_path / "root" / "base" / "kustomization.yaml").write_text(inside)
    found = outside_references((tmp_path / "root",))
    assert found == [f"root/overlay/kustomization.yaml: {reference}"]


def test_the_key_changes_with_any_file_and_with_kubectl(tmp_path: Path) -> None:
    root = tmp_path / "manifests"
    (root / "base").mkdir(parents=True)
    (root / "base" / "crd.yaml").write_text("a: 1\n")
    kubectl = tmp_path / "kubectl"
    kubectl.write_text("1")
    first = inputs_digest((root,), str(kubectl))
    assert inputs_digest((root,), str(kubectl)) == first
    (root / "base" / "crd.yaml").write_text("a: 2\n")
    edited = inputs_digest((root,), str(kubectl))
    (root / "base" / "new.yaml").write_text("")
    added = inputs_digest((root,), str(kubectl))
    kubectl.write_text("22")
    assert len({first, edited, added, inputs_digest((root,), str(kubectl))}) == 4


def test_a_kept_build_is_read_and_a_missing_one_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[str] = []

    def build() -> str:
        builds.append("built")
        return "kind: A\n"

    monkeypatch.setattr(kustomize_cache, "folder", tmp_path)
    assert [cached("k", build), cached("k", build), cached("other", build)] == ["kind: A\n"] * 3
    assert builds == ["built", "built"]
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".yaml", ".yaml"]
    monkeypatch.setattr(kustomize_cache, "folder", None)
    cached("k", build)
    assert len(builds) == 3


@pytest.mark.parametrize("overlay", ["standalone", "with-metacontroller"])
def test_a_kept_build_is_the_build_kustomize_gives_now(overlay: str) -> None:
    kept = (kustomize.build_overlay(overlay), kustomize.build_warnings(overlay))
    assert kept == kustomize.built_with_warnings(kustomize.OVERLAYS / overlay)


@pytest.mark.parametrize("overlay", ["standalone", "with-metacontroller"])
def test_the_objects_kept_as_json_are_the_builds(overlay: str) -> None:
    objects = yamls.load_all(kustomize.build_overlay(overlay))
    assert list(kustomize.overlay_objects(overlay)) == objects


def test_objects_that_json_would_change_are_refused() -> None:
    with pytest.raises(AssertionError, match="do not read back the same"):
        kustomize.as_json([{"metadata": {"labels": {1: "a number as a key"}}}])


def test_the_objects_are_kept_in_a_json_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kustomize_cache, "folder", tmp_path)
    assert cached("k", lambda: "[]", suffix=".json") == "[]"
    assert [p.suffix for p in tmp_path.iterdir()] == [".json"]
