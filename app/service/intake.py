"""The intake of the hook's requests: who may call, how many bytes may be in flight, the read
deadlines, and where and when a sync (or a customize request) runs."""

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import anyio
from fastapi import Request

from app.core.model import envelope
from app.core.model.values import ascii_int
from app.service import settings
from app.service.auth import BearerToken
from app.service.budget import ByteBudget
from app.service.errors import ClientGone, Refused
from app.service.replies import Reply, customized, parse, parse_and_answer, reply

# A request larger than this (or of unknown length) is read and answered one at a time.
LARGE_BODY = 8 * 1024 * 1024


# A request at most this large, for a job of at most INLINE_REPLICAS replicas, is answered on
# the event loop: its work costs less than the hop to a worker thread (docs/performance.md,
# "The web layer, per request").
INLINE_BODY = 64 * 1024


INLINE_REPLICAS = 16


class Intake:
    """The limits on /sync and /customize: who may call, how many bytes may be in flight, and
    where and when a sync runs (all but the smallest one at a time off the event loop, so probes
    still answer; docs/reliability.md#concurrency-and-memory)."""

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

    @contextlib.asynccontextmanager
    async def taken_in(self, request: Request) -> AsyncIterator[tuple[bytearray, float]]:
        """Admit the request and read its body: the body, and the deadline its answer must
        meet; what it holds of the budget is given back when the block ends."""
        config = self.config
        arrived = time.monotonic()
        deadline = arrived + config.webhook_timeout_seconds
        async with contextlib.AsyncExitStack() as stack:
            await self.admit(request, deadline, stack)
            yield await read_body(request, config, arrived + config.read_seconds), deadline

    async def answer(self, request: Request) -> Reply:
        """Take the request in and sync: on the event loop if it is small."""
        async with self.taken_in(request) as (body, deadline):
            now = self.config.frozen_clock or datetime.now(UTC)
            if len(body) > INLINE_BODY:
                return await self.compute(request, deadline, lambda: parse_and_answer(body, now))
            parsed = parse(body)
            if _few_replicas(parsed):
                return reply(parsed, now, len(body))
            return await self.compute(request, deadline, lambda: reply(parsed, now, len(body)))

    async def customize(self, request: Request) -> Reply:
        """Take a customize request in and answer it: off the event loop if it is large."""
        async with self.taken_in(request) as (body, deadline):
            if len(body) > INLINE_BODY:
                return await self.compute(request, deadline, lambda: customized(body))
            return customized(body)


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


async def read_body(request: Request, config: settings.Settings, deadline: float) -> bytearray:
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


def _few_replicas(body: Any) -> bool:
    """Whether the job asks for at most INLINE_REPLICAS replicas, so that answering it is a
    small, bounded piece of work. Only chooses where the sync runs: anything unexpected
    counts as many."""
    replicas = envelope.declared_replicas(body)
    return replicas is not None and replicas <= INLINE_REPLICAS
