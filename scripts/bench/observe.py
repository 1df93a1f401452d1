"""What the end-to-end bench observes of the real stack besides its watches: CPU seconds and
memory of a process (/proc), the hook's sync count (its /metrics) and its log, Metacontroller's
API requests (the API server's audit log), and the machine's load."""

import json
import os
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def hook_syncs(url: str) -> float:
    text = httpx.get(f"{url}/metrics", trust_env=False, timeout=30).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("mxjob_sync_requests_total{")
    )


def json_lines(log: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a log, one a line; other lines (a start-up message) are skipped."""
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def hook_log(log: Path, namespace: str) -> list[tuple[int, float]]:
    """(request bytes, milliseconds) of every sync the hook answered for `namespace`, from its
    JSON log lines (`body_bytes`, `duration_ms`)."""
    return [
        (int(entry["body_bytes"]), float(entry["duration_ms"]))
        for entry in json_lines(log)
        if entry.get("namespace") == namespace
        and entry.get("status") == 200
        and "body_bytes" in entry
    ]


def audit_events(log: Path, offset: int) -> Iterator[dict[str, Any]]:
    """The API server's audit events logged since `offset` (a byte offset of its log)."""
    with log.open("rb") as lines:
        lines.seek(offset)
        for line in lines:
            yield json.loads(line)


def audited(log: Path, offset: int, namespace: str, agent: str = "metacontroller") -> Counter[str]:
    """The controller's requests (its user agent starts with `agent`) in `namespace` since
    `offset`, by verb."""
    verbs: Counter[str] = Counter()
    for event in audit_events(log, offset):
        ref = event.get("objectRef") or {}
        if ref.get("namespace") == namespace and event.get("userAgent", "").startswith(agent):
            verbs[event["verb"]] += 1
    return verbs


def memory_mib(pid: int) -> tuple[float, float]:
    """A process's peak and current resident memory (VmHWM, VmRSS), MiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    peak, now = (int(fields[k].split()[0]) / 1024 for k in ("VmHWM", "VmRSS"))
    return peak, now


class LoadAverage:
    """The machine's 1-minute load average (/proc/loadavg), sampled every 10 s while in use:
    `seen` is the range over the run (other work shares the machine)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.samples.append(float(Path("/proc/loadavg").read_text().split()[0]))
            if self._stop.wait(10):
                return

    def __enter__(self) -> "LoadAverage":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def seen(self) -> str:
        if not self.samples:
            return "not sampled"
        return f"{min(self.samples):.1f} to {max(self.samples):.1f}"
