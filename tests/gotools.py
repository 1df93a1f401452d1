"""The Go tools built by scripts/go-tools.sh (helm, promtool, actionlint, kube-controllers, the
monitoring CRDs): built once, cached outside the tree, paths parsed from the script's output."""

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "go-tools.sh"
BUILD_TIMEOUT = 3600  # a cold build of every tool on 2 shared cores


class GoToolError(RuntimeError):
    pass


def obtain(tools: list[str], progress: Callable[[str], None]) -> dict[str, Path]:
    """Run the script for `tools`; its progress lines go to `progress` as they come."""
    lines: list[str] = []
    with subprocess.Popen(
        ["bash", str(SCRIPT), *tools], text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    ) as process:  # fmt: skip
        assert process.stdout is not None

        def follow() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                lines.append(line)
                if line.startswith("go-tools:"):
                    progress(line.rstrip())

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        try:
            process.wait(timeout=BUILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            lines.append(f"(stopped after {BUILD_TIMEOUT} s)\n")
        reader.join(timeout=10)
    if process.returncode != 0:
        raise GoToolError(f"{SCRIPT} {' '.join(tools)} failed:\n" + "".join(lines))
    paths = dict(line.strip().split("=", 1) for line in lines if line[:1].isupper() and "=" in line)
    return {key: Path(value) for key, value in paths.items()}
