"""Running one of the build scripts (scripts/k8s-binaries.sh, go-tools.sh,
metacontroller-binary.sh): their progress lines are followed as they come, since a cold build
takes minutes, and the `NAME=<path>` lines they end with are their result."""

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

BUILD_TIMEOUT = 3600  # a cold build of every Go tool on 2 shared cores
STOP_TIMEOUT = 15


class BuildScriptError(RuntimeError):
    pass


def run(
    script: Path,
    args: list[str],
    progress: Callable[[str], None],
    env: Mapping[str, str] | None = None,
    timeout: float = BUILD_TIMEOUT,
) -> dict[str, Path]:
    """Run `script` with `args`; its progress lines (those starting with the script's name and
    a colon) go to `progress` as they come. Returns the paths it printed, by name; raises
    BuildScriptError with its whole output if it fails or outlives `timeout` seconds."""
    prefix = f"{script.stem}:"
    lines: list[str] = []
    with subprocess.Popen(
        ["bash", str(script), *args], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    ) as process:  # fmt: skip

        def follow() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                lines.append(line)
                if line.startswith(prefix):
                    progress(line.rstrip())

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(process)
            lines.append(f"(stopped after {timeout:.0f} s)\n")
        reader.join(timeout=STOP_TIMEOUT)
    command = " ".join([str(script), *args])
    if process.returncode != 0:
        raise BuildScriptError(f"{command} failed ({process.returncode}):\n" + "".join(lines))
    pairs = [line.strip().split("=", 1) for line in lines if line[:1].isupper() and "=" in line]
    return {name: Path(value) for name, value in pairs}


def stop(process: subprocess.Popen[Any]) -> None:
    """A process started in a session of its own, and everything it started: SIGTERM, then
    SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=STOP_TIMEOUT)
            return
        except subprocess.TimeoutExpired:
            continue
    process.wait(timeout=STOP_TIMEOUT)
