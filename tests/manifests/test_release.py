"""The release: one version everywhere (app.__version__), the licence, the image name and tag,
the CI workflow under the real actionlint, `--version` and `mxjob_build_info`. The changelog's
rule: test_release_check.py; `make run`'s checks: test_make_run.py."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from app import __version__
from localcluster.ports import free_port
from tests.support import REPO
from tests.support.kustomize import documents
from tests.support.overlays import IMAGE, LAYOUT, build
from tests.support.servers import serving

WORKFLOW = REPO / ".github" / "workflows" / "ci.yaml"
# sha256 of the Apache License 2.0 as apache.org publishes it (LICENSE-2.0.txt, 201 lines,
# without its leading blank line), appendix included.
APACHE_2_SHA256 = "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"


def test_version_is_semver() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_package_metadata_takes_the_version_from_app(tmp_path: Path) -> None:
    """The version and name setuptools (the build backend) reads from a copy of the project."""
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    shutil.copytree(REPO / "app", tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__"))
    script = (
        "import warnings; warnings.simplefilter('ignore');"
        "from setuptools.config.pyprojecttoml import read_configuration as read;"
        "project = read('pyproject.toml', expand=True)['project'];"
        "print(project['name'], project['version'], project['license']['text'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["mxjob-controller", __version__, "Apache-2.0"]


def test_every_copy_of_the_version_and_image_agrees() -> None:
    chart = yaml.safe_load((REPO / "charts" / "mxjob-controller" / "Chart.yaml").read_text())
    values = yaml.safe_load((REPO / "charts" / "mxjob-controller" / "values.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (__version__, __version__)
    assert values["image"]["repository"] == IMAGE
    for overlay in LAYOUT:
        # The hook, and in the kueue overlay the Workload-status writer: the same image.
        for deployment in (d for d in build(overlay) if d["kind"] == "Deployment"):
            (container,) = deployment["spec"]["template"]["spec"]["containers"]
            assert container["image"] == f"{IMAGE}:{__version__}", overlay
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow["env"]["IMAGE"] == IMAGE
    assert f"IMAGE ?= {IMAGE}\n" in (REPO / "Makefile").read_text()


# Where the docs and the README name a release: a checkout, an image tag, a kustomize pin.
VERSION_MENTIONS = re.compile(
    r"git checkout v(\d+\.\d+\.\d+)|mxjob-controller:(\d+\.\d+\.\d+)"
    r"|newTag: (\d+\.\d+\.\d+)|for\s+version (\d+\.\d+\.\d+)"
)


@pytest.mark.parametrize("doc", ["README.md", "docs/install.md"])
def test_install_docs_name_the_current_release(doc: str) -> None:
    text = (REPO / doc).read_text()
    named = [next(g for g in m.groups() if g) for m in VERSION_MENTIONS.finditer(text)]
    assert set(named) <= {__version__}, doc
    if doc == "docs/install.md":
        # No tag named as if it existed: a version's tag comes with its release.
        assert "git checkout v<version>" in text
        assert "still `[Unreleased]`: no\ntag and no published image" in text
        assert len(named) >= 5


def test_licence_is_the_full_apache_2_text() -> None:
    text = (REPO / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256
    assert b"TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert b"APPENDIX: How to apply the Apache License to your work." in text


def test_make_image_tags_the_version() -> None:
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "image", "image-push"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.replace("\\\n", " ").splitlines()
    tag = f"-t {IMAGE}:{__version__} "
    assert lines[0].startswith("docker build ")
    assert tag in lines[0]
    assert tag in lines[1]
    assert "--platform linux/amd64,linux/arm64" in lines[1]
    assert "--push" in lines[1]


def actionlint(tool: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    shellcheck = Path(sys.executable).parent / "shellcheck"
    return subprocess.run(
        [str(tool), "-shellcheck", str(shellcheck), *map(str, paths)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_workflow_passes_actionlint(go_tool: Callable[[str], Path]) -> None:
    done = actionlint(go_tool("actionlint"), WORKFLOW)
    assert (done.returncode, done.stdout) == (0, "")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        pytest.param(
            "runs-on: ubuntu-24.04",
            "runs-on: ubuntu-24.04\n    timeout: 5",
            "unexpected key",
            id="unknown-key",
        ),
        pytest.param(
            "needs: [test, image-build]",
            "needs: [tests, image-build]",
            'job "image" needs job "tests" which does not exist',
            id="bad-needs",
        ),
        pytest.param(
            '--tag "$GITHUB_REF_NAME"',
            "--tag $GITHUB_REF_NAME",
            "SC2086",
            id="shellcheck",
        ),
    ],
)
def test_actionlint_finds_planted_errors(
    go_tool: Callable[[str], Path], tmp_path: Path, old: str, new: str, message: str
) -> None:
    text = WORKFLOW.read_text()
    assert old in text
    broken = tmp_path / ".github" / "workflows" / "ci.yaml"
    broken.parent.mkdir(parents=True)
    broken.write_text(text.replace(old, new, 1))
    done = actionlint(go_tool("actionlint"), broken)
    assert done.returncode == 1
    assert message in done.stdout


def test_build_info_metric_on_the_real_server() -> None:
    with serving({}) as server:
        text = httpx.get(f"{server.url}/metrics", timeout=5).text
    (family,) = (f for f in text_string_to_metric_families(text) if f.name == "mxjob_build_info")
    (sample,) = family.samples
    assert sample.value == 1
    assert sample.labels == {
        "version": __version__,
        "python": ".".join(map(str, sys.version_info[:3])),
    }


def test_install_docs_own_image_overlay(tmp_path: Path) -> None:
    """docs/install.md, "A private registry": the overlay it shows swaps the pinned image."""
    text = (REPO / "docs" / "install.md").read_text()
    (block,) = re.findall(r"```yaml\n# my-install/kustomization.yaml\n(.*?)```", text, re.S)
    manifests = tmp_path / "manifests"
    manifests.symlink_to(REPO / "manifests")
    (tmp_path / "my-install").mkdir()
    (tmp_path / "my-install" / "kustomization.yaml").write_text(block)
    objects = {d["kind"]: d for d in documents(tmp_path / "my-install")}
    (container,) = objects["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"registry.example.com/ml/mxjob-controller:{__version__}"
    assert objects["ServiceAccount"]["imagePullSecrets"] == [{"name": "my-registry"}]


def test_ci_builds_and_smoke_tests_the_image_before_any_release() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job = workflow["jobs"]["image-build"]
    assert "if" not in job  # every push and pull request
    assert "image-build" in workflow["jobs"]["image"]["needs"]
    builds = [s["with"] for s in job["steps"] if "build-push-action" in s.get("uses", "")]
    assert [(b["platforms"], b.get("push"), b.get("load")) for b in builds] == [
        ("${{ env.PLATFORMS }}", False, None),
        ("linux/amd64", None, True),
    ]
    assert workflow["env"]["PLATFORMS"] == "linux/amd64,linux/arm64"
    assert job["steps"][-1]["run"] == 'scripts/image-smoke.sh "$IMAGE:ci"'


# A TEST DOUBLE for docker, for scripts/image-smoke.sh alone: `run --rm IMAGE ARGS` and
# `run -i --rm IMAGE ARGS` run `python -m app ARGS` from the checkout, `run -d --name N -p
# 127.0.0.1:PORT:8080 IMAGE` serves the hook on that port as the image's default command does,
# `rm -f N` stops it, `logs N` prints its output. It models nothing else of docker or the image.
DOCKER_DOUBLE = """#!/usr/bin/env bash
set -eu
state={state}
case "$1 $2" in
  "run --rm") shift 3; [ "${{SAY_VERSION:-}}" ] && {{ echo "$SAY_VERSION"; exit 0; }}
              exec {python} -m app "$@" ;;
  "run -i") shift 4; exec {python} -m app "$@" ;;
  "run -d") name=$4; port=${{6#127.0.0.1:}}; port=${{port%:8080}}
            {python} -m app serve --host 127.0.0.1 --port "$port" >"$state/$name.log" 2>&1 &
            echo $! >"$state/$name.pid"; echo "$name" ;;
  "rm -f") kill "$(cat "$state/$3.pid")" ;;
  "logs "*) cat "$state/$2.log" ;;
  *) echo "docker double: $*" >&2; exit 2 ;;
