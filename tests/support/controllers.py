"""kube-controllers (scripts/kube-controllers, built by scripts/go-tools.sh): the
clusterrole-aggregation controller and the garbage collector of kube-controller-manager v1.32,
run against this tier's API server, which has no kube-controller-manager of its own."""

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from localcluster.apiserver import ApiServer, running

AGGREGATION = "clusterrole-aggregation"
GARBAGE_COLLECTOR = "garbage-collector"


@contextmanager
def kube_controllers(
    binary: Path, server: ApiServer, log: Path, *controllers: str
) -> Iterator[subprocess.Popen[bytes]]:
    """Run the given controllers until the block ends (discovery re-read every 2 s)."""
    command = [
        str(binary), f"--kubeconfig={server.kubeconfig}", f"--controllers={','.join(controllers)}",
        "--sync-period=2s",
    ]  # fmt: skip
    with running(command, log) as process:
        yield process
