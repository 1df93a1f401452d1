"""`kubectl kustomize` (the real kubectl, the one `kubectl apply -k` runs) of every overlay, and
of every component on `with-metacontroller`, prints nothing on stderr: no
`Warning: 'commonLabels' is deprecated` on every install. Metacontroller's release manifests,
kept byte for byte (test_offline.py), are built through manifests/third_party/kustomization.yaml,
whose `labels:` give the same objects as the release's own `commonLabels:`. An overlay's
warnings are kept with its build (tests/support/kustomize_cache.py), so they are read, not
built again, while nothing the build reads changes."""

import pytest

from tests.support import REPO
from tests.support.kustomize import OVERLAYS, RELEASE_COPY, build_warnings, built_with_warnings

# with-metacontroller lists the adoption guard itself: listed again, it would be there twice.
COMPONENTS = sorted(
    p.name for p in (REPO / "manifests" / "components").iterdir() if p.name != "adoption-guard"
)


@pytest.mark.parametrize("overlay", sorted(p.name for p in OVERLAYS.iterdir()))
def test_an_overlay_builds_without_a_warning(overlay: str) -> None:
    assert build_warnings(overlay) == ""  # a failed build fails the test, with kubectl's error


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_component_builds_without_a_warning(component: str) -> None:
    assert build_warnings("with-metacontroller", component) == ""


def test_the_release_is_built_as_its_own_kustomization_builds_it() -> None:
    """The same objects, labels, selectors and pod template labels included; only the
    release's own build warns."""
    (ours, our_warnings), (theirs, their_warnings) = (
        built_with_warnings(RELEASE_COPY.parent),
        built_with_warnings(RELEASE_COPY),
    )  # each a failed build fails the test, with kubectl's error
    assert ours == theirs
    assert "'commonLabels' is deprecated" in their_warnings
    assert our_warnings == ""
