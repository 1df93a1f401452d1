"""The thin HTTP layer: check the caller, admit the request (its bytes, its deadlines), read
the body, read the clock, call the core, serialize, and log and count every answer."""

import contextlib
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from app import __version__
from app.core import envelope
from app.core.digits import ascii_int
from app.core.envelope import BadRequest, JobId, SyncRequest
from app.core.parsecost import (
    PARSE_BUDGET,
    PARSE_COST_PER_CONTAINER,
    PARSE_COST_PER_VALUE,
    MiB,
    parse_cost,
)
from app.core.reconcile import SyncResult, sync_result
from app.integrations import kueue
from app.service import metrics, settings
from app.service.auth import BearerToken
from app.service.budget import ByteBudget
from app.service.jsonlog import CURRENT_JOB, LOGGER

log = logging.getLogger(f"{LOGGER}.sync")
# A request larger than this (or of unknown length) is read and answered one at a time.
LARGE_BODY = 8 * 1024 * 1024
# A request at most this large, for a job of at most INLINE_REPLICAS replicas, is answered on
# the event loop: its work costs less than the hop to a worker thread (docs/performance.md,
# "The web layer, per request").
INLINE_BODY = 64 * 1024
INLINE_REPLICAS = 16
# An answer is handed to the connection in pieces of this size: the server's flow control
# makes each wait until the client took the previous one, so that the answer's bytes stay
# in the budget until the client has them (or the send deadline cut the connection).
PIECE = 1024 * 1024

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
    408: {"description": "The body did not arrive within the read deadlines"} | _DETAIL,
    413: {"description": "Body larger than MXJOB_MAX_BODY_BYTES, or too costly to parse"} | _DETAIL,
    422: {"description": "Not a sync request"} | _DETAIL,
    429: {"description": "Too many bytes in flight; retry after Retry-After"} | _DETAIL,
    500: {"description": "A bug in the hook (logged)"} | _DETAIL,
    503: {"description": "Queued longer than the webhook timeout; retry"} | _DETAIL,
}
# Metacontroller's customize request, `{controller, parent}`: the hook needs only a parent.
_CUSTOMIZE_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {"controller": {"type": "object"}, "parent": {"type": "object"}},
                    "required": ["parent"],
                }
            }
        },
    }
}
_CUSTOMIZE_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: doc for code, doc in _SYNC_RESPONSES.items() if code != 200
} | {200: {"description": "The related resources every job is synced with"}}
_TEXT: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/plain": {"schema": {"type": "string"}}}}
}


