"""`python -m app ttl-controller` without credentials for a cluster says so and exits 2."""

import os
import subprocess
import sys
from pathlib import Path

from tests.support import REPO


def test_no_cluster_is_a_clear_error(tmp_path: Path) -> None:
    env = {**os.environ, "KUBECONFIG": "/nonexistent/kubeconfig", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "app", "ttl-controller", "--port", "0"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "no cluster to talk to: Configuration file /nonexistent/kubeconfig not found" in (
        done.stderr
    )
