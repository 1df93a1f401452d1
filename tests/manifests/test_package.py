"""The package as pip installs it: built from the checkout's sources with no network, it holds
`app` whole (every subpackage, the CRD), and its `mxjob-controller` command runs from any
folder: `--version`, and `render` of an example, the job with its children."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from app import __version__
from tests.support import REPO

pytestmark = pytest.mark.slow

# What the package is built from: the files the image copies to build it (Dockerfile).
SOURCES = ["pyproject.toml", "requirements.txt", "app", "manifests/base/crd.yaml"]
EXAMPLE = REPO / "examples" / "dist-cpu.yaml"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package installed with pip into a folder of its own (`--target`), built from a copy
    of the sources, so that the build's own files (build/, *.egg-info) stay out of the checkout."""
    folder = tmp_path_factory.mktemp("package")
    for name in SOURCES:
        source, copy = REPO / name, folder / "source" / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            ignored = shutil.ignore_patterns("__pycache__")
            shutil.copytree(source, copy, symlinks=True, ignore=ignored)
        else:
            shutil.copy(source, copy)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    target = folder / "site"
    done = subprocess.run(
        [*pip, "--no-index", "--target", str(target), str(folder / "source")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def run(installed: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed command, with the installed package the only `app` it can import."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(installed), "PATH": f"{installed / 'bin'}{os.pathsep}{env['PATH']}"}
    return subprocess.run(
        ["mxjob-controller", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_the_package_holds_app_whole_and_nothing_else(installed: Path) -> None:
    assert sorted(p.name for p in installed.iterdir()) == [
        "app", "bin", f"mxjob_controller-{__version__}.dist-info",
    ]  # fmt: skip
    modules = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "app").rglob("*.py"))
    assert sorted(p.relative_to(installed).as_posix() for p in installed.rglob("app/**/*.py")) == (
        modules
    )
    crd = installed / "app" / "cli" / "crd.yaml"
    assert not crd.is_symlink()
    assert crd.read_bytes() == (REPO / "manifests" / "base" / "crd.yaml").read_bytes()


def test_the_command_says_its_version(installed: Path, tmp_path: Path) -> None:
    done = run(installed, "--version", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"mxjob-controller {__version__}\n",
        "",
    )


def test_the_command_renders_an_example_from_another_folder(
    installed: Path, tmp_path: Path
) -> None:
    shutil.copy(EXAMPLE, tmp_path)
    done = run(installed, "render", EXAMPLE.name, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    documents = list(yaml.safe_load_all(done.stdout))
    name = yaml.safe_load(EXAMPLE.read_text())["metadata"]["name"]
    replicas = [f"{name}-{role}-{n}" for role, count in [("scheduler", 1), ("server", 2), ("worker", 2)]
                for n in range(count)]  # fmt: skip
    assert [(d["kind"], d["metadata"]["name"]) for d in documents] == [
        ("MXJob", name),
        ("ConfigMap", f"{name}-mx-config"),
        *[("Pod", replica) for replica in replicas],
        *[("Service", replica) for replica in replicas],
    ]
    assert [c["type"] for c in documents[0]["status"]["conditions"]] == ["Created"]


def test_the_command_reads_the_crd_of_the_package(installed: Path, tmp_path: Path) -> None:
    """`render` refuses a field the CRD does not know: the CRD it reads is the installed one."""
    job = yaml.safe_load(EXAMPLE.read_text())
    job["spec"]["runPolicy"]["backofLimit"] = 3
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    done = run(installed, "render", "job.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert 'unknown field "spec.runPolicy.backofLimit", did you mean "backoffLimit"?' in done.stderr


def test_the_package_requires_what_requirements_txt_pins(installed: Path) -> None:
    metadata = (installed / f"mxjob_controller-{__version__}.dist-info" / "METADATA").read_text()
    required = [line.removeprefix("Requires-Dist: ") for line in metadata.splitlines()
                if line.startswith("Requires-Dist: ")]  # fmt: skip
    pinned = [line for line in (REPO / "requirements.txt").read_text().splitlines()
              if line and not line.startswith("#")]  # fmt: skip
    assert required == pinned
