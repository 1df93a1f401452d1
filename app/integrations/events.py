"""The job's Events for `kubectl describe mxjob`: an Event per condition transition, as children."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.core.model import conditions, kinds
from app.core.model.envelope import ObjectMeta, SyncRequest
from app.core.model.seam import ContributionDefaults, Decision, Integration, SyncInputs
from app.core.model.values import parse_time, seconds_until
from app.core.mxnet import names

EVENT = "Event"
# Declared by manifests/components/events.
CHILD_TYPE = kinds.child_type(EVENT, kinds.CORE_API_VERSION)
# Metacontroller recreates a desired child that vanishes, so an Event must stop being desired
# before the API server expires it (--event-ttl, 1 h by default). The hook asks for the sync
# that drops it (`expiry_in`): nothing else may sync a job at rest before its Events expire.
MAX_AGE_SECONDS = 50 * 60
# A job that keeps restarting makes two Events a restart; the newest are kept.
MAX_EVENTS = 20
_WARNINGS = (conditions.RESTARTING, conditions.FAILED)
# What an Event of ours carries, kept as observed: an Event is a record, never rewritten.
_FIELDS = ("type", "reason", "message", "firstTimestamp", "lastTimestamp", "count", "source")


def desired(
    parent: ObjectMeta,
    conds: list[conditions.Condition],
    observed: list[dict[str, Any]],
    now: datetime,
) -> list[dict[str, Any]]:
    """The job's Events: one for the last transition of each True condition, and the earlier
    ones still observed; none older than MAX_AGE_SECONDS, at most MAX_EVENTS. The same request
    always yields the same Events, so a job at rest causes no write."""
    current = _transitions(parent, conds)
    wanted = {e["metadata"]["name"]: e for e in current}
    for event in observed:
        written = _as_written(parent, event)
        if written is not None:
            wanted.setdefault(written["metadata"]["name"], written)
    young = [e for e in wanted.values() if _age(e, now) < MAX_AGE_SECONDS]
    young.sort(key=lambda e: (e["firstTimestamp"], e["metadata"]["name"]))
    return _collapsed(young, {c["metadata"]["name"] for c in current})[-MAX_EVENTS:]


def expiry_in(job_events: list[dict[str, Any]], now: datetime) -> int:
    """Seconds until the oldest of these Events is MAX_AGE_SECONDS old (0 without any): the
    sync then stops wanting it."""
    born = [at for at in (parse_time(e["firstTimestamp"]) for e in job_events) if at is not None]
    return seconds_until(min(born), MAX_AGE_SECONDS, now) if born else 0


def _collapsed(timeline: list[dict[str, Any]], current: set[str]) -> list[dict[str, Any]]:
    """One Event for a run of the same reason (the status's own if in the run, else the newest):
    a repeat with nothing between is one transition stamped twice by a sync that saw the status
    from before the last write."""
    out: list[dict[str, Any]] = []
    for event in timeline:
        if not out or out[-1]["reason"] != event["reason"]:
            out.append(event)
        elif out[-1]["metadata"]["name"] not in current:
            out[-1] = event
    return out


def _age(event: dict[str, Any], now: datetime) -> float:
    at = parse_time(event["firstTimestamp"])
    return (now - at).total_seconds() if at else MAX_AGE_SECONDS


def _transitions(parent: ObjectMeta, conds: list[conditions.Condition]) -> list[dict[str, Any]]:
    out = []
    for cond in conds:
        at = parse_time(cond.get("lastTransitionTime"))
        if cond.get("status") == "True" and at is not None:
            out.append(_event(parent, cond, cond["lastTransitionTime"], int(at.timestamp())))
    return out


def _event(parent: ObjectMeta, cond: conditions.Condition, at: str, epoch: int) -> dict[str, Any]:
    return _envelope(parent, f"{parent.name}.{cond['type'].lower()}-{epoch:x}") | {
        "type": "Warning" if cond["type"] in _WARNINGS else "Normal",
        "reason": cond.get("reason", cond["type"]),
        "message": cond.get("message", ""),
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
        "source": {"component": names.OPERATOR_NAME},
    }


def _envelope(parent: ObjectMeta, name: str) -> dict[str, Any]:
    involved = kinds.header(kinds.MXJOB, kinds.MXJOB_API_VERSION) | {"name": parent.name}
    # kubectl describe finds a job's Events by involvedObject namespace, name, kind and uid.
    involved |= {k: v for k, v in (("namespace", parent.namespace), ("uid", parent.uid)) if v}
    return kinds.header(EVENT) | {
        "metadata": {
            "name": name,
            "labels": names.job_labels(parent.name),
        },
        "involvedObject": involved,
        "reportingComponent": names.OPERATOR_NAME,
    }


def _as_written(parent: ObjectMeta, event: dict[str, Any]) -> dict[str, Any] | None:
    """An observed Event of this job as it was written, or None if it is not one of ours."""
    meta = event.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name.startswith(f"{parent.name}."):
        return None
    if not isinstance(event.get("firstTimestamp"), str):
        return None
    return _envelope(parent, name) | {k: event[k] for k in _FIELDS if k in event}


@dataclass(frozen=True)
class EventsContribution(ContributionDefaults):
    """The Events' part in one sync: nothing reported before the decision; after it, the job's
    Events and the sync that drops the oldest."""

    request: SyncRequest
    report: None = None

    def children(self, decision: Decision, now: datetime) -> tuple[list[dict[str, Any]], int]:
        """The job's Events, and when the oldest must go."""
        seen = self.request.observed(CHILD_TYPE)
        job_events = desired(self.request.parent.metadata, decision.conditions, seen, now)
        return job_events, expiry_in(job_events, now)


def contribute(inputs: SyncInputs) -> EventsContribution | None:
    """The Events' contribution to a sync: None unless the controller declares Event children."""
    return EventsContribution(inputs.request) if inputs.request.declares(CHILD_TYPE) else None


INTEGRATION = Integration("events", contribute)
