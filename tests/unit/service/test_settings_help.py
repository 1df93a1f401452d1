"""`serve --help` lists every variable the settings read, what it does and its default, from the
settings themselves; an MXJOB_* variable that is no setting is warned about by name, with the
setting it is closest to."""

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.service.misspellings import warnings
from app.service.settings import Settings, from_env
from tests.support import REPO

# What each setting is when unset, as a user reads it.
DEFAULTS = {
    "MXJOB_FROZEN_CLOCK": "the system clock",
    "MXJOB_MAX_BODY_BYTES": "67108864 (64 MiB)",
    "MXJOB_SLOW_SYNC_SECONDS": "2",
    "MXJOB_AUTH_TOKEN": "no token required, unless MXJOB_AUTH_TOKEN_FILE is set",
    "MXJOB_AUTH_TOKEN_FILE": "no token required, unless MXJOB_AUTH_TOKEN is set",
    "MXJOB_TLS_CERT_FILE": "plain HTTP",
    "MXJOB_TLS_KEY_FILE": "plain HTTP",
    "MXJOB_LOG_LEVEL": "INFO",
    "MXJOB_WEBHOOK_TIMEOUT_SECONDS": "10",
    "MXJOB_HEADER_TIMEOUT_SECONDS": "5",
    "MXJOB_READ_CHUNK_TIMEOUT_SECONDS": "a fifth of MXJOB_WEBHOOK_TIMEOUT_SECONDS",
    "MXJOB_READ_TIMEOUT_SECONDS": "four fifths of MXJOB_WEBHOOK_TIMEOUT_SECONDS",
    "MXJOB_SEND_TIMEOUT_SECONDS": "MXJOB_WEBHOOK_TIMEOUT_SECONDS",
    "MXJOB_BYTES_IN_FLIGHT": "MXJOB_MAX_BODY_BYTES",
    "MXJOB_MAX_CONNECTIONS": "256",
    "MXJOB_HTTP": "httptools",
}


class Asked(dict[str, str]):
    """An empty environment that notes every variable looked up in it."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __contains__(self, name: object) -> bool:
        self.names.add(str(name))
        return super().__contains__(name)

    def __getitem__(self, name: str) -> str:
        self.names.add(name)
        return super().__getitem__(name)

    def get(self, name: str, default: object = None) -> object:  # type: ignore[override]
        self.names.add(name)
        return super().get(name, default)

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the settings read variables by name")


def listed(text: str) -> dict[str, tuple[str, str]]:
    """Each variable of a `serve --help` text: (what it does, its default)."""
    blocks = re.findall(r"^  (MXJOB_\w+)\n((?: {6}.*\n?)+)", text, re.MULTILINE)
    found = {}
    for name, block in blocks:
        said = " ".join(line.strip() for line in block.splitlines())
        parts = re.fullmatch(r"(.+\.) .+; default: (.+)\.", said)
        assert parts, f"{name}: {said!r}"
        found[name] = (parts.group(1), parts.group(2))
    return found


@pytest.fixture(scope="module")
def help_text() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--help"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout


def test_help_lists_every_variable_the_settings_read_with_its_default(help_text: str) -> None:
    environ = Asked()
    assert from_env(environ) == Settings()
    assert {name: default for name, (_, default) in listed(help_text).items()} == {
        name: DEFAULTS[name] for name in sorted(environ.names)
    }


def test_help_says_what_each_setting_does(help_text: str) -> None:
    said = listed(help_text)
    assert said["MXJOB_MAX_BODY_BYTES"][0] == (
        "Largest request body accepted; a larger one gets 413 before it is read."
    )
    assert all(len(what) > 20 for what, _ in said.values())
    assert "a misspelling?" in help_text


def test_help_shows_the_name_it_was_run_as(tmp_path: Path) -> None:
    """As a console script runs the command line, under whatever name it was installed."""
    script = tmp_path / "renamed-hook"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom app.cli.entry import run\nsys.exit(run())\n"
    )
    script.chmod(0o755)
    done = subprocess.run(
        [str(script), "serve", "--help"], cwd=tmp_path, env=os.environ | {"PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout.startswith("usage: renamed-hook serve [-h] [--host HOST] [--port PORT]\n")


@pytest.mark.parametrize(
    ("environ", "lines"),
    [
        pytest.param({"MXJOB_MAX_BODY_BYTE": "1"},
                     ["MXJOB_MAX_BODY_BYTE is not a setting and is ignored; did you mean MXJOB_MAX_BODY_BYTES?"],
                     id="misspelt"),
        pytest.param({"MXJOB_TLS_CERT": "/tls.crt", "MXJOB_LOGLEVEL": "DEBUG"},
                     ["MXJOB_LOGLEVEL is not a setting and is ignored; did you mean MXJOB_LOG_LEVEL?",
                      "MXJOB_TLS_CERT is not a setting and is ignored; did you mean MXJOB_TLS_CERT_FILE?"],
                     id="two-sorted"),
        pytest.param({"MXJOB_COLOUR": "blue"}, ["MXJOB_COLOUR is not a setting and is ignored"],
                     id="nothing-close"),
        pytest.param({"MXJOB_HTTP": "h11", "HOME": "/root", "mxjob_http": "h11"}, [], id="settings-and-others"),
        pytest.param({"MXJOB_CACHE_DIR": "/cache"}, [], id="the-build-scripts-cache"),
        pytest.param({"MXJOB_CONTROLLER_SERVICE_HOST": "10.0.0.1", "MXJOB_CONTROLLER_SERVICE_PORT": "80",
                      "MXJOB_CONTROLLER_SERVICE_PORT_HTTP": "80", "MXJOB_CONTROLLER_PORT": "tcp://10.0.0.1:80",
                      "MXJOB_CONTROLLER_PORT_80_TCP": "tcp://10.0.0.1:80",
                      "MXJOB_CONTROLLER_PORT_80_TCP_PROTO": "tcp", "MXJOB_CONTROLLER_PORT_80_TCP_PORT": "80",
                      "MXJOB_CONTROLLER_PORT_80_TCP_ADDR": "10.0.0.1"}, [], id="service-links"),
        pytest.param({"MXJOB_PORT": "8080"}, ["MXJOB_PORT is not a setting and is ignored"],
                     id="a-port-that-is-no-service-link"),
    ],
)  # fmt: skip
def test_a_variable_that_is_no_setting_is_warned_about(
    environ: dict[str, str], lines: list[str]
) -> None:
    assert warnings(environ) == lines