esac
"""


@pytest.mark.parametrize(
    ("say", "code", "message"),
    [
        # The hook served for real and stopped: two seconds or more.
        pytest.param(None, 0, "image-smoke: GET /healthz: ok", id="good", marks=pytest.mark.slow),
        pytest.param(
            "mxjob-controller 0.0.1",
            1,
            "--version says 'mxjob-controller 0.0.1', not 'mxjob-controller {version}'",
            id="wrong-version",
        ),
    ],
)
def test_image_smoke_script(tmp_path: Path, say: str | None, code: int, message: str) -> None:
    docker = tmp_path / "docker"
    docker.write_text(DOCKER_DOUBLE.format(state=tmp_path, python=sys.executable))
    docker.chmod(0o755)
    env = {**os.environ, "DOCKER": str(docker), "PORT": str(free_port()), "TIMEOUT": "60"}
    if say:
        env["SAY_VERSION"] = say
    done = subprocess.run(
        [str(REPO / "scripts" / "image-smoke.sh"), "mxjob-controller:ci"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == code, done.stderr
    assert message.format(version=__version__) in done.stdout + done.stderr
    if code == 0:
        assert f"image-smoke: --version: mxjob-controller {__version__}" in done.stdout
        (pid,) = (p.read_text().strip() for p in tmp_path.glob("*.pid"))
        for _ in range(100):  # the served hook was stopped (SIGTERM: it shuts down)
            state = Path(f"/proc/{pid}/stat")
            if not state.exists() or state.read_text().split(") ")[-1].startswith("Z"):
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the hook the script started (pid {pid}) still runs")
