"""`kubectl kustomize` (the real kubectl, the one `kubectl apply -k` runs) of every overlay, and
of every component on `with-metacontroller`, prints nothing on stderr: no
`Warning: 'commonLabels' is deprecated` on every install. Metacontroller's release manifests,
kept byte for byte (test_offline.py), are built through manifests/third_party/kustomization.yaml,
whose `labels:` give the same objects as the release's own `commonLabels:`."""

import subprocess
from pathlib import Path

import pytest

from tests.support import REPO
from tests.support.kustomize import OVERLAYS, RELEASE_COPY, kubectl, with_components

# with-metacontroller lists the adoption guard itself: listed again, it would be there twice.
COMPONENTS = sorted(
    p.name for p in (REPO / "manifests" / "components").iterdir() if p.name != "adoption-guard"
)


def kustomize(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [kubectl(), "kustomize", str(folder)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("overlay", sorted(p.name for p in OVERLAYS.iterdir()))
def test_an_overlay_builds_without_a_warning(overlay: str) -> None:
    built = kustomize(OVERLAYS / overlay)
    assert (built.returncode, built.stderr) == (0, "")


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_component_builds_without_a_warning(tmp_path: Path, component: str) -> None:
    built = kustomize(with_components(tmp_path / "mine", "with-metacontroller", component))
    assert (built.returncode, built.stderr) == (0, "")


def test_the_release_is_built_as_its_own_kustomization_builds_it() -> None:
    """The same objects, labels, selectors and pod template labels included; only the
    release's own build warns."""
    ours, theirs = kustomize(RELEASE_COPY.parent), kustomize(RELEASE_COPY)
    assert (ours.returncode, theirs.returncode) == (0, 0)
    assert ours.stdout == theirs.stdout
    assert "'commonLabels' is deprecated" in theirs.stderr
    assert ours.stderr == ""
