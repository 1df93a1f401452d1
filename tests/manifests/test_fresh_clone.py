"""A fresh clone: pytest collects every test without Metacontroller's source (the cases that
need it fail at test time, naming METACONTROLLER_SRC, and never skip); in an empty folder with
neither METACONTROLLER_SRC nor ../shared and no network, scripts/metacontroller-binary.sh and
those cases fail at once naming both ways out (with a network it fetches the pinned tag), while
every overlay still builds; and every `kubectl kustomize` of the tests runs the kubectl
scripts/k8s-binaries.sh finds or builds."""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support import REPO
from tests.support.kustomize import kubectl

NEEDS_SOURCE = ["tests/manifests/test_offline.py"]
# Every overlay, with-metacontroller included, builds without it.
NEED_NO_SOURCE = [
    "tests/manifests/test_manifests.py",
    "tests/manifests/test_composite_controller.py",
    "tests/manifests/test_locked_down_deployment.py",
]


def pytest_without_source(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "METACONTROLLER_SRC": str(REPO / "no-such-metacontroller-source")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_collection_needs_no_metacontroller_source() -> None:
    done = pytest_without_source("--collect-only", *NEEDS_SOURCE, *NEED_NO_SOURCE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_the_kept_manifests_are_the_tags_files" in done.stdout
    collected = int(re.search(r"(\d+) tests? collected", done.stdout).group(1))  # type: ignore[union-attr]
    assert collected > 100


def test_without_the_source_its_cases_fail_naming_it() -> None:
    done = pytest_without_source(
        "-k", "kept_manifests or (with-metacontroller and seccomp)", *NEEDS_SOURCE, *NEED_NO_SOURCE
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"\b1 failed, \d+ passed\b", done.stdout), done.stdout
    assert "skipped" not in done.stdout
    message = (
        "no-such-metacontroller-source has no manifests/production/kustomization.yaml: set "
        "METACONTROLLER_SRC to a checkout of https://github.com/metacontroller/metacontroller "
        "at tag v4.17.2"
    )
    assert message in done.stdout
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
    """tests/support/kustomize.py's kubectl() is the one way the tests reach kubectl outside a cluster."""
    bare = re.compile(r"""shutil\.which\(["']kubectl["']\)|\[\s*["']kubectl["']\s*,""")
    found = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "tests").rglob("*.py"))
        if path.name != "test_fresh_clone.py" and bare.search(path.read_text())
    ]
    assert found == []


def offline(command: list[str]) -> list[str]:
    """`command` in a network namespace of its own, with no network (as root, as CI runs);
    elsewhere as it is, on whatever network the machine has."""
    if os.geteuid() == 0 and shutil.which("unshare"):
        return ["unshare", "--net", *command]
    return command


def empty_folder_clone(tmp_path: Path) -> Path:
    """This checkout's tracked files in an empty folder: no ../shared beside the copy."""
    clone = tmp_path / "empty" / "mxjob-controller"
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60
    )
    for name in listed.stdout.decode().split("\0"):
        if name and (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    assert not (clone.parent.parent / "shared").exists()
    return clone


def fresh_env(tmp_path: Path) -> dict[str, str]:
    """No METACONTROLLER_SRC, an empty cache (no source fetched before), this kubectl."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("METACONTROLLER_")}
    return {**env, "MXJOB_CACHE_DIR": str(tmp_path / "cache"), "KUBECTL": kubectl()}


BOTH_WAYS_OUT = (
    "Either set METACONTROLLER_SRC to a checkout of the tag (git clone --branch v4.17.2 "
    "https://github.com/metacontroller/metacontroller), or run again with network access"
)
FETCHED = (
    "fetched Metacontroller v4.17.2, commit 76b818bdc67ba56570abe5f69f714d56c0ff5c52 (verified)"
)


def test_a_clone_with_no_source_and_no_network_fails_at_once_naming_both_ways_out(
    tmp_path: Path,
) -> None:
    clone = empty_folder_clone(tmp_path)
    started = time.monotonic()
    done = subprocess.run(
        offline(["bash", "scripts/metacontroller-binary.sh"]), cwd=clone,
        env=fresh_env(tmp_path), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    took = time.monotonic() - started
    print(f"\nmetacontroller-binary.sh in a fresh clone: exit {done.returncode} after {took:.2f} s")
    if done.returncode == 0:  # a machine with a network: the fetch path
        assert FETCHED in done.stderr, done.stderr
        assert done.stdout.splitlines()[-1].startswith("METACONTROLLER=")
        return
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if ": ERROR: " in line]
    assert len(errors) == 1, done.stderr
    assert "METACONTROLLER_SRC is unset" in errors[0]
    assert f"{clone.parent}/shared/third_party/metacontroller does not exist" in errors[0]
    assert BOTH_WAYS_OUT in errors[0]
    assert took < 30, "without a network the fetch gives up at once"
    assert done.stdout == "", "no path printed"


def test_in_a_fresh_clone_with_no_network_the_overlay_builds_and_the_check_of_its_copy_fails(
    tmp_path: Path,
) -> None:
    clone = empty_folder_clone(tmp_path)
    done = subprocess.run(
        offline([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *NEEDS_SOURCE]),
        cwd=clone, env=fresh_env(tmp_path), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if FETCHED in done.stderr:  # a machine with a network: every case has the source then
        assert done.returncode == 0, done.stdout + done.stderr
        return
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"\b1 failed, 3 passed\b", done.stdout), done.stdout
    assert "FAILED tests/manifests/test_offline.py::test_the_kept_manifests" in done.stdout
    assert "skipped" not in done.stdout
    assert BOTH_WAYS_OUT in done.stdout
