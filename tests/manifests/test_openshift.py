"""The `openshift` component on with-metacontroller: Metacontroller's StatefulSet loses the UID
and GID it pins (OpenShift's restricted-v2 refuses them and assigns its own) and keeps the rest
of its securityContext; nothing else of the install changes. That `restricted` still admits the
result is shown by tests/apiserver/test_pod_security.py."""

from typing import Any

from tests.support.kustomize import overlay_objects

OVERLAY = "with-metacontroller"


def statefulset(objects: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == "StatefulSet"]
    return found


def test_openshift_leaves_metacontrollers_uid_to_the_platform() -> None:
    shipped = overlay_objects(OVERLAY)
    with_it = overlay_objects(OVERLAY, "openshift")
    before = statefulset(shipped)["spec"]["template"]["spec"]["securityContext"]
    after = statefulset(with_it)["spec"]["template"]["spec"]["securityContext"]
    assert before["runAsUser"] == before["runAsGroup"] == 65532
    assert after == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    # Only those two fields change.
    statefulset(with_it)["spec"]["template"]["spec"]["securityContext"] = before
    assert shipped == with_it
