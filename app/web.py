"""The thin HTTP layer: parse the body, read the clock, call the core, serialize."""

import time
from datetime import UTC, datetime
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app import metrics, settings
from app.envelope import BadRequest, SyncRequest
from app.reconcile import sync
from app.status import REASON_INVALID

SETTINGS = settings.from_env()

app = FastAPI(
    title="mxjob-controller",
    summary="Metacontroller sync hook for Kubeflow MXJobs (kubeflow.org/v1).",
    version="0.1.0",
)

_SYNC_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": SyncRequest.model_json_schema()}},
    }
}


@app.post("/sync", openapi_extra=_SYNC_BODY, response_model=None)
async def sync_hook(request: Request) -> Response:
    started = time.perf_counter()
    body = await request.body()
    try:
        answer = sync(_json(body), SETTINGS.frozen_clock or datetime.now(UTC))
    except BadRequest as err:
        metrics.observe("bad_request", time.perf_counter() - started)
        return JSONResponse({"detail": str(err)}, status_code=422)
    metrics.observe(_outcome(answer), time.perf_counter() - started)
    return Response(orjson.dumps(answer), media_type="application/json")


def _json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise BadRequest(f"request body is not JSON: {err}") from None


def _outcome(answer: dict[str, Any]) -> str:
    reasons = {c.get("reason") for c in answer["status"]["conditions"]}
    return "invalid_spec" if REASON_INVALID in reasons else "ok"


@app.get("/healthz")
async def healthz() -> PlainTextResponse:
    return PlainTextResponse("ok")


@app.get("/metrics")
async def prometheus_metrics() -> Response:
    return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)
