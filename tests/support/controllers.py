"""kube-controllers (scripts/kube-controllers, built by scripts/go-tools.sh): the
clusterrole-aggregation controller and the garbage collector of kube-controller-manager v1.32,
run against this tier's API server, which has no kube-controller-manager of its own."""

import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from localcluster.apiserver import ApiServer, running, wait_until

AGGREGATION = "clusterrole-aggregation"
GARBAGE_COLLECTOR = "garbage-collector"
# How long the garbage collector may take to work through what a shared API server left: the
# children of every owner deleted while no collector ran (earlier modules' jobs).
CATCH_UP = 600
# Ten times kube-controller-manager's defaults: a collector started on a shared API server has
# thousands of such children to delete before it reaches a test's.
QPS, BURST = 200, 300


@contextmanager
def kube_controllers(
    binary: Path, server: ApiServer, log: Path, *controllers: str
) -> Iterator[subprocess.Popen[bytes]]:
    """Run the given controllers until the block ends (discovery re-read every 2 s). With the
    garbage collector, the block starts once it has caught up (`wait_collected`)."""
    command = [
        str(binary), f"--kubeconfig={server.kubeconfig}", f"--controllers={','.join(controllers)}",
        "--sync-period=2s", f"--kube-api-qps={QPS}", f"--kube-api-burst={BURST}",
    ]  # fmt: skip
    with running(command, log) as process:
        if GARBAGE_COLLECTOR in controllers:
            wait_collected(server, process, log)
        yield process


def wait_collected(server: ApiServer, process: subprocess.Popen[bytes], log: Path) -> None:
    """Delete an owner ConfigMap and wait until the collector deletes its child: its informers
    have synced and what it queued before (in order) is behind it."""
    name = f"gc-probe-{secrets.token_hex(4)}"
    server.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
        }
    )
    owner = server.get("configmap", name, "--namespace=default")["metadata"]["uid"]
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": owner}
    child = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": f"{name}-child", "namespace": "default", "ownerReferences": [reference]},
    }  # fmt: skip
    server.apply(child)
    server.kubectl("delete", "configmap", name, "--namespace=default")

    def child_gone() -> bool:
        found = server.kubectl(
            "get", "configmap", f"{name}-child", "--namespace=default", "--ignore-not-found",
            "--output=name",
        )  # fmt: skip
        return found.stdout.strip() == ""

    wait_until(child_gone, process, log, "the garbage collector (caught up)", timeout=CATCH_UP)
