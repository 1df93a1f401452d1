"""Ctrl-C (SIGINT), sent to each real command while it works: no traceback, ever; serve and the
TTL controller finish what is in flight and exit 0, the others exit 130 at once."""

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.support import REPO
from tests.support.empty_cluster import empty_cluster
from tests.support.servers import component, start, wait_for
from tests.support.silent_cluster import silent_cluster

pytestmark = pytest.mark.slow

INTERRUPTED = 130
# The number of read(2) in /proc/PID/syscall, by machine.
READ = {"x86_64": "0", "aarch64": "63"}


def reading_stdin(proc: subprocess.Popen[str]) -> bool:
    """Whether `proc` is blocked reading its standard input (fd 0), from /proc/PID/syscall."""
    assert proc.poll() is None, proc.communicate()
    machine = os.uname().machine
    assert machine in READ, f"no read(2) number known for {machine}"
    # "running", or the call's number and its arguments, the first of them the fd.
    called = Path(f"/proc/{proc.pid}/syscall").read_text().split()
    return called[:2] == [READ[machine], "0x0"]


def interrupted(proc: subprocess.Popen[str], timeout: float = 30) -> tuple[int, str, str]:
    """Ctrl-C `proc`; its exit code, stdout and stderr once it has ended."""
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def command(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "app", *args],
        cwd=REPO, env=os.environ | (env or {}), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_serve_shuts_down_and_exits_0() -> None:
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        server = start({}, log)
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
        assert server.stop(signal.SIGINT) == 0
        lines = [json.loads(line) for line in server.log_lines()]  # every line JSON, no traceback
    assert lines[-1]["message"].startswith("Finished server process")


def test_render_reading_stdin_exits_130_in_silence() -> None:
    proc = command("render", "-")
    wait_for(lambda: reading_stdin(proc), 30, "render reading its standard input")
    assert interrupted(proc) == (INTERRUPTED, "", "")


@pytest.mark.parametrize(
    ("name", "code"), [("ttl-controller", 0), ("kueue-status", INTERRUPTED)], ids=str
)
def test_a_component_stops_without_a_traceback(tmp_path: Path, name: str, code: int) -> None:
    with empty_cluster(tmp_path / "kubeconfig") as kubeconfig, component(name, kubeconfig) as c:
        assert c.stop(signal.SIGINT) == code
        said = "\n".join(c.log_lines())
    assert "Traceback" not in said
    assert "KeyboardInterrupt" not in said


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        pytest.param([], "python -m app takeover: interrupted; what it changed stays, run it "
                     "again to finish\n", id="takeover"),
        pytest.param(["--dry-run"], "", id="dry-run"),
    ],
)  # fmt: skip
def test_takeover_waiting_on_the_api_server_exits_130(
    tmp_path: Path, args: list[str], stderr: str
) -> None:
    with silent_cluster(tmp_path / "kubeconfig") as cluster:
        env = {"KUBECONFIG": str(cluster.kubeconfig)}
        proc = command("takeover", "--no-operator-check", *args, env=env)
        assert cluster.asked.wait(30), proc.communicate(timeout=30)
        assert interrupted(proc) == (INTERRUPTED, "", stderr)
