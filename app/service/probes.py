"""The probe and metrics server of the optional components (`ttl-controller`, `kueue-status`):
/healthz and /metrics on the hook's uvicorn stack, in a thread of its own, with the hook's
connection deadlines and a bound on the connections that wait for a request (docs/security.md)."""

import resource
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from uvicorn.config import STARTUP_FAILURE

from app.service import quiet, server

# Connections waiting for a whole request head (idle, slow or silent); one more closes the one
# that has waited longest, so that they can neither fill the memory nor lock the kubelet out.
MAX_WAITING = 256
# Past this many connections uvicorn answers 503: only requests stuck in their answer count
# beyond the waiting ones, and the send deadline cuts each of those within 10 s.
MAX_CONNECTIONS = 2 * MAX_WAITING
# As the hook's: a kubelet or Prometheus sends its request at once.
HEAD_SECONDS = 5.0
SEND_SECONDS = 10.0
Ready = Callable[[], bool]


class BoundedWaiting(server.Deadlines):
    """The deadlines, and at most `max_waiting` connections waiting for a request head: a bound
    that refused new connections would let idle ones keep the kubelet's probe out."""

    max_waiting = MAX_WAITING
    # The connections of one server waiting for a head, longest waiting first (`protocol()`
    # gives each server its own).
    waiting: dict["BoundedWaiting", None]

    def _await_head(self) -> None:
        super()._await_head()
        self.waiting.pop(self, None)
        self.waiting[self] = None
        while len(self.waiting) > self.max_waiting:
            oldest = next(iter(self.waiting))
            del self.waiting[oldest]
            oldest.transport.close()

    def _head_complete(self, cycle: server.Cycle) -> None:
        self.waiting.pop(self, None)
        super()._head_complete(cycle)

    def connection_lost(self, exc: Exception | None) -> None:
        self.waiting.pop(self, None)
        super().connection_lost(exc)


def protocol(max_waiting: int = MAX_WAITING) -> type[BoundedWaiting]:
    """A protocol class for one server: uvicorn's httptools protocol with the bound."""
    bases = (BoundedWaiting, server.HttpToolsDeadlines)
    return type(
        "ProbeProtocol",
        bases,
        {"max_waiting": max_waiting, "waiting": {}, "head_seconds": HEAD_SECONDS,
         "send_seconds": SEND_SECONDS},
    )  # fmt: skip


def answer(path: str, registry: CollectorRegistry, ready: Ready) -> tuple[int, bytes, bytes]:
    """(status, content type, body) of a GET of `path`: /metrics always, /healthz 200 once the
    component is ready (its first list done), else 503."""
    if path == "/metrics":
        return 200, CONTENT_TYPE_LATEST.encode(), generate_latest(registry)
    if path == "/healthz":
        ok = ready()
        return (200, b"text/plain", b"ok\n") if ok else (503, b"text/plain", b"not listed yet\n")
    return 404, b"text/plain", b"not found\n"


def app(registry: CollectorRegistry, ready: Ready) -> Callable[..., Any]:
    """The ASGI application of the two paths (no framework: two answers need none)."""

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        status, content_type, body = answer(scope["path"], registry, ready)
        headers = [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return asgi


class ProbeServer(quiet.QuietServer):
    """uvicorn's server, saying when it is up (or has given up) to the thread that started it."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.settled = threading.Event()

    def run(self, sockets: Any = None) -> None:
        try:
            super().run(sockets)
        finally:
            self.settled.set()

    async def startup(self, sockets: Any = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.settled.set()

    def port(self) -> int:
        """The port it listens on (the one asked for, or the one given for 0)."""
        port: int = self.servers[0].sockets[0].getsockname()[1]
        return port


def raise_open_files_limit() -> None:
    """Raise the soft limit on open files to the hard one, as Go does for every program since
    1.19: a runtime may leave it at 1,024, and an accept past it fails (libuv then drops the
    connections waiting in the backlog, a probe's among them)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


@contextmanager
def serving(host: str, port: int, registry: CollectorRegistry, ready: Ready) -> Iterator[int]:
    """Serve /healthz and /metrics on `host`:`port` until the block ends; yield the port.
    SystemExit if it cannot listen there (uvicorn has logged why)."""
    raise_open_files_limit()
    config = uvicorn.Config(
        app(registry, ready), host=host, port=port, http=protocol(), loop="uvloop", ws="none",
        lifespan="off", limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=int(HEAD_SECONDS), access_log=False, server_header=False,
        log_config=None,
    )  # fmt: skip
    probes = ProbeServer(config)
    thread = threading.Thread(target=probes.run, name="probes", daemon=True)
    thread.start()
    probes.settled.wait()
    if not probes.started:
        thread.join()
        raise SystemExit(STARTUP_FAILURE)
    try:
        yield probes.port()
    finally:
        probes.stop()
        thread.join()
