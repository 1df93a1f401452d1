"""One latency, a deciding pod write to the status write that shows its condition, cut into
its parts from the audit log and the hook's answers."""

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from scripts.bench.latency import AGENT
from scripts.bench.latency.logs import Sync, stamp

Event = dict[str, Any]


@dataclass
class Breakdown:
    """One deciding pod write to the status write that shows its condition, in seconds."""

    condition: str
    total: float
    parts: dict[str, float]
    watched: float  # the same latency by the bench's clock and watch, for a cross-check
    requests_after: Counter[str] = field(default_factory=Counter)
    trace: dict[str, float] = field(default_factory=dict)
    # `kubectl apply` to the job's last pod or Service by the bench's watch: every child made.
    all_children: float = 0.0


def _is(event: Event, resource: str, subresource: str | None, name: str) -> bool:
    ref = event.get("objectRef") or {}
    return (ref.get("resource"), ref.get("subresource"), ref.get("name")) == (
        resource,
        subresource,
        name,
    )


def _carries(event: Event, condition: str) -> bool:
    status = (event.get("requestObject") or {}).get("status") or {}
    return any(
        c.get("type") == condition and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def placed(syncs: list[Sync], reads: list[float]) -> list[Sync]:
    """Each sync as Metacontroller saw it. Every sync ends with a GET of the job before its
    status update (`AtomicStatusUpdate`), so the n-th GET follows the n-th answer. The hook
    logs an answer once it is sent, up to tens of ms late on a busy machine: the answer was in
    at the latest at its GET (the duration, `perf_counter`'s, stays the hook's)."""
    if len(reads) != len(syncs):
        raise ValueError(f"{len(syncs)} hook answers but {len(reads)} GETs of the job")
    out = []
    for sync, read in zip(syncs, reads, strict=True):
        shift = max(sync.answered - read, 0.0)
        out.append(Sync(sync.received - shift, sync.answered - shift))
    return out


def pod_write(events: list[Event], pod: str, after: float) -> Event:
    """The bench's first status write of `pod` received after `after`."""
    return next(
        e for e in events
        if _is(e, "pods", "status", pod) and e["userAgent"].startswith(AGENT)
        and stamp(e["requestReceivedTimestamp"]) >= after
    )  # fmt: skip


def status_write(events: list[Event], job: str, condition: str, since: float) -> Event:
    """Metacontroller's first `mxjobs/status` update of `job` since `since` with `condition`
    True."""
    return next(
        e for e in events
        if _is(e, "mxjobs", "status", job) and e["verb"] == "update"
        and e["userAgent"].startswith("metacontroller") and _carries(e, condition)
        and stamp(e["requestReceivedTimestamp"]) >= since
    )  # fmt: skip


def job_reads(ours: list[Event], job: str) -> list[float]:
    """When Metacontroller's GETs of the job were received: one ends each sync."""
    return sorted(
        stamp(e["requestReceivedTimestamp"])
        for e in ours
        if _is(e, "mxjobs", None, job) and e["verb"] == "get"
    )


def earlier_sync(ours: list[Event], syncs: list[Sync], index: int, t0: float) -> float:
    """How long after the pod write (`t0`) the sync before the deciding one (`index`) still
    ran: its answer or its last request, whichever ended later."""
    deciding, busy_until = syncs[index], t0
    if index > 0:
        earlier = syncs[index - 1]
        busy_until = max(
            [earlier.answered]
            + [
                stamp(e["stageTimestamp"])
                for e in ours
                if earlier.answered <= stamp(e["requestReceivedTimestamp"]) < deciding.received
            ]
        )
    return min(max(busy_until - t0, 0.0), max(deciding.received - t0, 0.0))


def requests_between(ours: list[Event], start: float, end: float) -> Counter[str]:
    """Metacontroller's writes received in [start, end), by verb and resource."""
    window = [e for e in ours if start <= stamp(e["requestReceivedTimestamp"]) < end]
    return Counter(
        f"{e['verb']} {e['objectRef'].get('resource')}" for e in window if e["verb"] != "get"
    )


def worker_trace(starts: list[float], deciding: Sync, t0: float, waited: float) -> dict[str, float]:
    """`to the hook` split at the worker's `Sync` line, when Metacontroller logged one."""
    taken = [s for s in starts if s <= deciding.received]
    if not taken:
        return {}
    return {
        "waiting for a worker": taken[-1] - t0 - waited,
        "worker before the hook": deciding.received - taken[-1],
    }


def breakdown(
    events: list[Event],
    syncs: list[Sync],
    starts: list[float],
    pod: str,
    job: str,
    condition: str,
    after: float,
    watched: float,
) -> Breakdown:
    """The parts of one latency: `pod`'s first status write received after `after` to the
    first `mxjobs/status` update of `job` that carries `condition` True."""
    t0 = stamp(pod_write(events, pod, after)["stageTimestamp"])
    status = status_write(events, job, condition, t0)
    received, done = stamp(status["requestReceivedTimestamp"]), stamp(status["stageTimestamp"])
    ours = [e for e in events if e["userAgent"].startswith("metacontroller")]
    reads = job_reads(ours, job)
    syncs = placed(syncs, reads)
    index = max(i for i, r in enumerate(reads) if r <= received)
    deciding, read = syncs[index], reads[index]
    waited = earlier_sync(ours, syncs, index, t0)
    parts = {
        "earlier sync": waited,
        "to the hook": deciding.received - t0 - waited,
        "hook": deciding.answered - deciding.received,
        "children": read - deciding.answered,
        "reading the job": received - read,
        "status write": done - received,
    }
    requests_after = requests_between(ours, deciding.answered, received)
    trace = worker_trace(starts, deciding, t0, waited)
    return Breakdown(condition, done - t0, parts, watched, requests_after, trace)
