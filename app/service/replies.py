"""A request's bytes to its answer: parsed within the parse budget, synced by the core,
serialized; errors returned as values, never raised across the worker thread."""

import traceback
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from app.core.model import envelope
from app.core.model.envelope import JobId
from app.core.model.errors import BadRequest
from app.core.reconcile import SyncResult, sync_result
from app.core.validate.costs import (
    PARSE_BUDGET,
    PARSE_COST_PER_CONTAINER,
    PARSE_COST_PER_VALUE,
    MiB,
    parse_cost,
)
from app.integrations import INTEGRATIONS, kueue
from app.service.errors import Crashed, Refused


@dataclass(frozen=True)
class Answer:
    body: bytes
    outcome: str
    children: int
    replicas: int
    job: JobId
    body_bytes: int


# What a sync in the worker thread gives back. Errors are returned, never raised across the
# thread: a raised exception's traceback holds the frames, and so the request body and the
# parsed request, in a reference cycle that only a late collection frees (the memory it held:
# docs/reliability.md).
Reply = Answer | Refused | Crashed


def customized(body: bytearray) -> Reply:
    try:
        parsed = parse(body)
    except Refused as err:
        return Refused(err.status, err.outcome, err.detail)
    answer = kueue.customize(parsed)
    job = envelope.job_of(parsed)
    if answer is None:
        return Refused(422, "bad_request", "not a customize request: no `parent` object", job)
    return Answer(orjson.dumps(answer), "ok", 0, 0, job, len(body))


def parse_and_answer(body: bytearray, now: datetime) -> Reply:
    try:
        parsed = parse(body)
    except Refused as err:
        return Refused(err.status, err.outcome, err.detail)
    return reply(parsed, now, len(body))


def parse(body: bytearray) -> Any:
    check_parse_cost(body)
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise Refused(422, "bad_request", f"request body is not JSON: {err}") from None


def check_parse_cost(body: bytes | bytearray) -> None:
    """Refuse with 413, before parsing, a body whose parse_cost is over PARSE_BUDGET. A body
    too short to reach it whatever its content is not counted."""
    most_per_byte = max(PARSE_COST_PER_CONTAINER, PARSE_COST_PER_VALUE) + 1
    if len(body) * most_per_byte <= PARSE_BUDGET:
        return
    cost = parse_cost(body)
    if cost > PARSE_BUDGET:
        raise Refused(
            413,
            "too_large",
            f"request body of {len(body)} bytes would take about {cost // MiB} MiB once "
            f"parsed, more than the hook's parse budget of {PARSE_BUDGET // MiB} MiB "
            "(too many values for its size)",
        )


def reply(parsed: Any, now: datetime, body_bytes: int) -> Reply:
    """Sync and serialize a parsed request. A TypeError from the core is a bug like any
    other, however much it looks like the serializer's (orjson's error is one)."""
    try:
        result = sync_result(parsed, now, INTEGRATIONS)
    except BadRequest as err:
        return Refused(422, "bad_request", str(err), envelope.job_of(parsed))
    except Exception:
        return Crashed(envelope.job_of(parsed), traceback.format_exc())
    job = (result.namespace, result.name)
    try:
        out = orjson.dumps(result.answer)
    except orjson.JSONEncodeError as err:
        # orjson writes at most 254 levels of nesting but reads 1024; only a pod template
        # nested that deep gets here, and no API server would have stored it.
        return Refused(422, "bad_request", f"cannot answer this request: {err}", job)
    children = len(result.answer["children"])
    return Answer(out, _outcome(result), children, result.replicas, job, body_bytes)


def _outcome(result: SyncResult) -> str:
    return "invalid_spec" if result.invalid_spec else "ok"
