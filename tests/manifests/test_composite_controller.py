"""Every overlay's CompositeController follows Metacontroller's API and names the hook's
children, hooks and Service as the overlay lays them out."""

from typing import Any

import jsonschema
import pytest

from tests.support.kustomize import overlay_objects
from tests.support.metacontroller_schema import COMPOSITE_CONTROLLER
from tests.support.overlays import KUEUE, LAYOUT, the


@pytest.mark.parametrize("overlay", LAYOUT)
def test_composite_controller_follows_metacontroller_api(overlay: str) -> None:
    jsonschema.Draft202012Validator(COMPOSITE_CONTROLLER).validate(
        the(overlay, "CompositeController")
    )


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"parentResource": {"apiVersion": "v1", "resources": "x"}}, id="misspelt"),
        pytest.param(
            {
                "parentResource": {"apiVersion": "v1", "resource": "x"},
                "hooks": {"sync": {"webhook": {"timeout": "10"}}},
            },
            id="timeout-without-unit",
        ),
    ],
)
def test_composite_controller_schema_is_strict(spec: dict[str, Any]) -> None:
    doc = {
        "apiVersion": "metacontroller.k8s.io/v1alpha1",
        "kind": "CompositeController",
        "metadata": {"name": "x"},
        "spec": spec,
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(COMPOSITE_CONTROLLER).validate(doc)


@pytest.mark.parametrize(("overlay", "layout"), LAYOUT.items())
def test_composite_controller(overlay: str, layout: tuple[str, bool, Any]) -> None:
    namespace, _, podgroup = layout
    in_place, on_delete = {"method": "InPlace"}, {"method": "OnDelete"}
    config_maps = {"apiVersion": "v1", "resource": "configmaps", "updateStrategy": in_place}
    pods = {"apiVersion": "v1", "resource": "pods", "updateStrategy": on_delete}
    services = {"apiVersion": "v1", "resource": "services", "updateStrategy": in_place}
    service = {"name": "mxjob-controller", "namespace": namespace, "port": 80, "protocol": "http"}
    hooks: dict[str, dict[str, Any]] = {
        "sync": {"webhook": {"service": service, "path": "/sync", "timeout": "10s"}}
    }
    if podgroup is KUEUE:
        # The customize hook hands every sync the ResourceFlavors and priority classes, which
        # Metacontroller v4.17.2 sends a namespaced parent's sync only under hook version v2.
        hooks["sync"]["version"] = "v2"
        hooks["customize"] = {
            "webhook": {"service": service, "path": "/customize", "timeout": "10s"}
        }
    assert the(overlay, "CompositeController")["spec"] == {
        "parentResource": {"apiVersion": "kubeflow.org/v1", "resource": "mxjobs"},
        "childResources": [config_maps, pods, services, *([podgroup] if podgroup else [])],
        "generateSelector": True,
        "hooks": hooks,
    }


def test_the_kueue_components_customize_hook_follows_the_hooks_namespace() -> None:
    """Added to an overlay that installs the hook elsewhere (kubeflow), the customize hook
    names the same Service as the sync hook."""
    objects = overlay_objects("kubeflow", "kueue")
    (controller,) = [d for d in objects if d["kind"] == "CompositeController"]
    hooks = controller["spec"]["hooks"]
    assert hooks["customize"]["webhook"]["service"] == hooks["sync"]["webhook"]["service"]
    assert hooks["sync"]["webhook"]["service"]["namespace"] == "kubeflow"
