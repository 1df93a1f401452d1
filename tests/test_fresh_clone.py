"""A fresh clone: pytest collects every test without Metacontroller's source (the cases that
need it fail at test time, naming METACONTROLLER_SRC, and never skip), and every
`kubectl kustomize` of the tests runs the kubectl scripts/k8s-binaries.sh finds or builds."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.kustomize import kubectl

REPO = Path(__file__).resolve().parents[1]
NEEDS_SOURCE = ["tests/test_manifests.py", "tests/test_hardening_manifests.py"]


def pytest_without_source(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "METACONTROLLER_SRC": str(REPO / "no-such-metacontroller-source")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_collection_needs_no_metacontroller_source() -> None:
    done = pytest_without_source("--collect-only", *NEEDS_SOURCE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[with-metacontroller-needs-METACONTROLLER_SRC-1.30.0]" in done.stdout
    collected = int(re.search(r"(\d+) tests? collected", done.stdout).group(1))  # type: ignore[union-attr]
    assert collected > 100


def test_without_the_source_its_cases_fail_naming_it() -> None:
    done = pytest_without_source(
        "-k", "with-metacontroller and (needs-METACONTROLLER_SRC or seccomp)", *NEEDS_SOURCE
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"\b2 failed\b", done.stdout), done.stdout
    assert "skipped" not in done.stdout
    message = (
        "no-such-metacontroller-source has no manifests/production/kustomization.yaml: set "
        "METACONTROLLER_SRC to a checkout of https://github.com/metacontroller/metacontroller "
        "at tag v4.17.2"
    )
    assert done.stdout.count(message) >= 2
    assert "Traceback" not in done.stdout


def test_kustomize_runs_the_kubectl_of_the_binaries_script() -> None:
    script = subprocess.run(
        ["bash", str(REPO / "scripts" / "k8s-binaries.sh"), "kubectl"],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True, text=True, timeout=3600, check=True,
    )  # fmt: skip
    assert script.stdout.splitlines()[-1] == f"KUBECTL={kubectl()}"
    version = subprocess.run(
        [kubectl(), "version", "--client"], capture_output=True, text=True, timeout=60
    )
    k8s = re.search(
        r"^K8S_VERSION=1\.(\d+)\.", (REPO / "scripts" / "k8s-binaries.sh").read_text(), re.M
    )
    assert f"Client Version: v1.{k8s.group(1)}." in version.stdout  # type: ignore[union-attr]


def test_no_test_looks_for_kubectl_on_path() -> None:
    """tests/kustomize.py's kubectl() is the one way the tests reach kubectl outside a cluster."""
    bare = re.compile(r"""shutil\.which\(["']kubectl["']\)|\[\s*["']kubectl["']\s*,""")
    found = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "tests").rglob("*.py"))
        if path.name != "test_fresh_clone.py" and bare.search(path.read_text())
    ]
    assert found == []
