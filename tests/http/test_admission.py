"""What the web layer lets in, in-process at the ASGI level: read deadlines (408), the byte
budget (429), the queue deadline (503), no work for clients that left and no `ok` for those
that left before their whole answer, a bug in the core answered 500, never 422, error
answers that keep nothing once the collector is off, and an odd Content-Length."""

import gc
import io
import json
import logging
import threading
import tracemalloc
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson
import pytest

from app.core.reconcile import sync_result
from app.service import metrics, pieces, replies, web
from app.service.jsonlog import JsonFormatter
from app.service.settings import Settings
from tests.support import jobs as s

NEW_JOB = orjson.dumps(s.after_first(s.request(s.mxjob(s.train_spec()))))
# Small, but a job of more than intake.INLINE_REPLICAS replicas: answered in the worker thread.
THREADED = orjson.dumps(s.after_first(s.request(s.mxjob(s.train_spec(4, 20)))))
# A body between intake.INLINE_BODY and intake.LARGE_BODY: counted against the byte budget.
MEDIUM = orjson.dumps(
    s.after_first(s.request(s.mxjob(s.train_spec()))) | {"padding": "x" * 200_000}
)


def _app(**settings: Any) -> Any:
    return web.create_app(Settings(frozen_clock=s.NOW, **settings))


@dataclass
class Gate:
    """Holds a client back until the test opens it (anyio's Event needs a running loop)."""

    opened: bool = False

    async def wait(self) -> None:
        while not self.opened:
            await anyio.sleep(0.01)


Step = bytes | Gate | str


@dataclass
class Call:
    """One POST /sync: its body in steps (bytes, a Gate to wait for, "pause" for 50 ms,
    "stall" for a client that goes silent, "leave" for one that disconnects; after the
    steps, the client waits for its answer as a real connection does), and what came back."""

    name: str
    steps: list[Step]
    declared: int | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    reader: Gate | None = None  # a client that takes its answer only once this opens
    # Set (by the test, from any thread) when the client leaves after its last step.
    left: bool = False
    pieces: int = 0  # pieces of the answer's body the client took
    leave_after: int | None = None  # leaves once it took this many pieces

    async def run(self, app: Any, log: list[str]) -> None:
        steps = list(self.steps)

        async def receive() -> dict[str, Any]:
            while steps:
                step = steps.pop(0)
                if isinstance(step, Gate):
                    await step.wait()
                elif step == "pause":
                    await anyio.sleep(0.05)
                elif step == "stall":
                    await anyio.sleep_forever()
                elif step == "leave":
                    return {"type": "http.disconnect"}
                else:
                    assert isinstance(step, bytes)
                    log.append(f"{self.name} sent")
                    more = any(x != "leave" for x in steps)
                    return {"type": "http.request", "body": step, "more_body": more}
            while not self.left:
                await anyio.sleep(0.01)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
                self.headers = {k.decode(): v.decode() for k, v in message["headers"]}
                log.append(f"{self.name} {self.status}")
            else:
                if self.reader is not None:
                    await self.reader.wait()
                self.body += bytes(message.get("body", b""))
                self.pieces += 1
                self.left = self.left or self.pieces == self.leave_after
                if not message.get("more_body", False):
                    log.append(f"{self.name} taken")

        headers = (
            [] if self.declared is None else [(b"content-length", str(self.declared).encode())]
        )
        scope = {"type": "http", "method": "POST", "path": "/sync", "headers": headers}
        await app(scope | {"query_string": b"", "root_path": ""}, receive, send)

    @property
    def detail(self) -> str:
        detail: str = json.loads(self.body)["detail"]
        return detail


def post(name: str, *steps: Step) -> Call:
    """A call that declares the length of all its bytes."""
    return Call(name, list(steps), sum(len(x) for x in steps if isinstance(x, bytes)))


def _run(app: Any, calls: list[tuple[float, Call]], timeout: float = 10) -> list[str]:
    """Start each call `delay` seconds after the previous one; the log of what happened."""
    log: list[str] = []

    async def main() -> None:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tasks:
                for delay, call in calls:
                    await anyio.sleep(delay)
                    tasks.start_soon(call.run, app, log)

    anyio.run(main)
    return log


