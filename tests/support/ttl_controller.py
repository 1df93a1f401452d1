"""The TTL controller (`python -m app ttl-controller`) as a process beside the real stack, with
the component's own RBAC (manifests/components/ttl-controller/rbac.yaml): it runs with a token of
its ServiceAccount, never the admin's, so a permission the ClusterRole lacks fails the test."""

import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from localcluster.apiserver import ApiServer, http_ok, running, token_kubeconfig, wait_until
from localcluster.ports import free_port
from tests.support import REPO

RBAC = REPO / "manifests" / "components" / "ttl-controller" / "rbac.yaml"
ACCOUNT = "mxjob-ttl-controller"


def rbac(namespace: str) -> list[dict[str, Any]]:
    """The component's ServiceAccount, ClusterRole and binding, the account in `namespace`."""
    objects = [d for d in yaml.safe_load_all(RBAC.read_text()) if d]
    for obj in objects:
        if obj["kind"] == "ServiceAccount":
            obj["metadata"]["namespace"] = namespace
        for subject in obj.get("subjects", ()):
            subject["namespace"] = namespace
    return objects


def account_kubeconfig(server: ApiServer, namespace: str, path: Path) -> Path:
    """A kubeconfig with a token of the component's ServiceAccount (TokenRequest, 2 hours)."""
    server.apply(*rbac(namespace))
    return token_kubeconfig(server, namespace, ACCOUNT, path)


@dataclass
class TtlController:
    url: str
    log: Path

    def metric(self, name: str, **labels: str) -> float:
        """The value of one series of /metrics (0 if it has none yet)."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as response:
            text = response.read().decode()
        return sum(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == name and labels.items() <= sample.labels.items()
        )

    def deleted(self) -> float:
        """MXJobs this process deleted itself."""
        return self.metric("mxjob_ttl_deletions_total", outcome="deleted")


@contextmanager
def run_ttl_controller(kubeconfig: Path, workdir: Path) -> Iterator[TtlController]:
    """The TTL controller on a free loopback port, ready once it has listed the MXJobs."""
    port = free_port()
    log = workdir / f"ttl-controller-{port}.log"
    command = [
        "env", f"KUBECONFIG={kubeconfig}", f"PYTHONPATH={REPO}", sys.executable, "-m", "app",
        "ttl-controller",
        "--port", str(port),
    ]  # fmt: skip
    controller = TtlController(f"http://127.0.0.1:{port}", log)
    with running(command, log) as process:
        wait_until(lambda: http_ok(f"{controller.url}/healthz"), process, log, "ttl-controller")
        yield controller
