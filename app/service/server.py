"""The HTTP server: uvicorn on httptools and uvloop, with the connection deadlines it lacks (a
whole request head within a time and a size, an answer taken within a time) and a bound on
open connections."""

import asyncio
import gc
import logging
import math
from collections.abc import Sequence
from typing import Any

import uvicorn
from prometheus_client import Counter
from uvicorn.config import STARTUP_FAILURE
from uvicorn.protocols.http import h11_impl
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.service import jsonlog as logs
from app.service import listening, metrics, settings
from app.service.quiet import QuietServer

try:
    # uvicorn imports uvloop by name when the server starts; importing it here names a
    # missing package at once, for `render` as for `serve`.
    import uvloop  # noqa: F401
    from uvicorn.protocols.http import httptools_impl
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError as missing:
    raise ImportError(
        f"{missing.name} is missing: the hook serves HTTP with httptools on uvloop; "
        "pip install -r requirements.txt"
    ) from missing

log = logging.getLogger(f"{logs.LOGGER}.server")

CLOSED = Counter(
    "mxjob_connections_closed",
    "Connections the hook closed itself, by reason: head_timeout (no whole request head in "
    "time: idle, slow or silent), send_timeout (an answer not taken in time).",
    ["reason"],
    registry=metrics.REGISTRY,
)

# One request and its answer, in either of uvicorn's protocols.
Cycle = h11_impl.RequestResponseCycle | httptools_impl.RequestResponseCycle


