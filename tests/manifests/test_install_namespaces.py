"""What the install does to the namespaces and to Metacontroller's StatefulSet: every namespace
an overlay creates, with any component, enforces the `restricted` Pod Security level (and audits
and warns at it); Metacontroller has requests and limits, its memory request covering the
largest job the hook accepts as measured (docs/performance.md)."""

import pytest

from tests.manifests.test_metacontroller_role import ALL_COMPONENTS
from tests.support.kustomize import overlay_objects
from tests.support.overlays import LAYOUT
from tests.support.quantities import mebibytes

RESTRICTED = {
    f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")
}
# Metacontroller's peak RSS for the largest job the hook accepts, 1/100/1000, in MiB
# (docs/performance.md, "Memory").
LARGEST_JOB_PEAK_MIB = 215


CASES = [pytest.param(o, (), id=o) for o in LAYOUT]
CASES.append(pytest.param("with-metacontroller", ALL_COMPONENTS, id="with-metacontroller+all"))


@pytest.mark.parametrize(("overlay", "components"), CASES)
def test_every_namespace_the_install_creates_enforces_restricted(
    overlay: str, components: tuple[str, ...]
) -> None:
    namespaces = [o for o in overlay_objects(overlay, *components) if o["kind"] == "Namespace"]
    assert bool(namespaces) == LAYOUT[overlay][1]
    for namespace in namespaces:
        labels = namespace["metadata"].get("labels") or {}
        assert RESTRICTED.items() <= labels.items(), namespace["metadata"]["name"]


def test_metacontroller_has_requests_and_limits_that_fit_the_largest_job() -> None:
    (statefulset,) = [
        o for o in overlay_objects("with-metacontroller") if o["kind"] == "StatefulSet"
    ]
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    resources = container["resources"]
    assert set(resources) == {"requests", "limits"}
    for part in ("requests", "limits"):
        assert set(resources[part]) == {"cpu", "memory"}, part
    assert mebibytes(resources["requests"]["memory"]) >= LARGEST_JOB_PEAK_MIB
    assert mebibytes(resources["limits"]["memory"]) >= 4 * LARGEST_JOB_PEAK_MIB