@pytest.mark.parametrize(
    ("steps", "settings", "read"),
    [
        pytest.param(
            [NEW_JOB[:100], "stall"],
            {"read_chunk_timeout_seconds": 0.2},
            100,
            id="stalls-after-a-chunk",
        ),
        pytest.param(["stall"], {"read_chunk_timeout_seconds": 0.2}, 0, id="never-sends-a-byte"),
        pytest.param(
            [b"{", *(step for _ in range(30) for step in ("pause", b" "))],
            {"read_chunk_timeout_seconds": 0.5, "read_timeout_seconds": 0.5},
            "some",
            id="trickles-past-the-overall-deadline",
        ),
    ],
)
def test_a_slow_body_gets_408(steps: list[Step], settings: dict[str, Any], read: Any) -> None:
    call = Call("slow", steps, declared=10**6)
    _run(_app(**settings), [(0, call)], timeout=5)
    assert call.status == 408
    assert call.headers["connection"] == "close"
    if read != "some":
        assert f"after {read} bytes" in call.detail


@pytest.mark.parametrize(
    ("settings", "declared", "status"),
    [
        pytest.param({"auth_token": "t"}, None, 401, id="unauthorized"),
        pytest.param({"max_body_bytes": 100}, 101, 413, id="too-large"),
    ],
)
def test_a_refusal_before_the_body_closes_the_connection(
    settings: dict[str, Any], declared: int | None, status: int
) -> None:
    """Keeping the connection would mean reading the unread body first."""
    call = Call("refused", [NEW_JOB], declared=declared)
    log = _run(_app(**settings), [(0, call)])
    assert (call.status, call.headers["connection"]) == (status, "close")
    assert "refused sent" not in log


def test_a_stalled_large_upload_releases_the_large_slot() -> None:
    """The case that once blocked every large job: a large upload that stops holds the one large-request slot; with
    the chunk deadline it gets 408 and the next large request goes through."""
    app = _app(read_chunk_timeout_seconds=0.3, max_body_bytes=64 * 1024 * 1024)
    stalled = Call("stalled", [b"{" * 1000, "stall"], declared=24 * 1024 * 1024)
    big = Call("big", [THREADED])  # unknown length: large
    log = _run(app, [(0, stalled), (0.05, big)])
    assert log == [
        "stalled sent",
        "stalled 408",
        "stalled taken",
        "big sent",
        "big 200",
        "big taken",
    ]


def test_bodies_over_the_byte_budget_get_429_until_bytes_are_released() -> None:
    hold = Gate()
    app = _app(max_body_bytes=len(MEDIUM), bytes_in_flight=len(MEDIUM) + 1000)
    first = post("first", MEDIUM[:1000], hold, MEDIUM[1000:])
    second, small, third = post("second", MEDIUM), post("small", NEW_JOB), post("third", MEDIUM)

    def release() -> None:
        hold.opened = True

    log = _run_with(app, [(0, first), (0.05, second), (0.05, small)], release, [third])
    assert second.status == 429
    assert (second.headers["retry-after"], second.headers["connection"]) == ("1", "close")
    assert small.status == 200  # at most intake.INLINE_BODY bytes: never waits for the budget
    assert (first.status, third.status) == (200, 200)
    assert log.index("second 429") < log.index("first 200") < log.index("third sent")


def test_no_sync_starts_while_an_unread_answer_overdraws_the_budget() -> None:
    """An answer over intake.INLINE_BODY counts against the budget until the client took it;
    while answers overdraw it, the next sync waits, so that at most one answer is ever
    beyond the budget however many clients do not read."""
    reader = Gate()
    app = _app(max_body_bytes=66_000, bytes_in_flight=66_000)  # one THREADED answer: 66,785 B
    slow, waiting = post("slow", THREADED), post("waiting", THREADED)
    slow.reader = reader

    def read() -> None:
        reader.opened = True

    log = _run_with(app, [(0, slow), (0.05, waiting)], read, [])
    assert (slow.status, waiting.status) == (200, 200)
    assert log.index("slow taken") < log.index("waiting 200")


