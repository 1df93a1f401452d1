"""The benchmark's HTTP client: a minimal keep-alive HTTP/1.1 client on asyncio streams (or
httpx, to compare), and a load loop that records every round trip."""

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from scripts.bench.servers import HOST


class Connection:
    """A minimal keep-alive HTTP/1.1 client: Content-Length in, Content-Length out. Lean on
    purpose: the client shares the two cores with the server, and httpx costs more than
    the echo server itself for big bodies (`--client httpx` shows it)."""

    def __init__(
        self, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.port, self.reader, self.writer = port, reader, writer

    @classmethod
    async def open(cls, port: int) -> "Connection":
        reader, writer = await asyncio.open_connection(HOST, port, limit=1 << 20)
        return cls(port, reader, writer)

    async def post(self, body: bytes) -> tuple[int, bytes]:
        """Status and body; status 0 when the server dropped the connection (the hook's load
        limits may refuse a request before reading it), after which it reconnects."""
        try:
            status, data, close = await self._exchange(body)
        except (ConnectionError, asyncio.IncompleteReadError):
            status, data, close = 0, b"", True
        if close:
            await self.close()
            self.reader, self.writer = await asyncio.open_connection(HOST, self.port, limit=1 << 20)
        return status, data

    async def _exchange(self, body: bytes) -> tuple[int, bytes, bool]:
        head = b"POST /sync HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n"
        self.writer.write(head % HOST.encode() + b"content-length: %d\r\n\r\n" % len(body))
        self.writer.write(body)
        await self.writer.drain()
        lines = (await self.reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        headers = dict(line.lower().split(b": ", 1) for line in lines[1:] if line)
        data = await self.reader.readexactly(int(headers[b"content-length"]))
        return int(lines[0].split()[1]), data, headers.get(b"connection") == b"close"

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


Post = Callable[[bytes], Awaitable[tuple[int, bytes]]]


async def _posters(port: int, n: int, client: str) -> tuple[list[Post], Callable[[], Any]]:
    if client == "httpx":
        import httpx

        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        session = httpx.AsyncClient(base_url=f"http://{HOST}:{port}", limits=limits, timeout=120)

        async def post(body: bytes) -> tuple[int, bytes]:
            sent = await session.post("/sync", content=body, headers=JSON)
            return sent.status_code, sent.content

        return [post] * n, session.aclose
    conns = [await Connection.open(port) for _ in range(n)]

    async def close_all() -> None:
        for conn in conns:
            await conn.close()

    return [c.post for c in conns], close_all


JSON = {"content-type": "application/json"}


@dataclass
class Run:
    latencies: list[float] = field(default_factory=list)
    elapsed: float = 0.0
    bad: int = 0

    def add(self, other: "Run") -> None:
        self.latencies += other.latencies
        self.elapsed += other.elapsed
        self.bad += other.bad

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0


async def load(port: int, body: bytes, count: int, concurrency: int, client: str) -> Run:
    """`count` syncs over `concurrency` connections, each sending as soon as it has its answer."""
    posters, close = await _posters(port, concurrency, client)
    run, left = Run(), count

    async def worker(post: Post) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            started = time.perf_counter()
            status, _ = await post(body)
            run.latencies.append(time.perf_counter() - started)
            run.bad += status != 200

    started = time.perf_counter()
    await asyncio.gather(*(worker(p) for p in posters))
    run.elapsed = time.perf_counter() - started
    await close()
    return run


async def first_answer(port: int, body: bytes) -> tuple[int, bytes]:
    conn = await Connection.open(port)
    try:
        return await conn.post(body)
    finally:
        await conn.close()
