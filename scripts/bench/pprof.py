"""A CPU profile of Metacontroller while the end-to-end bench runs a scenario (`--pprof N`).

Metacontroller serves Go's pprof with `--pprof-address`; `CpuProfile` fetches
`/debug/pprof/profile?seconds=N` in a thread from the moment the scenario starts, and `top`
reads it with `go tool pprof -top`.
"""

import shutil
import subprocess
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from localcluster.ports import free_port


@dataclass
class CpuProfile:
    seconds: int
    out: Path
    port: int = field(default_factory=free_port)
    _thread: threading.Thread | None = None

    @property
    def flag(self) -> str:
        return f"--pprof-address=127.0.0.1:{self.port}"

    def start(self) -> None:
        url = f"http://127.0.0.1:{self.port}/debug/pprof/profile?seconds={self.seconds}"

        def fetch() -> None:
            with urllib.request.urlopen(url, timeout=self.seconds + 60) as response:
                self.out.write_bytes(response.read())

        self._thread = threading.Thread(target=fetch, daemon=True)
        self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=self.seconds + 90)


def top(profile: Path, binary: Path, count: int = 30) -> str:
    """`go tool pprof -top` of the profile, by flat and by cumulative time."""
    go = shutil.which("go")
    if go is None or not profile.exists():
        return f"(no profile at {profile}, or no `go` on PATH)"
    lines = []
    for order in ("-flat", "-cum"):
        done = subprocess.run(
            [go, "tool", "pprof", "-top", order, f"-nodecount={count}", str(binary), str(profile)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        lines.append(done.stdout or done.stderr)
    return "\n".join(lines)