def _run_with(
    app: Any, calls: list[tuple[float, Call]], then: Callable[[], None], after: list[Call]
) -> list[str]:
    """Run `calls`, `then()` once they have all started, and the `after` calls once the
    first ones are answered."""
    log: list[str] = []

    async def main() -> None:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as first:
                for delay, call in calls:
                    await anyio.sleep(delay)
                    first.start_soon(call.run, app, log)
                await anyio.sleep(0.05)
                then()
            async with anyio.create_task_group() as rest:
                for call in after:
                    rest.start_soon(call.run, app, log)

    anyio.run(main)
    return log


def test_work_queued_past_the_webhook_timeout_is_dropped_with_503() -> None:
    """Metacontroller stops waiting after its webhook timeout: a request still waiting for
    the large-request slot then, or whose upload alone took that long, gets a 503 to retry
    instead of being computed for nobody."""
    app = _app(webhook_timeout_seconds=0.3, read_timeout_seconds=5, read_chunk_timeout_seconds=5)
    slow = Call("slow", [THREADED[:10], *["pause"] * 10, THREADED[10:]])
    waiting = Call("waiting", [THREADED])
    log = _run(app, [(0, slow), (0.05, waiting)])
    assert (waiting.status, slow.status) == (503, 503)
    assert (waiting.headers["retry-after"], waiting.headers["connection"]) == ("1", "close")
    assert "webhook timeout" in waiting.detail
    assert "waiting sent" not in log  # refused without reading its body


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The `mxjob` logger's lines as JsonFormatter writes them."""
    out, logger = io.StringIO(), logging.getLogger("mxjob")
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    old_level, logger.level = logger.level, logging.INFO
    yield out
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def _lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _count(outcome: str) -> float:
    value = metrics.REGISTRY.get_sample_value("mxjob_sync_requests_total", {"outcome": outcome})
    return value or 0.0


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([THREADED, "leave"], id="before-its-sync-ran"),
        pytest.param([THREADED[:100], "pause", "leave"], id="in-the-middle-of-its-body"),
    ],
)
def test_a_client_that_left_gets_no_work_a_count_and_no_traceback(
    steps: list[Step], json_log: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[Any] = []
    monkeypatch.setattr(replies, "sync_result", lambda *args: synced.append(args))
    before = _count("client_gone")
    _run(_app(), [(0, post("leaving", *steps))])
    assert synced == []
    assert _count("client_gone") - before == 1
    [line] = _lines(json_log)
    assert (line["level"], line["outcome"]) == ("warning", "client_gone")
    assert "exception" not in line


@pytest.mark.parametrize("body", [NEW_JOB, THREADED], ids=["on-the-event-loop", "in-the-thread"])
@pytest.mark.parametrize(
    "bug",
    [
        pytest.param(TypeError("unhashable type: 'list'"), id="type-error"),
        pytest.param(orjson.JSONEncodeError("a subclass of TypeError"), id="encode-error"),
        pytest.param(KeyError("name"), id="key-error"),
    ],
)
def test_a_bug_in_the_core_is_a_500_not_a_4xx(
    body: bytes, bug: Exception, json_log: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The core raising is injected: the fuzz tests exist so that it never does. orjson's
    encode error is a TypeError, so a handler for the serializer's errors must not also
    wrap the core."""

    def broken(*args: Any) -> Any:
        raise bug

    monkeypatch.setattr(replies, "sync_result", broken)
    before = _count("error")
    call = post("buggy", body)
    _run(_app(), [(0, call)])
    assert call.status == 500
    assert call.detail == "internal error in the sync hook (logged)"
    assert _count("error") - before == 1
    [line] = _lines(json_log)
    assert (line["level"], line["outcome"], line["job"]) == ("error", "error", "mnist")
    assert type(bug).__name__ in line["exception"]


# A request for a job of 200 workers: its answer is over pieces.PIECE, sent in several pieces.
TWO_PIECES = orjson.dumps(s.after_first(s.request(s.mxjob(s.train_spec(1, 200)))))


@pytest.mark.parametrize("when", ["during-its-sync", "while-its-answer-is-sent"])
def test_a_client_that_leaves_before_its_whole_answer_is_counted_gone_not_ok(
    when: str, json_log: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that leaves while its sync runs, or between two pieces of its answer, had no
    answer: counted `client_gone` and logged as a warning, never as an answered sync."""
    call = post("leaving", TWO_PIECES)
    if when == "during-its-sync":
        core = sync_result

        def leave_meanwhile(*args: Any) -> Any:
            result = core(*args)
            call.left = True
            return result

        monkeypatch.setattr(replies, "sync_result", leave_meanwhile)
    else:
        call.leave_after = 1
    before = {outcome: _count(outcome) for outcome in ("ok", "client_gone")}
    _run(_app(), [(0, call)])
    assert _count("client_gone") - before["client_gone"] == 1
    assert _count("ok") == before["ok"]
    answer = orjson.dumps(s.created(s.request(s.mxjob(s.train_spec(1, 200)))))
    assert len(answer) > 2 * pieces.PIECE
    assert len(call.body) < len(answer)
    if when == "during-its-sync":
        assert call.status is None  # nothing sent
    [line] = _lines(json_log)
    assert (line["level"], line["outcome"], line["job"]) == ("warning", "client_gone", "mnist")
    assert line["message"] == "client went away before it had its answer"
    assert "exception" not in line


def test_a_content_length_of_other_digits_is_no_length() -> None:
    """ "²" is a digit to str.isdigit() but not to int(): such a Content-Length counts as
    none (a body of unknown length), never a 500."""
    for declared in ("²".encode("latin-1"), "٣".encode(), b"12\xb2"):
        call = Call("odd", [NEW_JOB])

        async def run(call: Call = call, declared: bytes = declared) -> None:
            async def app(scope: Any, receive: Any, send: Any) -> None:
                headers = [(b"content-length", declared)]
                await _app()(scope | {"headers": headers}, receive, send)

            await call.run(app, [])

        anyio.run(run)
        assert call.status == 200, (declared, call.body)


class Marker:
    """Put into a parsed request, to see with a weak reference whether it is still alive."""


# Over intake.INLINE_BODY, so parsed and answered in the worker thread: 2 MiB, 20,000 objects.
PADDED = s.after_first(s.request(s.mxjob(s.train_spec()))) | {
    "padding": [{"k": "x" * 100}] * 20_000
}


@pytest.mark.parametrize(
    ("kind", "bug", "status"),
    [("TFJob", None, 422), ("MXJob", TypeError, 500)],
    ids=["refused-422", "crashed-500"],
)
def test_an_error_answer_keeps_neither_the_body_nor_the_parsed_request(
    kind: str, bug: type[Exception] | None, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the cyclic collector off, everything a 422 or a 500 answer to a large request
    held is freed by reference counting alone once it is answered: the parsed request (a
    marker in it, by weak reference) and the body's and the parsed request's bytes (traced
    by tracemalloc). An error raised across the worker thread keeps both, through a cycle of
    its traceback's frames, until a collection that may come late."""
    body = orjson.dumps(PADDED | {"parent": PADDED["parent"] | {"kind": kind}})
    assert len(body) > 2 * 1024 * 1024
    markers: list[weakref.ref[Marker]] = []
    parse = replies.parse

    def marked(raw: bytearray) -> Any:
        parsed = parse(raw)
        marker = Marker()
        markers.append(weakref.ref(marker))
        parsed["marker"] = marker
        return parsed

    monkeypatch.setattr(replies, "parse", marked)
    if bug is not None:

        def broken(*args: Any) -> Any:
            raise bug("unhashable type: 'list'")  # a new one: a kept one would keep its frames

        monkeypatch.setattr(replies, "sync_result", broken)
    app = _app()
    _run(app, [(0, post("warm-up", NEW_JOB))])  # the loop's and the thread's first costs
    call = post("large", body)
    markers.clear()
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        threads = set(threading.enumerate())
        _run(app, [(0, call)])
        # The worker thread drops its last reference to the work a moment after handing
        # back the result; it ends once the event loop is closed.
        for thread in set(threading.enumerate()) - threads:
            thread.join(5)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()
    print(f"\n{status} to a {len(body) / 2**20:.1f} MiB request: {kept / 1024:+.0f} KiB kept")
    assert call.status == status
    assert [marker() for marker in markers] == [None]
    assert kept < 512 * 1024, f"{kept} bytes kept"
