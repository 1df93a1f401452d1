"""What the latency bench reads of its logs: the audit log's events, the hook's answers and
Metacontroller's `Sync` lines."""

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from scripts.bench.observe import audit_events, json_lines


@dataclass(frozen=True)
class Sync:
    """One sync the hook answered, wall-clock seconds."""

    received: float
    answered: float


def stamp(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 time (the audit log's, the hook's)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def namespace_events(log: Path, offset: int, namespace: str) -> list[dict[str, Any]]:
    """The audit events since `offset` on objects in `namespace`."""
    return [
        event
        for event in audit_events(log, offset)
        if (event.get("objectRef") or {}).get("namespace") == namespace
    ]


def hook_syncs(log: Path, namespace: str, job: str) -> list[Sync]:
    """The job's syncs from the hook's log: a line per answer, at its end, with its duration."""
    out = []
    for entry in json_lines(log):
        mine = (entry.get("namespace"), entry.get("job")) == (namespace, job)
        if mine and entry.get("status") == 200 and "duration_ms" in entry:
            answered = stamp(entry["time"])
            out.append(Sync(answered - float(entry["duration_ms"]) / 1000, answered))
    return sorted(out, key=lambda s: s.received)


def sync_starts(log: Path, namespace: str, job: str) -> list[float]:
    """When a Metacontroller worker took the job (its `Sync` line at level 4)."""
    ref = {"name": job, "namespace": namespace}
    return [
        float(entry["ts"])
        for entry in json_lines(log)
        if entry.get("msg") == "Sync" and entry.get("object") == ref
    ]


class Requests:
    """How many requests Metacontroller made in a namespace, read from the audit log as it
    grows."""

    def __init__(self, log: Path, namespace: str) -> None:
        self.log, self.namespace = log, namespace
        self.offset, self.count = log.stat().st_size, 0

    def __call__(self) -> int:
        with self.log.open("rb") as lines:
            lines.seek(self.offset)
            for line in lines:
                if not line.endswith(b"\n"):
                    break
                self.offset += len(line)
                event = json.loads(line)
                ours = event.get("userAgent", "").startswith("metacontroller")
                self.count += ours and (event.get("objectRef") or {}).get("namespace") == (
                    self.namespace
                )
        return self.count
