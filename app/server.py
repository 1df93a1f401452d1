"""The HTTP server: uvicorn, with the connection deadlines it lacks (a whole request head
within a time, an answer taken within a time) and a bound on open connections."""

import asyncio
import logging
import math
from typing import Any

import h11
import uvicorn
from prometheus_client import Counter
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from app import jsonlog as logs
from app import metrics, settings

log = logging.getLogger(f"{logs.LOGGER}.server")

CLOSED = Counter(
    "mxjob_connections_closed",
    "Connections the hook closed itself, by reason: head_timeout (no whole request head in "
    "time: idle, slow or silent), send_timeout (an answer not taken in time).",
    ["reason"],
    registry=metrics.REGISTRY,
)


class DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with two deadlines per connection. uvicorn arms its keep-alive
    timer only after an answer and disarms it on any byte, so a connection that never sends
    a request, or sends its head a byte at a time, stays open for ever; and an answer the
    client does not read stays in memory for ever. Here a connection must deliver a whole
    request head within `head_seconds` of opening or of its previous answer, and take each
    answer within `send_seconds` of its first byte; else it is closed (the answer's buffer
    dropped). Body deadlines are the app's: it answers 408 (app/web.py)."""

    head_seconds = 5.0
    send_seconds = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._send_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._send_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle and self.cycle is not None:
            # A whole request head arrived: what follows is the app's to time.
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            self._time_answer(self.cycle)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._send_timer is not None and self.transport.get_write_buffer_size() == 0:
            self._send_timer.cancel()
            self._send_timer = None
        if not self.transport.is_closing():
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
        if self.conn.our_state is not h11.ERROR:
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()

    def _time_answer(self, cycle: RequestResponseCycle) -> None:
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

    def _send_late(self, cycle: RequestResponseCycle) -> None:
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


def protocol(config: settings.Settings) -> type[DeadlineProtocol]:
    """The protocol class with this configuration's deadlines."""
    return type(
        "HookProtocol",
        (DeadlineProtocol,),
        {"head_seconds": config.header_timeout_seconds, "send_seconds": config.send_seconds},
    )


def options(config: settings.Settings) -> dict[str, Any]:
    """uvicorn's settings for this configuration, for `run` and for the benchmark."""
    return {
        "http": protocol(config),
        # Over this many connections, uvicorn answers 503 to new requests.
        "limit_concurrency": config.max_connections,
        # uvicorn's own idle timer, after an answer; the head deadline above is the real one.
        "timeout_keep_alive": math.ceil(config.header_timeout_seconds),
        "access_log": False,
        "server_header": False,
    }


def run(config: settings.Settings, host: str, port: int) -> None:
    uvicorn.run(
        "app.web:app",
        host=host,
        port=port,
        log_config=logs.config(config.log_level),
        ssl_certfile=config.tls_cert_file,
        ssl_keyfile=config.tls_key_file,
        **options(config),
    )
