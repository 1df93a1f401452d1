"""Every setting's error names its environment variable and what it allows, on one line, and
the commands stop with exit 2 and no traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.service.errors import SettingsError
from app.service.settings import Settings, from_env, variable
from tests.support import REPO
from tests.support.servers import self_signed

# One bad value per setting, and the line it gets.
BAD = [
    ("MXJOB_FROZEN_CLOCK", "2026-11-22T12:00:00",
     "MXJOB_FROZEN_CLOCK='2026-11-22T12:00:00': needs a time zone, e.g. 2026-11-22T12:00:00Z"),
    ("MXJOB_FROZEN_CLOCK", "noon",
     "MXJOB_FROZEN_CLOCK='noon': must be an RFC 3339 time with a time zone, "
     "e.g. 2026-11-22T12:00:00Z"),
    ("MXJOB_MAX_BODY_BYTES", "-1", "MXJOB_MAX_BODY_BYTES='-1': must be an integer greater than 0"),
    ("MXJOB_MAX_BODY_BYTES", "64Mi",
     "MXJOB_MAX_BODY_BYTES='64Mi': must be an integer greater than 0"),
    ("MXJOB_SLOW_SYNC_SECONDS", "0",
     "MXJOB_SLOW_SYNC_SECONDS='0': must be a number greater than 0"),
    ("MXJOB_AUTH_TOKEN", " ",
     "MXJOB_AUTH_TOKEN=(hidden): is empty; unset it to turn authentication off"),
    ("MXJOB_AUTH_TOKEN_FILE", "/nonexistent", "MXJOB_AUTH_TOKEN_FILE='/nonexistent': must be a readable file"),
    ("MXJOB_TLS_CERT_FILE", "/nonexistent", "MXJOB_TLS_CERT_FILE='/nonexistent': must be a readable file"),
    ("MXJOB_TLS_KEY_FILE", "/nonexistent", "MXJOB_TLS_KEY_FILE='/nonexistent': must be a readable file"),
    ("MXJOB_LOG_LEVEL", "loud",
     "MXJOB_LOG_LEVEL='loud': must be DEBUG, INFO, WARNING, ERROR or CRITICAL"),
    ("MXJOB_WEBHOOK_TIMEOUT_SECONDS", "-5",
     "MXJOB_WEBHOOK_TIMEOUT_SECONDS='-5': must be a number greater than 0"),
    ("MXJOB_HEADER_TIMEOUT_SECONDS", "soon",
     "MXJOB_HEADER_TIMEOUT_SECONDS='soon': must be a number greater than 0"),
    ("MXJOB_READ_CHUNK_TIMEOUT_SECONDS", "0",
     "MXJOB_READ_CHUNK_TIMEOUT_SECONDS='0': must be a number greater than 0"),
    ("MXJOB_READ_TIMEOUT_SECONDS", "0",
     "MXJOB_READ_TIMEOUT_SECONDS='0': must be a number greater than 0"),
    ("MXJOB_SEND_TIMEOUT_SECONDS", "0",
     "MXJOB_SEND_TIMEOUT_SECONDS='0': must be a number greater than 0"),
    ("MXJOB_BYTES_IN_FLIGHT", "0", "MXJOB_BYTES_IN_FLIGHT='0': must be an integer greater than 0"),
    ("MXJOB_MAX_CONNECTIONS", "1.5",
     "MXJOB_MAX_CONNECTIONS='1.5': must be an integer greater than 0"),
    ("MXJOB_HTTP", "h2", "MXJOB_HTTP='h2': must be one of httptools, h11"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "value", "line"), [pytest.param(*c, id=c[0]) for c in BAD])
def test_a_bad_setting_names_its_variable_and_range(name: str, value: str, line: str) -> None:
    with pytest.raises(SettingsError) as raised:
        from_env({name: value})
    assert str(raised.value) == line


def test_every_setting_has_a_bad_case() -> None:
    assert {variable(name) for name in Settings.model_fields} == {name for name, _, _ in BAD}


@pytest.mark.parametrize(
    ("env", "line"),
    [
        pytest.param({"MXJOB_TLS_CERT_FILE": "{cert}"},
                     "MXJOB_TLS_CERT_FILE and MXJOB_TLS_KEY_FILE go together", id="pair"),
        pytest.param({"MXJOB_MAX_BODY_BYTES": "1000", "MXJOB_BYTES_IN_FLIGHT": "999"},
                     "MXJOB_BYTES_IN_FLIGHT must be at least MXJOB_MAX_BODY_BYTES", id="budget"),
    ],
)  # fmt: skip
def test_a_rule_over_several_settings_names_them(
    env: dict[str, str], line: str, tmp_path: Path
) -> None:
    cert = self_signed(tmp_path).cert  # a real certificate: only the key is missing
    with pytest.raises(SettingsError) as raised:
        from_env({name: value.format(cert=cert) for name, value in env.items()})
    assert str(raised.value) == line


def command(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MXJOB_")}
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=REPO,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.slow  # the real command in a process of its own: half a second or more
@pytest.mark.parametrize(
    ("args", "env", "stderr"),
    [
        pytest.param(
            ["serve"], {"MXJOB_MAX_BODY_BYTES": "-1", "MXJOB_HTTP": "h2"},
            "python -m app serve: MXJOB_MAX_BODY_BYTES='-1': must be an integer greater than 0\n"
            "python -m app serve: MXJOB_HTTP='h2': must be one of httptools, h11\n",
            id="serve",
        ),
        pytest.param(
            ["serve", "--port", "99999"], {},
            "usage: python -m app serve [-h] [--host HOST] [--port PORT]\n"
            "python -m app serve: error: argument --port: '99999' is not a port: "
            "an integer from 0 to 65535\n",
            id="serve-port",
        ),
        pytest.param(
            ["kueue-status"], {"KUBECONFIG": "/nonexistent/kubeconfig"},
            "python -m app kueue-status: no cluster to talk to: "
            "Configuration file /nonexistent/kubeconfig not found\n",
            id="kueue-status",
        ),
    ],
)  # fmt: skip
def test_the_commands_stop_with_one_line_and_exit_2(
    args: list[str], env: dict[str, str], stderr: str
) -> None:
    done = command(args, env)
    assert (done.returncode, done.stderr) == (2, stderr)


@pytest.mark.slow  # the real command in a process of its own: half a second or more
def test_the_ttl_controller_stops_with_one_line_and_exit_2() -> None:
    done = command(["ttl-controller", "--port", "0"], {"KUBECONFIG": "/nonexistent/kubeconfig"})
    assert done.returncode == 2
    (line,) = (done.stdout + done.stderr).splitlines()
    assert "no cluster to talk to: Configuration file /nonexistent/kubeconfig not found" in line
