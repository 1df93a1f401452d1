"""A timer per finished MXJob with a TTL, and its deletion once due: guarded by the job's UID,
never early, counted only when this process's own delete removed it."""

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx2
from lightkube import ApiError, AsyncClient
from lightkube.config.client_adapter import ConnectionParams
from lightkube.generic_resource import create_namespaced_resource
from prometheus_client import CollectorRegistry, Counter, Gauge

from app.controllers import backoff
from app.controllers.ttl.expiry import due_at, seconds_left

MXJob = create_namespaced_resource("kubeflow.org", "v1", "MXJob", "mxjobs")
log = logging.getLogger("mxjob.ttl")

REGISTRY = CollectorRegistry()
DELETIONS = Counter(
    "mxjob_ttl_deletions",
    "Deletes of MXJobs whose ttlSecondsAfterFinished had passed, by outcome: deleted (this "
    "process deleted it), gone (already deleted), replaced (a new job has the name), error.",
    ["outcome"],
    registry=REGISTRY,
)
PENDING = Gauge(
    "mxjob_ttl_pending_jobs", "Finished MXJobs whose TTL is counting down.", registry=REGISTRY
)


@dataclass
class Pending:
    """A job whose deletion is due at `due`, and the timer that will try it."""

    namespace: str
    name: str
    due: datetime
    timer: asyncio.TimerHandle
    failures: int = 0


def identity(job: dict[str, Any]) -> tuple[str, str, str] | None:
    """(uid, namespace, name) of an observed job, None if its metadata lacks one."""
    meta = job.get("metadata")
    if not isinstance(meta, dict):
        return None
    uid, namespace, name = meta.get("uid"), meta.get("namespace"), meta.get("name")
    if isinstance(uid, str) and isinstance(namespace, str) and isinstance(name, str):
        return uid, namespace, name
    return None


class Deleter:
    """The timers of every job due for deletion, by UID, fed with what the watch sees."""

    def __init__(
        self, client: AsyncClient, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._client = client
        self._clock = clock
        self._pending: dict[str, Pending] = {}
        # UIDs whose delete is in flight: a status write seen meanwhile arms no second one.
        self._deleting: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def observe(self, job: dict[str, Any]) -> None:
        """Arm, move or disarm the job's timer from what the job says now."""
        found = identity(job)
        if found is None:
            return
        uid, namespace, name = found
        self.forget(uid)
        due = due_at(job)
        being_deleted = job["metadata"].get("deletionTimestamp") is not None
        if due is not None and not being_deleted and uid not in self._deleting:
            self._arm(uid, Pending(namespace, name, due, self._timer(uid, due)))

    def forget(self, uid: str) -> None:
        """Disarm the job's timer: it was deleted, or no longer has a TTL running."""
        pending = self._pending.pop(uid, None)
        if pending is not None:
            pending.timer.cancel()
        PENDING.set(len(self._pending))

    def keep_only(self, uids: set[str]) -> None:
        """After a fresh list: forget the jobs it no longer holds (deleted while not watched)."""
        for uid in set(self._pending) - uids:
            self.forget(uid)

    async def drain(self) -> None:
        """Disarm every timer and wait for deletes in flight (on shutdown)."""
        self.keep_only(set())
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _arm(self, uid: str, pending: Pending) -> None:
        self._pending[uid] = pending
        PENDING.set(len(self._pending))

    def _timer(self, uid: str, due: datetime, delay: float | None = None) -> asyncio.TimerHandle:
        wait = seconds_left(due, self._clock()) if delay is None else delay
        return asyncio.get_running_loop().call_later(wait, self._fire, uid)

    def _fire(self, uid: str) -> None:
        pending = self._pending.get(uid)
        if pending is None:
            return
        if seconds_left(pending.due, self._clock()) > 0:
            # The loop's monotonic clock ran ahead of the wall clock the times are on.
            pending.timer = self._timer(uid, pending.due)
            return
        del self._pending[uid]
        PENDING.set(len(self._pending))
        self._deleting.add(uid)
        task = asyncio.create_task(self._delete(uid, pending))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _delete(self, uid: str, pending: Pending) -> None:
        try:
            outcome = await self._delete_once(uid, pending)
        finally:
            self._deleting.discard(uid)
        DELETIONS.labels(outcome).inc()
        where = {"namespace": pending.namespace, "job": pending.name, "uid": uid}
        late = (self._clock() - pending.due).total_seconds()
        if outcome == "error":
            # A failed delete (the API server unreachable, refused) is tried again, ever
            # further apart up to backoff's cap.
            pending.failures += 1
            retry = backoff.delay(pending.failures)
            pending.timer = self._timer(uid, pending.due, retry)
            self._arm(uid, pending)
            log.warning("delete failed, retrying", extra=where | {"retry_seconds": retry})
        else:
            log.info(f"TTL expired: {outcome}", extra=where | {"late_seconds": round(late, 3)})

    async def _delete_once(self, uid: str, pending: Pending) -> str:
        try:
            await delete_if_uid(self._client, pending.namespace, pending.name, uid)
        except ApiError as error:
            if error.status.code in (404, 409):
                return "gone" if error.status.code == 404 else "replaced"
            log.warning(f"delete refused: {error}", extra={"job": pending.name})
            return "error"
        except httpx2.HTTPError as error:
            log.warning(f"delete failed: {error!r}", extra={"job": pending.name})
            return "error"
        return "deleted"


async def delete_if_uid(client: AsyncClient, namespace: str, name: str, uid: str) -> None:
    """DELETE the job only if it is still the one with `uid`: ApiError 409 if the name now
    holds another, 404 if it is gone. lightkube's `delete()` sends no body, so no
    preconditions: this sends the DELETE with DeleteOptions on a connection made as lightkube
    makes its own, from the client's configuration (its public `config` and ConnectionParams)."""
    params = ConnectionParams().httpx_params(client.config)
    url = f"apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}"
    async with httpx2.AsyncClient(**params) as http:
        response = await http.request("DELETE", url, json=delete_options(uid))
    if response.is_error:
        if response.headers.get("Content-Type") == "application/json":
            raise ApiError(request=response.request, response=response)
        response.raise_for_status()


def delete_options(uid: str) -> dict[str, Any]:
    """Delete only the object with this UID, its children after it (as kubectl does)."""
    return {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": uid},
        "propagationPolicy": "Background",
    }