class Refused(Exception):
    """A request answered with a 4xx or 503: not authorised, too large, too slow, too many
    bytes in flight, queued too long, or not a sync request."""

    def __init__(
        self,
        status: int,
        outcome: str,
        detail: str,
        job: JobId = (None, None),
        retry_after: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.status, self.outcome, self.detail, self.job = status, outcome, detail, job
        self.retry_after = retry_after


class Crashed(Exception):
    """The core raised: a bug, answered with 500 and logged with the job and the traceback
    (as text: the exception itself, with the frames that hold the request, is not kept)."""

    def __init__(self, job: JobId, trace: str) -> None:
        super().__init__(f"sync of {job} crashed")
        self.job, self.trace = job, trace


class ClientGone(Exception):
    """The client closed its connection before its answer was computed."""


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


def create_app(config: settings.Settings) -> FastAPI:
    """The ASGI app for these settings (one per process; tests make their own)."""
    token = BearerToken(config)
    # With a token, the OpenAPI document needs it too, and the browser pages, which cannot
    # send it, are off.
    app = FastAPI(
        title="mxjob-controller",
        summary="Metacontroller sync hook for Kubeflow MXJobs (kubeflow.org/v1).",
        version=__version__,
        openapi_url=None if token.enabled else "/openapi.json",
        docs_url=None if token.enabled else "/docs",
        redoc_url=None if token.enabled else "/redoc",
    )
    admission = Admission(config, token)
    _add_sync(app, config, admission)
    _add_customize(app, config, admission)
    _add_openapi(app, token)
    _add_probes(app)
    return app


class Admission:
    """The limits on /sync: who may call, how many bytes may be in flight, and where and when a
    sync runs (all but the smallest one at a time off the event loop, so probes still answer;
    docs/reliability.md#concurrency-and-memory)."""

    def __init__(self, config: settings.Settings, token: BearerToken) -> None:
        self.config, self.token = config, token
        self.one_at_a_time, self.one_large = anyio.CapacityLimiter(1), anyio.CapacityLimiter(1)
        self.budget = ByteBudget(config.budget_bytes)

    async def admit(
        self, request: Request, deadline: float, stack: contextlib.AsyncExitStack
    ) -> None:
        """Check the caller and reserve the body's bytes, or refuse before reading it."""
        if not self.token.allows(request.headers.get("authorization")):
            raise Refused(401, "unauthorized", "missing or wrong bearer token")
        declared = _declared_length(request, self.config.max_body_bytes)
        if declared is not None and declared <= INLINE_BODY:
            return
        # A body of unknown length may be as large as any: it counts as the largest.
        size = self.config.max_body_bytes if declared is None else declared
        if size > LARGE_BODY:
            # Large ones queue (one at a time, until the webhook timeout) rather than being
            # refused: there is a single slot for them, and each is a big job's only sync.
            await _wait_or_expire(deadline, self.one_large.acquire)
            stack.callback(self.one_large.release)
            await _wait_or_expire(deadline, lambda: self.budget.take(size))
        elif not self.budget.try_take(size):
            raise Refused(429, "busy", "too many bytes in flight; retry", retry_after=1)
        stack.callback(self.budget.release, size)

    async def compute(self, request: Request, deadline: float, work: Callable[[], Reply]) -> Reply:
        """Run `work` in the worker thread, one at a time, unless its client is gone or it
        waited past the webhook timeout, and not while the budget is overdrawn."""
        await _wait_or_expire(deadline, self.one_at_a_time.acquire)
        try:
            await _wait_or_expire(deadline, self.budget.until_room)
            # Once every wait is over: a client may leave while waiting for room.
            if await request.is_disconnected():
                raise ClientGone
            return await anyio.to_thread.run_sync(work)
        finally:
            self.one_at_a_time.release()

    async def answer(self, request: Request) -> Reply:
        """Admit the request, read its body, and sync: on the event loop if it is small."""
        config = self.config
        arrived = time.monotonic()
        deadline = arrived + config.webhook_timeout_seconds
        async with contextlib.AsyncExitStack() as stack:
            await self.admit(request, deadline, stack)
            body = await _read_body(request, config, arrived + config.read_seconds)
            now = config.frozen_clock or datetime.now(UTC)
            if len(body) > INLINE_BODY:
                return await self.compute(request, deadline, lambda: _parse_and_answer(body, now))
            parsed = _parse(body)
            if _few_replicas(parsed):
                return _answer(parsed, now, len(body))
            return await self.compute(request, deadline, lambda: _answer(parsed, now, len(body)))


def _add_sync(app: FastAPI, config: settings.Settings, admission: Admission) -> None:
    """POST /sync: admit, answer, log and count, and hand the answer over in pieces."""

    @app.post("/sync", openapi_extra=_SYNC_DOC, responses=_SYNC_RESPONSES, response_model=None)
    async def sync_hook(request: Request) -> Response:
        started = time.perf_counter()
        try:
            done = await admission.answer(request)
        except (Refused, ClientDisconnect, ClientGone) as err:
            return _failed(err, time.perf_counter() - started)
        if not isinstance(done, Answer):
            # Not raised: this frame would hold the error, and its traceback this frame.
            return _failed(done, time.perf_counter() - started)
        CURRENT_JOB.set(done.job)
        seconds = time.perf_counter() - started
        size = len(done.body) if len(done.body) > INLINE_BODY else 0
        admission.budget.force(size)

        def taken(whole: bool) -> None:
            admission.budget.release(size)
            if whole:
                _log_answer(done, seconds, config.slow_sync_seconds)
                metrics.observe(done.outcome, seconds)
            else:
                _gone(seconds, "client went away before it had its answer")

        return _Pieces(done.body, taken)


def _add_customize(app: FastAPI, config: settings.Settings, admission: Admission) -> None:
    """POST /customize: Metacontroller's customize hook, with the Kueue component
    (docs/kueue.md). Checked and read like /sync (token, size and time limits, 4xx for what is
    not a request); the answer is the same for every job."""

    @app.post(
        "/customize",
        openapi_extra=_CUSTOMIZE_DOC,
        responses=_CUSTOMIZE_RESPONSES,
        response_model=None,
    )
    async def customize_hook(request: Request) -> Response:
        started = time.perf_counter()
        arrived = time.monotonic()
        try:
            async with contextlib.AsyncExitStack() as stack:
                await admission.admit(request, arrived + config.webhook_timeout_seconds, stack)
                body = await _read_body(request, config, arrived + config.read_seconds)
                if len(body) > INLINE_BODY:
                    deadline = arrived + config.webhook_timeout_seconds
                    done = await admission.compute(request, deadline, lambda: _customized(body))
                else:
                    done = _customized(body)
        except (Refused, ClientDisconnect, ClientGone) as err:
            return _failed(err, time.perf_counter() - started)
        if not isinstance(done, Answer):
            return _failed(done, time.perf_counter() - started)
        log.info("customize answered", extra={"status": 200, "body_bytes": done.body_bytes})
        return Response(done.body, media_type="application/json")


def _customized(body: bytearray) -> Reply:
    try:
        parsed = _parse(body)
    except Refused as err:
        return Refused(err.status, err.outcome, err.detail)
    answer = kueue.customize(parsed)
    job = envelope.job_of(parsed)
    if answer is None:
        return Refused(422, "bad_request", "not a customize request: no `parent` object", job)
    return Answer(orjson.dumps(answer), "ok", 0, 0, job, len(body))


def _add_openapi(app: FastAPI, token: BearerToken) -> None:
    """The OpenAPI document with the request model's definitions, behind the token if any."""
    documented = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            documented().setdefault("components", {}).setdefault("schemas", {}).update(_DEFS)
        return documented()

    app.openapi = openapi  # type: ignore[method-assign]
    if not token.enabled:
        return

    @app.get("/openapi.json", include_in_schema=False)
    async def guarded_openapi(request: Request) -> Response:
        if not token.allows(request.headers.get("authorization")):
            detail, challenge = (
                {"detail": "missing or wrong bearer token"},
                {"WWW-Authenticate": "Bearer"},
            )
            return JSONResponse(detail, status_code=401, headers=challenge)
        return JSONResponse(app.openapi())


def _add_probes(app: FastAPI) -> None:
    """GET /healthz and /metrics."""

    @app.get("/healthz", response_class=PlainTextResponse, responses=_TEXT)
    async def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    @app.get("/metrics", response_class=PlainTextResponse, responses=_TEXT)
    async def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)


