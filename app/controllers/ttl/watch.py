"""Every MXJob of the cluster, listed and then watched from the list's resourceVersion, fed
to the deleter; listed again on 410 Gone (the version is too old) or after any other failure,
after a wait that grows while the failures go on (app/controllers/backoff.py)."""

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx2
from lightkube import ALL_NS, ApiError, AsyncClient

from app.controllers.backoff import Backoff
from app.controllers.ttl.deleter import Deleter, MXJob, identity

log = logging.getLogger("mxjob.ttl")


async def watch_jobs(client: AsyncClient, deleter: Deleter, listed: Callable[[], None]) -> None:
    """Keep the deleter's timers in step with the cluster's MXJobs, until cancelled; `listed`
    is called after each complete list."""
    backoff = Backoff()
    while True:
        try:
            version = await relist(client, deleter)
            listed()
            async for event, job in client.watch(MXJob, namespace=ALL_NS, resource_version=version):
                backoff.succeeded()  # by an event, not by the list: a failing watch backs off
                observe(deleter, event, dict(job))
        except httpx2.HTTPError as error:
            # A 410 too waits: the relist it asks for is the costly part, and one expiry after
            # another (a watch cache behind) must not turn into a list a second.
            wait = backoff.failed()
            if status_code(error) == 410:
                log.info("watch expired (410 Gone): listing again", extra={"retry_seconds": wait})
            else:
                log.warning(f"list or watch failed: {error!r}", extra={"retry_seconds": wait})
            await asyncio.sleep(wait)


async def relist(client: AsyncClient, deleter: Deleter) -> str:
    """List every MXJob, arm or disarm each one's timer, forget the jobs gone since; return
    the list's resourceVersion to watch from."""
    jobs = client.list(MXJob, namespace=ALL_NS)
    uids = set()
    async for job in jobs:
        observe(deleter, "ADDED", dict(job))
        found = identity(dict(job))
        if found is not None:
            uids.add(found[0])
    deleter.keep_only(uids)
    return jobs.resourceVersion


def observe(deleter: Deleter, event: str, job: dict[str, Any]) -> None:
    found = identity(job)
    if event == "DELETED" and found is not None:
        deleter.forget(found[0])
    elif event in ("ADDED", "MODIFIED"):
        deleter.observe(job)


def status_code(error: httpx2.HTTPError) -> int | None:
    """The HTTP status of a failed request or watch event, if it had one."""
    if isinstance(error, ApiError):
        return error.status.code
    if isinstance(error, httpx2.HTTPStatusError):
        return error.response.status_code
    return None
