"""Servers as child processes: start one in its own process group, wait until it is ready."""

import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .buildscript import stop
from .errors import ClusterError
from .waiting import NotSeen, wait_for

START_TIMEOUT = 120


@contextmanager
def running(command: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Start a command in its own process group, logging to a file; stop the group on exit."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield process
    finally:
        stop(process)


def wait_until(
    ready: Callable[[], bool],
    process: subprocess.Popen[bytes],
    log: Path,
    what: str,
    timeout: float = START_TIMEOUT,
) -> None:
    """Poll `ready` until it holds; fail with the process log if it exits or time runs out."""

    def alive_and_ready() -> bool:
        if process.poll() is not None:
            raise ClusterError(f"{what} exited {process.returncode}:\n{_tail(log)}")
        return ready()

    try:
        wait_for(alive_and_ready, what, timeout)
    except NotSeen:
        raise ClusterError(f"{what} not ready after {timeout} s:\n{_tail(log)}") from None


def _tail(log: Path, lines: int = 60) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def http_ok(url: str, context: ssl.SSLContext | None = None, token: str | None = None) -> bool:
    """Whether `url` answers 200 (a readiness or health probe)."""
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False