class _Pieces(Response):
    """An answer written in pieces of PIECE bytes; `done` runs once the last piece was
    handed to the connection (`done(True)`), or once the client is seen gone before that,
    during the computation or between two pieces (`done(False)`)."""

    def __init__(self, body: bytes, done: Callable[[bool], None]) -> None:
        super().__init__(body, media_type="application/json")
        self._done = done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        whole = False
        try:
            if await _client_gone(receive):
                return
            start = {"type": "http.response.start", "status": self.status_code}
            await send(start | {"headers": self.raw_headers})
            view = memoryview(self.body)
            for at in range(0, max(len(view), 1), PIECE):
                if await _client_gone(receive):
                    return
                more = at + PIECE < len(view)
                await send(
                    {"type": "http.response.body", "body": view[at : at + PIECE], "more_body": more}
                )
            whole = True
        finally:
            self._done(whole)


async def _client_gone(receive: Receive) -> bool:
    """Whether the client has disconnected, without waiting: a receive that would block is
    cancelled at once (the body is all read, so the only message left is the disconnect)."""
    message: dict[str, Any] = {}
    with anyio.CancelScope() as scope:
        scope.cancel()
        message = dict(await receive())
    return message.get("type") == "http.disconnect"


async def _wait_or_expire(deadline: float, wait: Callable[[], Awaitable[object]]) -> None:
    """Wait, but refuse with 503 once `deadline` (the webhook timeout since the request's
    arrival) has passed: Metacontroller has stopped waiting for that answer."""
    with anyio.move_on_after(deadline - time.monotonic()) as scope:
        await wait()
    if scope.cancelled_caught:
        raise Refused(503, "expired", "queued past the webhook timeout; retry", retry_after=1)


