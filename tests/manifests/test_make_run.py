"""`make run`'s Python check and broken-.venv rebuild, in a temporary copy of the project,
never the real .venv."""

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import REPO


# `make run` before Python 3.11: a real older interpreter where the machine has one (pyenv or
# PATH); otherwise a TEST DOUBLE that answers like Python 3.10 to the Makefile's two probes
# (`-c <version check>` exits 1, `--version` prints "Python 3.10.0") and models nothing else.
def older_python(tmp_path: Path) -> tuple[Path, str]:
    for minor in range(10, 5, -1):
        for candidate in (
            *sorted(Path.home().glob(f".pyenv/versions/3.{minor}.*/bin/python3")),
            shutil.which(f"python3.{minor}"),
        ):
            if not candidate:
                continue
            answer = subprocess.run(
                [str(candidate), "--version"], capture_output=True, text=True, timeout=30
            )
            # (a pyenv shim of a version that is not selected fails here)
            if answer.returncode == 0 and answer.stdout.startswith("Python 3."):
                return Path(candidate), answer.stdout.split()[-1]
    stub = tmp_path / "python3.10-double"
    stub.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "Python 3.10.0" && exit 0\nexit 1\n')
    stub.chmod(0o755)
    return stub, "3.10.0"


def project_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    copy.mkdir()
    for name in (
        "Makefile",
        "pyproject.toml",
        "requirements.txt",
        "requirements.lock",
        "requirements-dev.txt",
    ):
        shutil.copy(REPO / name, copy)
    (copy / "app").mkdir()
    shutil.copy(REPO / "app" / "__init__.py", copy / "app")
    return copy


def make(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_make_run_refuses_an_old_python_with_a_clear_message(tmp_path: Path) -> None:
    python, version = older_python(tmp_path)
    copy = project_copy(tmp_path)
    done = make(copy, "run", f"PYTHON={python}")
    assert done.returncode == 2
    assert (
        f"make: mxjob-controller needs Python 3.11 or later, and {python} is Python {version}; "
        "run make PYTHON=python3.11 (or newer)"
    ) in done.stderr
    assert not (copy / ".venv").exists()


def broken_dangling(venv: Path, _: Path) -> None:
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(venv / "gone" / "python3")


def broken_old(venv: Path, tmp_path: Path) -> None:
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(older_python(tmp_path)[0])


def broken_without_pip(venv: Path, _: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )


@pytest.mark.parametrize(
    "breakage",
    [
        pytest.param(broken_dangling, id="python-gone"),
        pytest.param(broken_old, id="python-too-old"),
        pytest.param(broken_without_pip, id="no-pip"),
    ],
)
def test_a_broken_venv_is_built_again(
    tmp_path: Path, breakage: Callable[[Path, Path], None]
) -> None:
    copy = project_copy(tmp_path)
    breakage(copy / ".venv", tmp_path)
    (copy / ".venv" / ".runtime").touch()  # the stamp that used to make it look complete
    done = make(copy, "-n", "run", f"PYTHON={sys.executable}")
    assert done.returncode == 0, done.stderr
    assert (
        "make: .venv is broken (no working Python 3.11 or later with pip in it); building it again"
        in done.stdout
    )
    assert (copy / ".venv" / ".runtime").exists()  # make -n only says what it would do
    plan = done.stdout.splitlines()
    assert plan.index("rm -rf .venv") < plan.index(f"{sys.executable} -m venv .venv")
    assert plan[-4:] == [
        ".venv/bin/pip install --quiet --require-hashes -r requirements.lock",
        ".venv/bin/pip install --quiet --no-deps --editable .",
        "touch .venv/.runtime",
        ".venv/bin/mxjob-controller serve --host 127.0.0.1 --port 8080",
    ]


def test_a_healthy_venv_is_kept(tmp_path: Path) -> None:
    """The check leaves a working .venv alone, here a link to the project's own."""
    copy = project_copy(tmp_path)
    (copy / ".venv").symlink_to(Path(sys.executable).parents[1])
    done = make(copy, "-n", "run")
    assert "broken" not in done.stdout
    assert (copy / ".venv").is_symlink()
    assert "-m venv" not in done.stdout
