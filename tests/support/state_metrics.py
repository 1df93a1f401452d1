"""What kube-state-metrics serves of MXJobs, read and checked: its series scraped, the series
the component's configuration must give for a job's status, and the recording rules of
manifests/components/monitoring run by promtool on what it exported."""

import re
import subprocess
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from tests.support import REPO

RULES = REPO / "manifests" / "components" / "monitoring" / "prometheusrule.yaml"
GVK = {
    "customresource_group": "kubeflow.org",
    "customresource_version": "v1",
    "customresource_kind": "MXJob",
}
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Series:
    """Every MXJob series kube-state-metrics serves now."""
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    found: Series = {}
    for line in text.splitlines():
        matched = SAMPLE.match(line)
        if matched and matched[1].startswith("kube_mxjob_"):
            labels = frozenset(LABEL.findall(matched[2] or ""))
            found[matched[1], labels] = float(matched[3])
    return found


def of_job(series: Series, namespace: str, name: str) -> Series:
    mine = {("namespace", namespace), ("name", name)}
    return {key: value for key, value in series.items() if mine <= key[1]}


def epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def expected(job: dict[str, Any]) -> Series:
    """The series the component's configuration must give for `job`, from its status."""
    meta, status = job["metadata"], job.get("status") or {}
    own = {"namespace": meta["namespace"], "name": meta["name"]} | GVK

    def key(metric: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
        return f"kube_mxjob_{metric}", frozenset((own | labels).items())

    out = {key("created"): epoch(meta["creationTimestamp"])}
    for cond in status.get("conditions", []):
        for value in ("True", "False", "Unknown"):
            labels = {"type": cond["type"], "reason": cond["reason"], "status": value}
            out[key("status_condition", **labels)] = float(cond["status"] == value)
        at = epoch(cond["lastTransitionTime"])
        out[key("status_condition_last_transition_time", type=cond["type"])] = at
    for rtype, counts in status.get("replicaStatuses", {}).items():
        for field, count in counts.items():
            out[key(f"status_replicas_{field}", replica_type=rtype)] = float(count)
    for field, metric in (("startTime", "start_time"), ("completionTime", "completion_time")):
        if field in status:
            out[key(f"status_{metric}")] = epoch(status[field])
    if "restartCount" in status:
        out[key("status_restart_count")] = float(status["restartCount"])
    return out


def recorded(
    promtool: Path,
    folder: Path,
    series: Series,
    namespace: str,
    counts: dict[str, int],
    sums: dict[str, int],
) -> str:
    """`promtool test rules` of the recording rules on `series`, held for ten minutes: the
    jobs of `namespace` counted by state as `counts` says (`job_namespace:mxjob_jobs_<state>:count`)
    and summed as `sums` says (`job_namespace:mxjob_jobs_<what>:sum`)."""
    labels = f'job_namespace="{namespace}", framework="mxnet"'
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": as_promql(name, labels), "values": f"{value!r}x10"}
                    for (name, labels), value in sorted(series.items())
                ],
                "promql_expr_test": [
                    *(_sample(f"{state}:count", count, labels) for state, count in counts.items()),
                    *(_sample(f"{what}:sum", total, labels) for what, total in sums.items()),
                ],
            }
        ],
    }
    rules = yaml.safe_load(RULES.read_text())["spec"]
    (folder / "rules.yaml").write_text(yaml.safe_dump(rules))
    (folder / "test.yaml").write_text(yaml.safe_dump(test))
    done = subprocess.run(
        [str(promtool), "test", "rules", "test.yaml"], cwd=folder,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def _sample(rule: str, value: int, labels: str) -> dict[str, Any]:
    """promtool's check that the recording rule `job_namespace:mxjob_jobs_<rule>` gives
    `value` at five minutes."""
    expr = f"job_namespace:mxjob_jobs_{rule}"
    return {
        "expr": expr,
        "eval_time": "5m",
        "exp_samples": [{"labels": f"{expr}{{{labels}}}", "value": value}],
    }


def as_promql(name: str, labels: frozenset[tuple[str, str]]) -> str:
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels))
    return f"{name}{{{inner}}}"
