"""The hook under soak: `python -m app serve` on loopback with a frozen clock, stopped with
SIGTERM, and its resident memory."""

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from localcluster.realstack import hook_command
from tests.support import jobs as s

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"  # loopback only, by design: there is no option to point this elsewhere


@dataclass
class Server:
    port: int
    log: IO[bytes]
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        env = os.environ | {"MXJOB_FROZEN_CLOCK": s.NOW.isoformat()}
        self.proc = subprocess.Popen(
            hook_command(self.port, HOST),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("the hook did not start within 30 s")

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")