def _declared_length(request: Request, limit: int) -> int | None:
    """Content-Length, refused with 413 before any of the body is read when over `limit`."""
    declared = ascii_int(request.headers.get("content-length", ""))
    if declared is not None and declared > limit:
        raise Refused(413, "too_large", f"request body of {declared} bytes exceeds {limit}")
    return declared


async def _read_body(request: Request, config: settings.Settings, deadline: float) -> bytearray:
    """The body, refused with 413 as soon as a chunked one passes the limit, and with 408
    when a chunk takes longer than the chunk timeout or the whole body passes `deadline`."""
    body, chunks = bytearray(), request.stream()
    while True:
        wait = min(config.read_chunk_seconds, deadline - time.monotonic())
        chunk = None
        with anyio.move_on_after(wait) as scope:
            chunk = await anext(chunks, None)
        if scope.cancelled_caught:
            raise Refused(408, "timeout", f"request body still incomplete after {len(body)} bytes")
        if chunk is None:
            return body
        body += chunk
        if len(body) > config.max_body_bytes:
            raise Refused(413, "too_large", f"request body exceeds {config.max_body_bytes} bytes")


def _parse_and_answer(body: bytearray, now: datetime) -> Reply:
    try:
        parsed = _parse(body)
    except Refused as err:
        return Refused(err.status, err.outcome, err.detail)
    return _answer(parsed, now, len(body))


def _parse(body: bytearray) -> Any:
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


def _few_replicas(body: Any) -> bool:
    """Whether the job asks for at most INLINE_REPLICAS replicas, so that answering it is a
    small, bounded piece of work. Only chooses where the sync runs: anything unexpected
    counts as many."""
    replicas = envelope.declared_replicas(body)
    return replicas is not None and replicas <= INLINE_REPLICAS


def _answer(parsed: Any, now: datetime, body_bytes: int) -> Reply:
    """Sync and serialize a parsed request. A TypeError from the core is a bug like any
    other, however much it looks like the serializer's (orjson's error is one)."""
    try:
        result = sync_result(parsed, now)
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


def _log_answer(answer: Answer, seconds: float, budget: float) -> None:
    fields = {
        "outcome": answer.outcome,
        "status": 200,
        "children": answer.children,
        "replicas": answer.replicas,
        "body_bytes": answer.body_bytes,
        "duration_ms": round(seconds * 1000, 1),
    }
    if seconds > budget:
        log.warning("slow sync: %.2f s, budget %.2f s", seconds, budget, extra=fields)
    else:
        log.info("sync answered", extra=fields)


def _failed(err: Exception, seconds: float) -> Response:
    """The answer to a sync that was refused, crashed, or whose client went away."""
    if isinstance(err, Refused):
        CURRENT_JOB.set(err.job)
        return _refused(err, seconds)
    if isinstance(err, Crashed):
        CURRENT_JOB.set(err.job)
        return _crashed(err, seconds)
    return _gone(seconds, "client went away before its sync ran")


def _refused(err: Refused, seconds: float) -> JSONResponse:
    metrics.observe(err.outcome, seconds)
    fields = {"outcome": err.outcome, "status": err.status, "duration_ms": round(seconds * 1e3, 1)}
    log.warning("sync refused: %s", err.detail, extra=fields)
    headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else {}
    if err.retry_after is not None:
        headers["Retry-After"] = str(err.retry_after)
    if err.status != 422:
        # The body may be unread: keeping the connection would mean reading it all first.
        headers["Connection"] = "close"
    return JSONResponse({"detail": err.detail}, status_code=err.status, headers=headers)


def _crashed(err: Crashed, seconds: float) -> JSONResponse:
    metrics.observe("error", seconds)
    fields = {"outcome": "error", "status": 500, "exception": err.trace}
    log.error("sync failed", extra=fields)
    return JSONResponse({"detail": "internal error in the sync hook (logged)"}, status_code=500)


def _gone(seconds: float, why: str) -> Response:
    """The client went away (Metacontroller's webhook timeout, a restart) before its sync
    ran, or before it had the whole answer: nobody to answer and nothing wrong here, so a
    count and a warning without a traceback."""
    metrics.observe("client_gone", seconds)
    fields = {"outcome": "client_gone", "duration_ms": round(seconds * 1e3, 1)}
    log.warning(why, extra=fields)
    return Response(status_code=400, headers={"Connection": "close"})
