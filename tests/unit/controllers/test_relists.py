"""The components' relist loops wait as app/controllers/backoff.py says: longer after each
failure in a row, from the shortest again once a watch delivered an event (the TTL watch, a
410 Gone included; the Kueue status writer's watches)."""

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest

from app.controllers.kueuestatus import watch as writer
from app.controllers.ttl import watch as ttl

DOWN = httpx2.ConnectError("the API server is down")
GONE = httpx2.HTTPStatusError(
    "410", request=httpx2.Request("GET", "http://x"), response=httpx2.Response(410)
)
# (list fails, then the watch delivers one event and breaks): the script of both fakes.
SCRIPT = [True, True, True, False, True]
# The ceiling of the wait after each step of SCRIPT: 1, 2, 4, then an event resets it to 1, 2.
CEILINGS = [1, 2, 4, 1, 2]


class Stop(BaseException):
    """Ends a loop that would run forever (neither loop catches a BaseException)."""


def within_ceilings(waits: list[float]) -> bool:
    return all(c / 2 <= w <= c for w, c in zip(waits, CEILINGS, strict=True))


class TtlClient:
    def __init__(self) -> None:
        self.steps = iter(SCRIPT)

    def watch(self, *args: Any, **kwargs: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        async def events() -> AsyncIterator[tuple[str, dict[str, Any]]]:
            yield "BOOKMARK", {}
            raise GONE

        return events()


def test_the_ttl_watch_backs_off_and_resets(monkeypatch: pytest.MonkeyPatch) -> None:
    client, waits = TtlClient(), []

    async def relist(*args: Any) -> str:
        if next(client.steps):
            raise DOWN
        return "1"

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == len(SCRIPT):
            raise Stop

    monkeypatch.setattr(ttl, "relist", relist)
    monkeypatch.setattr(asyncio, "sleep", sleep)
    with pytest.raises(Stop):
        asyncio.run(ttl.watch_jobs(client, None, lambda: None))  # type: ignore[arg-type]
    assert within_ceilings(waits), waits


class Listing(list[Any]):
    resourceVersion = "1"


class WriterClient:
    def __init__(self) -> None:
        self.steps = iter(SCRIPT)

    def list(self, *args: Any, **kwargs: Any) -> Listing:
        if next(self.steps):
            raise DOWN
        return Listing()

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        yield "MODIFIED", Listing()
        raise DOWN


def test_the_writers_watch_backs_off_and_resets(monkeypatch: pytest.MonkeyPatch) -> None:
    waits = []

    class Event:
        def wait(self, seconds: float) -> None:
            waits.append(seconds)
            if len(waits) == len(SCRIPT):
                raise Stop

    monkeypatch.setattr(threading, "Event", Event)
    monkeypatch.setattr(writer, "_as_dict", lambda obj: {})
    with pytest.raises(Stop):
        writer.follow(WriterClient(), None, "Pod", writer.Cache(), None)  # type: ignore[arg-type]
    assert within_ceilings(waits), waits
