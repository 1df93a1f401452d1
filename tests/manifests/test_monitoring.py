"""Monitoring: the PrometheusRule's alerts and recording rules under the real promtool (unit
tests of when each fires and what each records), the dashboard's queries parsed by promtool,
every metric named there served by the hook or by kube-state-metrics with the MXJob
configuration, and the kustomize components that scrape the hook, let the scraper through and
give kube-state-metrics the MXJob series."""

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.service import metrics
from tests.support import REPO
from tests.support.kustomize import documents
from tests.support.overlays import HOOK_LABELS, build

COMPONENT = REPO / "manifests" / "components" / "monitoring"
RULE = COMPONENT / "prometheusrule.yaml"
DASHBOARD = COMPONENT / "dashboard.json"
UNIT_TESTS = Path(__file__).parent / "monitoring" / "alerts-test.yaml"
JOB_TESTS = Path(__file__).parent / "monitoring" / "jobs-test.yaml"
STATE_METRICS = REPO / "manifests" / "components" / "kube-state-metrics"
# The hook's own metrics; not the recorded `job_namespace:mxjob_jobs_...:count`.
METRIC = re.compile(r"(?<![:\w])(mxjob_[a-z_]+)\b")
STATE_METRIC = re.compile(r"\b(kube_mxjob_[a-z_]+)\b")
RECORDED = re.compile(r"\b([a-z_]+:mxjob_[a-z_]+:[a-z_]+)\b")


def groups() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = yaml.safe_load(RULE.read_text())["spec"]["groups"]
    return found


def dashboard_queries() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def promtool(tool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("tests", [UNIT_TESTS, JOB_TESTS], ids=["hook", "jobs"])
def test_rules_pass_promtool_unit_tests(
    go_tool: Callable[[str], Path], tmp_path: Path, tests: Path
) -> None:
    tool = go_tool("promtool")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups()}))
    shutil.copy(tests, tmp_path / tests.name)
    checked = promtool(tool, "check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool(tool, "test", "rules", tests.name, cwd=tmp_path)
    assert (tested.returncode, tested.stdout.strip()) == (0, "SUCCESS"), tested.stderr


def test_job_counts_under_promtool_can_fail(go_tool: Callable[[str], Path], tmp_path: Path) -> None:
    """The job unit tests against rules that count every condition a job has, True or not."""
    counted = groups()
    for rule in (r for group in counted for r in group["rules"] if "record" in r):
        rule["expr"] = rule["expr"].replace(', status="True"}', "}")
    assert counted != groups()
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": counted}))
    shutil.copy(JOB_TESTS, tmp_path / JOB_TESTS.name)
    tested = promtool(go_tool("promtool"), "test", "rules", JOB_TESTS.name, cwd=tmp_path)
    assert tested.returncode == 1
    assert "job_namespace:mxjob_jobs_running:count" in tested.stdout + tested.stderr


def test_promtool_unit_tests_can_fail(go_tool: Callable[[str], Path], tmp_path: Path) -> None:
    """The same unit tests against rules whose error threshold moved from 5% to 50%."""
    loosened = yaml.safe_dump({"groups": groups()}).replace("> 0.05", "> 0.5")
    assert loosened != yaml.safe_dump({"groups": groups()})
    (tmp_path / "rules.yaml").write_text(loosened)
    shutil.copy(UNIT_TESTS, tmp_path / "alerts-test.yaml")
    tested = promtool(go_tool("promtool"), "test", "rules", "alerts-test.yaml", cwd=tmp_path)
    assert tested.returncode == 1
    assert "alertname: MXJobSyncErrors" in tested.stdout + tested.stderr


def test_every_alert_has_unit_tests_that_fire_it() -> None:
    alerts = {rule["alert"] for group in groups() for rule in group["rules"] if "alert" in rule}
    tests = [t for f in (UNIT_TESTS, JOB_TESTS) for t in yaml.safe_load(f.read_text())["tests"]]
    fired = {
        case["alertname"]
        for test in tests
        for case in test.get("alert_rule_test", [])
        if case["exp_alerts"]
    }
    quiet = {
        case["alertname"]
        for test in tests
        for case in test.get("alert_rule_test", [])
        if not case["exp_alerts"]
    }
    assert alerts == fired == quiet
    assert {"MXJobSyncErrors", "MXJobSyncNearTimeout", "MXJobInvalidSpecs"} <= alerts
    assert {"MXJobFailed", "MXJobRestartingTooLong"} <= alerts


def test_every_recording_rule_has_unit_tests() -> None:
    recorded = {rule["record"] for group in groups() for rule in group["rules"] if "record" in rule}
    tests = yaml.safe_load(JOB_TESTS.read_text())["tests"]
    checked = {case["expr"] for test in tests for case in test.get("promql_expr_test", [])}
    assert recorded == checked
    assert len(recorded) == 6


def test_dashboard_queries_are_valid_promql(go_tool: Callable[[str], Path], tmp_path: Path) -> None:
    # Grafana replaces $__rate_interval; promtool parses each query as a recording rule.
    rules = [
        {"record": f"dashboard:query_{n}", "expr": expr.replace("$__rate_interval", "5m")}
        for n, expr in enumerate(dashboard_queries())
    ]
    (tmp_path / "dashboard.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]})
    )
    checked = promtool(go_tool("promtool"), "check", "rules", "dashboard.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(rules)} rules found" in checked.stdout


def served_metric_names() -> set[str]:
    names = set()
    for family in metrics.REGISTRY.collect():
        names.add(family.name)
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}
        names.update(family.name + s for s in suffixes.get(family.type, []))
    return names


def exprs() -> list[str]:
    return [rule["expr"] for group in groups() for rule in group["rules"]] + dashboard_queries()


def test_rules_and_dashboard_name_only_metrics_the_hook_serves() -> None:
    named = {name for expr in exprs() for name in METRIC.findall(expr)}
    assert named, "no mxjob_ metric named"
    assert named <= served_metric_names()
    assert "mxjob_build_info" in named


def state_metric_names() -> set[str]:
    """The series kube-state-metrics exports with the component's configuration."""
    config = yaml.safe_load((STATE_METRICS / "mxjob-state-metrics.yaml").read_text())
    (resource,) = config["spec"]["resources"]
    return {f"{resource['metricNamePrefix']}_{m['name']}" for m in resource["metrics"]}


def test_rules_and_dashboard_name_only_series_kube_state_metrics_exports() -> None:
    named = {name for expr in exprs() for name in STATE_METRIC.findall(expr)}
    assert named <= state_metric_names()
    assert {"kube_mxjob_created", "kube_mxjob_status_condition"} <= named


def test_dashboard_shows_only_recorded_job_counts() -> None:
    recorded = {rule["record"] for group in groups() for rule in group["rules"] if "record" in rule}
    shown = {name for expr in dashboard_queries() for name in RECORDED.findall(expr)}
    assert shown == recorded


def test_dashboard_is_importable_grafana_json() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert (dashboard["uid"], dashboard["title"]) == ("mxjob-controller", "mxjob-controller")
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]
    (variable,) = dashboard["templating"]["list"]
    assert (variable["name"], variable["type"], variable["query"]) == (
        "datasource",
        "datasource",
        "prometheus",
    )


