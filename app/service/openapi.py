"""The OpenAPI document: the sync and customize requests and answers, behind the token if any."""

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from app.core.model.envelope import SyncRequest
from app.service.auth import BearerToken

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


SYNC_DOC: dict[str, Any] = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": _REQUEST}}}
}


SYNC_RESPONSES: dict[int | str, dict[str, Any]] = {
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
CUSTOMIZE_DOC: dict[str, Any] = {
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


CUSTOMIZE_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: doc for code, doc in SYNC_RESPONSES.items() if code != 200
} | {200: {"description": "The related resources every job is synced with"}}


TEXT: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/plain": {"schema": {"type": "string"}}}}
}


def add_openapi(app: FastAPI, token: BearerToken) -> None:
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
