"""docs/install.md's values for a Metacontroller installed with its own Helm chart, rendered by
the real helm with Metacontroller's chart v4.17.2 (tests/fixtures/metacontroller-helm): the
ClusterRole is exactly the shipped role's rules (and a component's, added), the arguments are
`commandArgs` and only those, the probes still reach the health port those arguments bind, and
the StatefulSet is named `<release>-metacontroller-helm`, as the page's commands say."""

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.manifests.test_metacontroller_role import (
    documented_helm_values,
    documented_rules,
    metacontroller_rules,
)
from tests.support import FIXTURES
from tests.support.kustomize import overlay_objects

CHART = FIXTURES / "metacontroller-helm"
RELEASE = "mc"


@pytest.fixture(scope="module")
def render(go_tool: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    helm = str(go_tool("helm"))
    folder = tmp_path_factory.mktemp("metacontroller-helm")

    def rendered(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
        file = folder / "values.yaml"
        file.write_text(yaml.safe_dump(values))
        done = subprocess.run(
            [helm, "template", RELEASE, str(CHART), "--namespace", "metacontroller", "-f", str(file)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return {
            d["kind"]: d
            for d in yaml.safe_load_all(done.stdout)
            if d
            and d["kind"] in ("ClusterRole", "StatefulSet")
            and not d["metadata"]["name"].endswith(("-edit", "-view"))
        }

    return rendered


def test_the_documented_values_give_the_shipped_role_and_flags(render: Any) -> None:
    values = documented_helm_values()
    objects = render(values)
    role, statefulset = objects["ClusterRole"], objects["StatefulSet"]
    assert role["rules"] == metacontroller_rules(overlay_objects("with-metacontroller"))
    assert not [r for r in role["rules"] if "*" in r["verbs"] + r["resources"]]
    assert not [r for r in role["rules"] if "secrets" in r["resources"]]
    # The page's `statefulset <release>-metacontroller-helm`.
    assert statefulset["metadata"]["name"] == f"{RELEASE}-metacontroller-helm"
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    # commandArgs replaces the chart's arguments: only the page's, in its order.
    assert container["args"] == values["commandArgs"]
    chart_defaults = yaml.safe_load((CHART / "values.yaml").read_text())["commandArgs"]
    assert "--zap-log-level=4" in chart_defaults
    assert "--zap-log-level=4" not in container["args"]
    # The one default argument the page keeps: the health port the chart's probes call.
    (bind,) = [a for a in container["args"] if a.startswith("--health-probe-bind-address=")]
    port = int(bind.rsplit(":", 1)[1])
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] == port, probe


@pytest.mark.parametrize("component", ["events", "kueue", "scheduler-plugins", "volcano"])
def test_a_components_documented_rules_added(render: Any, component: str) -> None:
    values = documented_helm_values()
    values["clusterRole"]["rules"] += documented_rules()[component]
    role = render(values)["ClusterRole"]
    assert role["rules"] == metacontroller_rules(overlay_objects("with-metacontroller", component))
