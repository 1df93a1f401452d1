"""What can go wrong with the local cluster: a part not obtained, started or reached, or a
kubectl that fails."""

import subprocess
from collections.abc import Sequence


class ClusterError(RuntimeError):
    """etcd or the API server could not be obtained, started or reached."""


class KubectlError(AssertionError):
    """kubectl exited non-zero; carries what it printed."""

    def __init__(self, args: Sequence[str], result: subprocess.CompletedProcess[str]) -> None:
        self.result = result
        super().__init__(
            f"kubectl {' '.join(args)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