def kustomize(tmp_path: Path, *components: str) -> tuple[dict[str, Any], ...]:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                # kustomize takes relative paths only
                "resources": [
                    os.path.relpath(REPO / "manifests" / "overlays" / "standalone", overlay)
                ],
                "components": [
                    os.path.relpath(REPO / "manifests" / "components" / c, overlay)
                    for c in components
                ],
            }
        )
    )
    return tuple(documents(overlay))


def test_monitoring_component_scrapes_the_hook_pods(tmp_path: Path) -> None:
    objects = {(o["kind"], o["metadata"]["name"]): o for o in kustomize(tmp_path, "monitoring")}
    monitor = objects["PodMonitor", "mxjob-controller"]
    assert monitor["metadata"]["namespace"] == "mxjob-system"
    assert monitor["spec"]["selector"] == {"matchLabels": HOOK_LABELS}
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    (container,) = objects["Deployment", "mxjob-controller"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert endpoint["port"] in {port["name"] for port in container["ports"]}
    assert endpoint["path"] == "/metrics"
    dashboard = objects["ConfigMap", "mxjob-controller-dashboard"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["mxjob-controller.json"]) == json.loads(
        DASHBOARD.read_text()
    )
    assert objects["PrometheusRule", "mxjob-controller"]["spec"]["groups"] == groups()


def test_kube_state_metrics_component_gives_the_configuration_and_rbac(tmp_path: Path) -> None:
    objects = {
        (o["kind"], o["metadata"]["name"]): o for o in kustomize(tmp_path, "kube-state-metrics")
    }
    binding = objects["ClusterRoleBinding", "mxjob-controller-kube-state-metrics"]
    (subject,) = binding["subjects"]
    assert subject == {
        "kind": "ServiceAccount",
        "name": "kube-state-metrics",
        "namespace": "kube-system",
    }
    config = objects["ConfigMap", "mxjob-state-metrics"]
    assert config["metadata"]["namespace"] == subject["namespace"]
    assert config["data"] == {
        "mxjob.yaml": (STATE_METRICS / "mxjob-state-metrics.yaml").read_text()
    }
    role = objects["ClusterRole", "mxjob-controller-kube-state-metrics"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert role["rules"] == [
        {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"], "verbs": ["list", "watch"]},
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["list", "watch"],
        },
    ]


def test_networkpolicy_component_admits_the_monitoring_namespace(tmp_path: Path) -> None:
    (policy,) = (
        o for o in kustomize(tmp_path, "networkpolicy-monitoring") if o["kind"] == "NetworkPolicy"
    )
    standalone = next(o for o in build("standalone") if o["kind"] == "NetworkPolicy")
    metacontroller, scraper = policy["spec"]["ingress"]
    assert metacontroller == standalone["spec"]["ingress"][0]
    assert scraper == {
        "from": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
        ],
        "ports": [{"protocol": "TCP", "port": "http"}],
    }


def test_outcomes_the_error_alert_leaves_out_are_the_hooks() -> None:
    """MXJobSyncErrors counts every outcome but three: each of the three must be one the web
    layer really reports, or a renamed outcome would silently count as a failure (or vanish)."""
    (rule,) = (r for g in groups() for r in g["rules"] if r.get("alert") == "MXJobSyncErrors")
    (excluded,) = re.findall(r'outcome!~"([a-z_|]+)"', rule["expr"])
    web = "\n".join(f.read_text() for f in sorted((REPO / "app" / "service").glob("*.py")))
    reported = set(re.findall(r'Refused\(\d+, "([a-z_]+)"', web))
    for answered in re.findall(r'return "([a-z_]+)" if .* else "([a-z_]+)"', web):
        reported |= set(answered)
    assert set(excluded.split("|")) <= reported
    assert {"too_large", "bad_request", "unauthorized"} <= reported
