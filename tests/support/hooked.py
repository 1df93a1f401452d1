"""The core's sync as the service runs it: with every integration (app.integrations.INTEGRATIONS)
contributing where the request's controller declares what it needs."""

from datetime import datetime
from typing import Any

from app.core import reconcile
from app.integrations import INTEGRATIONS


def sync(body: Any, now: datetime) -> dict[str, Any]:
    """The answer to one sync request, as the hook gives it."""
    return reconcile.sync(body, now, INTEGRATIONS)


def sync_result(body: Any, now: datetime) -> reconcile.SyncResult:
    """The answer to one sync request and what the web layer logs of it, as the hook gives it."""
    return reconcile.sync_result(body, now, INTEGRATIONS)
