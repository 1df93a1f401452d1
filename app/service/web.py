"""The thin HTTP layer: the ASGI app and its routes; each answer logged and counted."""

import logging
import time
from collections.abc import Awaitable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import ClientDisconnect

from app import __version__
from app.service import metrics, settings
from app.service.auth import BearerToken
from app.service.errors import ClientGone, Crashed, Refused
from app.service.intake import INLINE_BODY, Intake
from app.service.jsonlog import CURRENT_JOB, LOGGER
from app.service.openapi import (
    CUSTOMIZE_DOC,
    CUSTOMIZE_RESPONSES,
    SYNC_DOC,
    SYNC_RESPONSES,
    TEXT,
    add_openapi,
)
from app.service.pieces import Pieces
from app.service.replies import Answer, Reply

log = logging.getLogger(f"{LOGGER}.sync")


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
    intake = Intake(config, token)
    _add_sync(app, config, intake)
    _add_customize(app, intake)
    add_openapi(app, token)
    _add_probes(app)
    return app


def _add_sync(app: FastAPI, config: settings.Settings, intake: Intake) -> None:
    """POST /sync: admit, answer, log and count, and hand the answer over in pieces."""

    @app.post("/sync", openapi_extra=SYNC_DOC, responses=SYNC_RESPONSES, response_model=None)
    async def sync_hook(request: Request) -> Response:
        started = time.perf_counter()
        done = await _answered(intake.answer(request), started)
        if not isinstance(done, Answer):
            return done
        CURRENT_JOB.set(done.job)
        seconds = time.perf_counter() - started
        size = len(done.body) if len(done.body) > INLINE_BODY else 0
        intake.budget.force(size)

        def taken(whole: bool) -> None:
            intake.budget.release(size)
            if whole:
                _log_answer(done, seconds, config.slow_sync_seconds)
                metrics.observe(done.outcome, seconds)
            else:
                _gone(seconds, "client went away before it had its answer")

        return Pieces(done.body, taken)


def _add_customize(app: FastAPI, intake: Intake) -> None:
    """POST /customize: Metacontroller's customize hook, with the Kueue component
    (docs/kueue.md). Checked and read like /sync (token, size and time limits, 4xx for what is
    not a request); the answer is the same for every job."""

    @app.post(
        "/customize",
        openapi_extra=CUSTOMIZE_DOC,
        responses=CUSTOMIZE_RESPONSES,
        response_model=None,
    )
    async def customize_hook(request: Request) -> Response:
        done = await _answered(intake.customize(request), time.perf_counter())
        if not isinstance(done, Answer):
            return done
        log.info("customize answered", extra={"status": 200, "body_bytes": done.body_bytes})
        return Response(done.body, media_type="application/json")


async def _answered(reply: Awaitable[Reply], started: float) -> Answer | Response:
    """The answer, or what a request refused, crashed or left by its client gets instead."""
    try:
        done = await reply
    except (Refused, ClientDisconnect, ClientGone) as err:
        return _failed(err, time.perf_counter() - started)
    if not isinstance(done, Answer):
        # Not raised: this frame would hold the error, and its traceback this frame.
        return _failed(done, time.perf_counter() - started)
    return done


def _add_probes(app: FastAPI) -> None:
    """GET /healthz and /metrics."""

    @app.get("/healthz", response_class=PlainTextResponse, responses=TEXT)
    async def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    @app.get("/metrics", response_class=PlainTextResponse, responses=TEXT)
    async def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)


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
