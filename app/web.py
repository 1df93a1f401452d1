"""The thin HTTP layer: check the caller, read the body, read the clock, call the core,
serialize, and log and count every answer."""

import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app import __version__, metrics, settings
from app.auth import BearerToken
from app.envelope import BadRequest, SyncRequest
from app.logging import JOB, LOGGER
from app.reconcile import sync
from app.status import REASON_INVALID

log = logging.getLogger(f"{LOGGER}.sync")
# A request larger than this (or of unknown length) is read and answered one at a time.
LARGE_BODY = 8 * 1024 * 1024
# A request at most this large, for a job of at most INLINE_REPLICAS replicas, is answered on
# the event loop: about a millisecond of work, less than the hop to a worker thread costs
# under load (it took a third of the small job's throughput).
INLINE_BODY = 64 * 1024
INLINE_REPLICAS = 16

_DETAIL = {
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"detail": {"type": "string"}},
                "required": ["detail"],
            }
        }
    }
}
_ANSWER = {
    "type": "object",
    "properties": {
        "status": {"type": "object"},
        "children": {"type": "array", "items": {"type": "object"}},
        "resyncAfterSeconds": {"type": "integer", "minimum": 0},
    },
    "required": ["status", "children", "resyncAfterSeconds"],
}
# The request model's own definitions go under components/schemas, where `$ref`s in an
# OpenAPI document resolve (a `#/$defs/...` ref would point at the document's root).
_REQUEST = SyncRequest.model_json_schema(ref_template="#/components/schemas/{model}")
_DEFS = _REQUEST.pop("$defs", {})
_SYNC_DOC: dict[str, Any] = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": _REQUEST}}}
}
_SYNC_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The desired status and children",
        "content": {"application/json": {"schema": _ANSWER}},
    },
    401: {"description": "Missing or wrong bearer token (only when auth is on)"} | _DETAIL,
    413: {"description": "Body larger than MXJOB_MAX_BODY_BYTES"} | _DETAIL,
    422: {"description": "Not a sync request"} | _DETAIL,
    500: {"description": "A bug in the hook (logged)"} | _DETAIL,
}
_TEXT: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/plain": {"schema": {"type": "string"}}}}
}


Job = tuple[str | None, str | None]


class Refused(Exception):
    """A request answered with a 4xx: not authorised, too large, or not a sync request."""

    def __init__(self, status: int, outcome: str, detail: str, job: Job = (None, None)) -> None:
        super().__init__(detail)
        self.status, self.outcome, self.detail, self.job = status, outcome, detail, job


class Crashed(Exception):
    """The core raised: a bug, answered with 500 and logged with the job it was about."""

    def __init__(self, job: Job) -> None:
        super().__init__(f"sync of {job} crashed")
        self.job = job


@dataclass(frozen=True)
class Answer:
    body: bytes
    outcome: str
    children: int
    job: Job
    body_bytes: int


def create_app(config: settings.Settings) -> FastAPI:
    """The ASGI app for these settings (one per process; tests make their own)."""
    app = FastAPI(
        title="mxjob-controller",
        summary="Metacontroller sync hook for Kubeflow MXJobs (kubeflow.org/v1).",
        version=__version__,
    )
    token = BearerToken(config)
    # Syncs are CPU-bound and hold the GIL: all but the smallest (INLINE_BODY) run one at a
    # time off the event loop, so that probes still answer during a big one. A large request
    # also holds a slot of its own from its first byte to its answer, so that however many
    # Metacontroller sends at once, memory holds one of them (docs/reliability.md).
    one_at_a_time, one_large = anyio.CapacityLimiter(1), anyio.CapacityLimiter(1)

    async def answer(request: Request) -> Answer:
        if not token.allows(request.headers.get("authorization")):
            raise Refused(401, "unauthorized", "missing or wrong bearer token")
        declared = _declared_length(request, config.max_body_bytes)
        large = declared is None or declared > LARGE_BODY
        async with one_large if large else contextlib.nullcontext():
            body = await _read_body(request, config.max_body_bytes)
            now = config.frozen_clock or datetime.now(UTC)
            if len(body) > INLINE_BODY:
                return await anyio.to_thread.run_sync(
                    _parse_and_answer, body, now, limiter=one_at_a_time
                )
            parsed = _parse(body)
            if _few_replicas(parsed):
                return _answer(parsed, now, len(body))
            return await anyio.to_thread.run_sync(
                _answer, parsed, now, len(body), limiter=one_at_a_time
            )

    @app.post("/sync", openapi_extra=_SYNC_DOC, responses=_SYNC_RESPONSES, response_model=None)
    async def sync_hook(request: Request) -> Response:
        started = time.perf_counter()
        try:
            done = await answer(request)
        except Refused as err:
            JOB.set(err.job)
            return _refused(err, time.perf_counter() - started)
        except Crashed as err:
            JOB.set(err.job)
            return _crashed(time.perf_counter() - started)
        JOB.set(done.job)
        seconds = time.perf_counter() - started
        _log_answer(done, seconds, config.slow_sync_seconds)
        metrics.observe(done.outcome, seconds)
        return Response(done.body, media_type="application/json")

    documented = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            documented().setdefault("components", {}).setdefault("schemas", {}).update(_DEFS)
        return documented()

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/healthz", response_class=PlainTextResponse, responses=_TEXT)
    async def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    @app.get("/metrics", response_class=PlainTextResponse, responses=_TEXT)
    async def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)

    return app