class Deadlines(asyncio.Protocol):
    """Two deadlines per connection, over either uvicorn protocol: a whole request head within
    `head_seconds`, each answer taken within `send_seconds`, else the connection is closed
    (why uvicorn's own timers do not: docs/reliability.md#deadlines-and-budgets)."""

    head_seconds = 5.0
    send_seconds = 10.0
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._send_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._send_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def _head_complete(self, cycle: Cycle) -> None:
        """A whole request head arrived: what follows is the app's to time."""
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._time_answer(cycle)

    def _answered(self, current: Cycle | None) -> None:
        """An answer is complete; `current` is the connection's latest request, which is
        already running if it was pipelined behind that answer."""
        if self._send_timer is not None and self.transport.get_write_buffer_size() == 0:
            self._send_timer.cancel()
            self._send_timer = None
        if not self.transport.is_closing() and (current is None or current.response_complete):
            self._await_head()

    def _await_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.head_seconds, self._head_late)

    def _head_late(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        CLOSED.labels("head_timeout").inc()
        self.transport.close()

    def _time_answer(self, cycle: Cycle) -> None:
        """Arm the send deadline when the app starts this cycle's answer."""
        send = cycle.send

        async def timed_send(message: Any) -> None:
            if self.transport.is_closing() and not cycle.response_complete:
                # The client left or the connection was cut: uvicorn learns it a loop turn
                # later, and would write to the dead socket (and log the unfinished answer
                # as an error) meanwhile.
                cycle.disconnected = True
                return
            if message["type"] == "http.response.start":
                if self._send_timer is not None:
                    self._send_timer.cancel()
                self._send_timer = self.loop.call_later(self.send_seconds, self._send_late, cycle)
            await send(message)

        cycle.send = timed_send  # type: ignore[method-assign]

    def _send_late(self, cycle: Cycle) -> None:
        self._send_timer = None
        if cycle.response_complete and self.transport.get_write_buffer_size() == 0:
            return
        CLOSED.labels("send_timeout").inc()
        log.warning(
            "answer not taken within %.1f s; connection cut",
            self.send_seconds,
            extra={
                "reason": "send_timeout",
                "unsent_bytes": self.transport.get_write_buffer_size(),
            },
        )
        # abort, not close: close would wait for the client to read the buffer.
        self.transport.abort()


class HttpToolsDeadlines(Deadlines, HttpToolsProtocol):
    """The deadlines on uvicorn's httptools protocol, as shipped, with h11's bound on a request
    head, which llhttp lacks: the parser is fed at most what is left of `head_bytes`
    (docs/reliability.md#the-http-stack-uvicorn-on-httptools-with-a-protocol-of-our-own)."""

    head_bytes = 16 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Bytes of the current head fed so far; None while a body is read.
        self._head_read: int | None = 0

    def data_received(self, data: bytes) -> None:
        while self._head_read is not None and len(data) > self.head_bytes - self._head_read:
            room = self.head_bytes - self._head_read
            if room <= 0:
                self.send_400_response("Request head too large.")
                return
            self._head_read += room
            super().data_received(data[:room])
            if self.transport.is_closing():
                return
            data = data[room:]
        if self._head_read is not None:
            self._head_read += len(data)
        super().data_received(data)

    def on_headers_complete(self) -> None:
        cycle = self.cycle
        super().on_headers_complete()
        self._head_read = None
        if self.cycle is not cycle:
            self._head_complete(self.cycle)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_read = 0

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._answered(self.cycle)


class H11Deadlines(Deadlines, H11Protocol):
    """The deadlines on uvicorn's h11 protocol, pure Python: the stack of earlier versions,
    served when MXJOB_HTTP is h11. h11 bounds a request head itself (16 KiB)."""

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle and self.cycle is not None:
            self._head_complete(self.cycle)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._answered(self.cycle)


# What of uvicorn's internals the two classes above rely on, beyond its public API: the methods
# they override or call (name: its parameters after self) and the attributes they read.
# tests/unit/service/test_uvicorn_internals.py fails on an upgrade that changes any of them.
UVICORN_METHODS: dict[type, dict[str, tuple[str, ...]]] = {
    HttpToolsProtocol: {
        "connection_made": ("transport",), "connection_lost": ("exc",),
        "data_received": ("data",), "on_headers_complete": (), "on_message_complete": (),
        "on_response_complete": (), "send_400_response": ("msg",),
    },
    H11Protocol: {
        "connection_made": ("transport",), "connection_lost": ("exc",), "handle_events": (),
        "on_response_complete": (),
    },
}  # fmt: skip
# Instance attributes: the protocol's current request (`cycle`) and transport, and whether a
# request's answer is complete.
UVICORN_ATTRIBUTES: dict[type, tuple[str, ...]] = {
    HttpToolsProtocol: ("cycle", "transport"),
    H11Protocol: ("cycle", "transport"),
    httptools_impl.RequestResponseCycle: ("response_complete",),
    h11_impl.RequestResponseCycle: ("response_complete",),
}


# Per MXJOB_HTTP: the protocol and the event loop it runs on.
STACKS: dict[str, tuple[type[Deadlines], str]] = {
    "httptools": (HttpToolsDeadlines, "uvloop"),
    "h11": (H11Deadlines, "asyncio"),
}


def protocol(config: settings.Settings) -> type[Deadlines]:
    """The protocol class of this configuration's stack, with its deadlines."""
    return type(
        "HookProtocol",
        (STACKS[config.http][0],),
        {"head_seconds": config.header_timeout_seconds, "send_seconds": config.send_seconds},
    )


def options(config: settings.Settings) -> dict[str, Any]:
    """uvicorn's settings for this configuration, for `run` and for the benchmark."""
    return {
        "http": protocol(config),
        "loop": STACKS[config.http][1],
        # The hook serves no WebSocket: an upgrade request is an ordinary request.
        "ws": "none",
        # Over this many connections, uvicorn answers 503 to new requests.
        "limit_concurrency": config.max_connections,
        # uvicorn's own idle timer, after an answer; the head deadline above is the real one.
        "timeout_keep_alive": math.ceil(config.header_timeout_seconds),
        "access_log": False,
        "server_header": False,
    }


# The youngest generation's collection threshold while serving (Python's default is 700
# allocations). A sync allocates many short-lived dicts and lists that reference counting
# frees at once; at 700 the collector ran over them many times per sync, for nothing
# (docs/performance.md, "The settled collector"). Cyclic garbage is still collected.
GC_THRESHOLD = (20_000, 50, 100)


def settle_memory() -> None:
    """Before serving, once everything is imported: the objects alive now (modules, the app,
    its routes and models) live for the process's life, so they are moved out of the
    collector's sight (`gc.freeze`) and not traversed by every full collection, and young
    collections run less often (GC_THRESHOLD). docs/performance.md has the figures."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def run(config: settings.Settings, host: str, port: int, warnings: Sequence[str] = ()) -> None:
    """Serve until SIGTERM, or Ctrl-C once the requests in flight are answered; `warnings` are
    logged once the logs are set up. CannotListen before anything else if it cannot listen."""
    from app.service import web  # here, not above: `render` does without FastAPI

    listening.check(host, port)
    app = web.create_app(config)  # before the collector settles: it lives as long as the process
    settle_memory()
    server = QuietServer(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=logs.config(config.log_level),
            ssl_certfile=config.tls_cert_file,
            ssl_keyfile=config.tls_key_file,
            **options(config),
        )
    )
    for line in warnings:
        log.warning(line)
    try:
        server.run()
    except KeyboardInterrupt:
        # uvicorn raises again the Ctrl-C it shut down on: a graceful shutdown is a clean exit.
        if not server.started or server.force_exit:
            raise
    if not server.started:
        raise SystemExit(STARTUP_FAILURE)
