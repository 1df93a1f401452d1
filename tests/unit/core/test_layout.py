"""How the job's pods read its ConfigMap (app/core/mxnet/layout.py): what the observed pods show, and
so the layout whose requests the size rule bounds (a pod keeps its env for life)."""

from typing import Any

import pytest

from app.core.mxnet import layout
from app.core.mxnet.layout import Layout

NONE = layout.ConfigMapUse()
OLD, WHOLE = layout.ConfigMapUse(old_keys=True), layout.ConfigMapUse(env_from=True)
BOTH = layout.ConfigMapUse(old_keys=True, env_from=True)
INLINE = layout.ConfigMapUse(inline=True)


def _released_pod(key: str, name: str = "mnist-mx-config") -> dict[str, Any]:
    ref = {"configMapKeyRef": {"name": name, "key": key}}
    env = [{"name": "MX_CONFIG_CLUSTER", "valueFrom": ref}, {"name": "MX_CONFIG", "value": "x"}]
    return {"spec": {"containers": [{"name": "mxnet", "env": env}]}}


def _current_pod(name: str = "mnist-mx-config") -> dict[str, Any]:
    env_from = [{"configMapRef": {"name": "mine"}}, {"configMapRef": {"name": name}}]
    return {"spec": {"containers": [{"name": "side"}, {"name": "mxnet", "envFrom": env_from}]}}


ODD_CONTAINERS = [None, {"env": [None, {"valueFrom": 1}], "envFrom": [None, {"configMapRef": 1}]}]
ODD_REF = {"configMapKeyRef": {"name": "mnist-mx-config", "key": []}}


@pytest.mark.parametrize(
    ("pods", "found"),
    [
        ([_released_pod("cluster")], OLD),
        ([_released_pod("labels")], OLD),
        ([_current_pod()], WHOLE),
        ([_current_pod(), _released_pod("cluster")], BOTH),
        ([_current_pod("other"), _released_pod("cluster", "other")], NONE),
        ([_released_pod("MX_CONFIG_CLUSTER")], NONE),
        ([], NONE),
        # Whatever Metacontroller sends, the hook does not fail on it.
        ([None, {"spec": None}, {"spec": {"containers": ODD_CONTAINERS}}], NONE),
        ([{"spec": {"containers": [{"env": [{"valueFrom": ODD_REF}]}]}}], NONE),
    ],
)
def test_how_the_pods_read_the_config_map(pods: list[Any], found: layout.ConfigMapUse) -> None:
    assert layout.config_map_use(pods, "mnist") == found


def _inline_pod(value: str) -> dict[str, Any]:
    env = [{"name": "MX_CONFIG", "value": value}]
    return {"spec": {"containers": [{"name": "mxnet", "env": env}]}}


@pytest.mark.parametrize(
    ("pods", "found"),
    [
        pytest.param([_inline_pod('{"cluster":{"worker":[]}}')], INLINE, id="mx-config-whole"),
        pytest.param([_inline_pod("$(MX_CONFIG_CLUSTER)")], NONE, id="mx-config-a-reference"),
        pytest.param(
            [_current_pod(), _inline_pod('{"cluster":{}}')],
            layout.ConfigMapUse(env_from=True, inline=True),
            id="an-inline-pod-among-new-ones",
        ),
    ],
)
def test_a_pod_that_carries_mx_config_whole_reads_no_config_map(
    pods: list[Any], found: layout.ConfigMapUse
) -> None:
    assert layout.config_map_use(pods, "mnist") == found


# The layout the size rule bounds: a pod keeps its env for life (docs/behaviour.md#children).
@pytest.mark.parametrize(
    ("config_map", "use", "expected"),
    [
        pytest.param(True, NONE, Layout.CONFIG_MAP, id="config-map"),
        pytest.param(True, WHOLE, Layout.CONFIG_MAP, id="pods-read-it-whole"),
        pytest.param(True, OLD, Layout.CONFIG_MAP_KEYS, id="a-pod-reads-0-1-0s-keys"),
        pytest.param(True, BOTH, Layout.CONFIG_MAP_KEYS, id="old-and-new-pods"),
        pytest.param(True, INLINE, Layout.INLINE, id="a-pod-carries-mx-config"),
        pytest.param(True, layout.ConfigMapUse(True, True, True), Layout.INLINE, id="inline-first"),
        pytest.param(False, NONE, Layout.INLINE, id="no-config-map-children"),
        pytest.param(False, OLD, Layout.INLINE, id="no-config-map-children-old-pods"),
    ],
)
def test_the_layout_the_requests_carry(
    config_map: bool, use: layout.ConfigMapUse, expected: Layout
) -> None:
    assert layout.layout_for(config_map, use) == expected