def _declared_length(request: Request, limit: int) -> int | None:
    """Content-Length, refused with 413 before any of the body is read when over `limit`."""
    declared = request.headers.get("content-length", "")
    if not declared.isdigit():
        return None
    if int(declared) > limit:
        raise Refused(413, "too_large", f"request body of {declared} bytes exceeds {limit}")
    return int(declared)


async def _read_body(request: Request, limit: int) -> bytearray:
    """The body, refused with 413 as soon as a chunked one passes `limit` bytes."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Refused(413, "too_large", f"request body exceeds {limit} bytes")
    return body


def _parse_and_answer(body: bytearray, now: datetime) -> Answer:
    return _answer(_parse(body), now, len(body))


def _parse(body: bytearray) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise Refused(422, "bad_request", f"request body is not JSON: {err}") from None


def _few_replicas(body: Any) -> bool:
    """Whether the job asks for at most INLINE_REPLICAS replicas (an absent count is 1, as
    in the spec's defaults), so that answering it is a small, bounded piece of work. Only
    chooses where the sync runs: anything unexpected counts as many."""
    parent = body.get("parent") if isinstance(body, dict) else None
    spec = parent.get("spec") if isinstance(parent, dict) else None
    specs = spec.get("mxReplicaSpecs") if isinstance(spec, dict) else None
    if not isinstance(specs, dict):
        return False
    total = 0
    for replica in specs.values():
        count = replica.get("replicas", 1) if isinstance(replica, dict) else None
        if type(count) is not int or count < 0:
            return False
        total += count
    return total <= INLINE_REPLICAS


def _answer(parsed: Any, now: datetime, body_bytes: int) -> Answer:
    """Sync and serialize a parsed request."""
    job = _job_of(parsed)
    try:
        answer = sync(parsed, now)
        out = orjson.dumps(answer)
    except BadRequest as err:
        raise Refused(422, "bad_request", str(err), job) from None
    except orjson.JSONEncodeError as err:
        # orjson writes at most 254 levels of nesting but reads 1024; only a pod template
        # nested that deep gets here, and no API server would have stored it.
        raise Refused(422, "bad_request", f"cannot answer this request: {err}", job) from None
    except Exception as err:
        raise Crashed(job) from err
    return Answer(out, _outcome(answer), len(answer["children"]), job, body_bytes)


def _job_of(body: Any) -> Job:
    parent = body.get("parent") if isinstance(body, dict) else None
    meta = parent.get("metadata") if isinstance(parent, dict) else None
    if not isinstance(meta, dict):
        return None, None
    return _text(meta.get("namespace")), _text(meta.get("name"))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _outcome(answer: dict[str, Any]) -> str:
    reasons = {c.get("reason") for c in answer["status"]["conditions"]}
    return "invalid_spec" if REASON_INVALID in reasons else "ok"


def _log_answer(answer: Answer, seconds: float, budget: float) -> None:
    fields = {
        "outcome": answer.outcome,
        "status": 200,
        "children": answer.children,
        "body_bytes": answer.body_bytes,
        "duration_ms": round(seconds * 1000, 1),
    }
    if seconds > budget:
        log.warning("slow sync: %.2f s, budget %.2f s", seconds, budget, extra=fields)
    else:
        log.info("sync answered", extra=fields)


def _refused(err: Refused, seconds: float) -> JSONResponse:
    metrics.observe(err.outcome, seconds)
    fields = {"outcome": err.outcome, "status": err.status, "duration_ms": round(seconds * 1e3, 1)}
    log.warning("sync refused: %s", err.detail, extra=fields)
    headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else None
    return JSONResponse({"detail": err.detail}, status_code=err.status, headers=headers)


def _crashed(seconds: float) -> JSONResponse:
    metrics.observe("error", seconds)
    log.exception("sync failed", extra={"outcome": "error", "status": 500})
    return JSONResponse({"detail": "internal error in the sync hook (logged)"}, status_code=500)


app = create_app(settings.from_env())
