"""Who may connect to the pods this project installs, from the rendered manifests (the real
`kubectl kustomize` of every overlay with the components that add pods or open them, and the
real `helm template` of the chart with the values that do), evaluated by tests/support/netpol.py:
no tenant pod of another namespace reaches any port of the hook, the TTL controller or the Kueue
status writer; Metacontroller's namespace reaches the hook's port only; the namespace
`monitoring` reaches each pod's metrics port, and nothing else, only with the monitoring
component (or chart value) on."""

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO
from tests.support.kustomize import overlay_objects
from tests.support.netpol import Pod, pods, reachable
from tests.support.overlays import LAYOUT

# Each of our pods, by its component label, and the name of the port Prometheus scrapes.
METRICS_PORT = {"sync-hook": "http", "ttl-controller": "metrics", "kueue-status": "metrics"}
OURS = "mxjob-controller"
MONITORING_ON = ("monitoring", "networkpolicy-monitoring")
# Component sets added to every overlay: none, each that adds pods, with and without monitoring.
COMPONENT_SETS = [(), ("ttl-controller",), MONITORING_ON, ("ttl-controller", *MONITORING_ON)]
KUSTOMIZE_CASES = {
    f"{overlay}+{'+'.join(components) or 'alone'}": (overlay, components)
    for overlay in LAYOUT
    for components in COMPONENT_SETS
}
SCRAPERS = (
    "--set-string",
    r"monitoring.namespaceSelector.kubernetes\.io/metadata\.name=monitoring",
)
TTL, KUEUE = ("--set", "ttlController.enabled=true"), ("--set", "kueue=true")
# helm values: name -> (values, monitoring on)
HELM_CASES = {
    "default": ((), False),
    "ttl-controller": (TTL, False),
    "kueue": (KUEUE, False),
    "monitoring": (SCRAPERS, True),
    "all": ((*TTL, *KUEUE, *SCRAPERS), True),
}
# Ports tried beyond those the pods declare: the usual ones, and both ends of the range.
OTHER_PORTS = {1, 22, 80, 443, 8080, 8443, 9090, 9443, 65535}


def source(namespace: str, labels: Mapping[str, str] | None = None) -> Pod:
    return Pod(namespace, labels or {})


# Tenants: a bare pod, and pods wearing each of our pods' labels, in namespaces of their own.
DISGUISES: list[dict[str, str]] = [
    {},
    *({"app.kubernetes.io/name": OURS, "app.kubernetes.io/component": c} for c in METRICS_PORT),
]
TENANTS = [
    source(namespace, labels)
    for namespace in ("tenant", "default", "kube-system")
    for labels in DISGUISES
]


def our_pods(objects: Any) -> dict[str, Pod]:
    """Our pods by component label (one workload each)."""
    found = [p for p in pods(objects).values() if p.labels.get("app.kubernetes.io/name") == OURS]
    by_component = {p.labels["app.kubernetes.io/component"]: p for p in found}
    assert len(by_component) == len(found)
    return by_component


def check(objects: Any, expected: set[str], monitoring: bool) -> None:
    ours = our_pods(objects)
    assert set(ours) == expected
    for component, pod in ours.items():
        for tenant in TENANTS:
            assert reachable(objects, tenant, pod, OTHER_PORTS) == set(), (component, tenant)
        metrics = {pod.named_ports[(METRICS_PORT[component], "TCP")]}
        scraper = source("monitoring", {"app.kubernetes.io/name": "prometheus"})
        assert reachable(objects, scraper, pod, OTHER_PORTS) == (
            metrics if monitoring else set()
        ), component
        caller = source("metacontroller", {"app.kubernetes.io/name": "metacontroller"})
        assert reachable(objects, caller, pod, OTHER_PORTS) == (
            metrics if component == "sync-hook" else set()
        )


@pytest.mark.parametrize(("overlay", "components"), KUSTOMIZE_CASES.values(), ids=KUSTOMIZE_CASES)
def test_overlays_and_components(overlay: str, components: tuple[str, ...]) -> None:
    expected = {"sync-hook"} | ({"ttl-controller"} if "ttl-controller" in components else set())
    if overlay == "kueue":
        expected.add("kueue-status")
    check(overlay_objects(overlay, *components), expected, "networkpolicy-monitoring" in components)


@pytest.mark.slow
@pytest.mark.parametrize(("values", "monitoring"), HELM_CASES.values(), ids=HELM_CASES)
def test_chart(go_tool: Callable[[str], Path], values: tuple[str, ...], monitoring: bool) -> None:
    chart = REPO / "charts" / "mxjob-controller"
    done = subprocess.run(
        [str(go_tool("helm")), "template", "mxjob-controller", str(chart), "--namespace",
         "mxjob-system", *values], capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    objects = [d for d in yaml.safe_load_all(done.stdout) if d]
    expected = {"sync-hook"}
    if "ttlController.enabled=true" in values:
        expected.add("ttl-controller")
    if "kueue=true" in values:
        expected.add("kueue-status")
    check(objects, expected, monitoring)
