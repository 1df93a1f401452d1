"""What the web layer answers when things go wrong, in-process at the ASGI level: no work for
clients that left and no `ok` for those that left before their whole answer, a bug in the
core answered 500, never 422, and error answers that keep nothing once the collector is off."""

import gc
import io
import json
import logging
import threading
import tracemalloc
import weakref
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from app.core.reconcile import sync_result
from app.service import metrics, pieces, replies
from app.service.jsonlog import JsonFormatter
from tests.support import jobs as s
from tests.support.asgi_calls import NEW_JOB, THREADED, Call, Step, hook_app, post, run_calls


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
    run_calls(hook_app(), [(0, post("leaving", *steps))])
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
    run_calls(hook_app(), [(0, call)])
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
    run_calls(hook_app(), [(0, call)])
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


class Marker:
    """Put into a parsed request, to see with a weak reference whether it is still alive."""


# Over intake.INLINE_BODY, so parsed and answered in the worker thread: 2 MiB, 20,000 objects.
PADDED = s.after_first(s.request(s.mxjob(s.train_spec()))) | {
    "padding": [{"k": "x" * 100}] * 20_000
}


@pytest.fixture
def markers(monkeypatch: pytest.MonkeyPatch) -> list[weakref.ref[Marker]]:
    """A weak reference to a marker put into every request the hook parses."""
    refs: list[weakref.ref[Marker]] = []
    parse = replies.parse

    def marked(raw: bytearray) -> Any:
        parsed = parse(raw)
        marker = Marker()
        refs.append(weakref.ref(marker))
        parsed["marker"] = marker
        return parsed

    monkeypatch.setattr(replies, "parse", marked)
    return refs


def bytes_kept(app: Any, call: Call) -> int:
    """The bytes still allocated once `call` is answered, the cyclic collector off."""
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        threads = set(threading.enumerate())
        run_calls(app, [(0, call)])
        # The worker thread drops its last reference to the work a moment after handing
        # back the result; it ends once the event loop is closed.
        for thread in set(threading.enumerate()) - threads:
            thread.join(5)
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()


@pytest.mark.parametrize(
    ("kind", "bug", "status"),
    [("TFJob", None, 422), ("MXJob", TypeError, 500)],
    ids=["refused-422", "crashed-500"],
)
def test_an_error_answer_keeps_neither_the_body_nor_the_parsed_request(
    kind: str,
    bug: type[Exception] | None,
    status: int,
    markers: list[weakref.ref[Marker]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the cyclic collector off, everything a 422 or a 500 answer to a large request
    held is freed by reference counting alone once it is answered: the parsed request (a
    marker in it, by weak reference) and the body's and the parsed request's bytes (traced
    by tracemalloc). An error raised across the worker thread keeps both, through a cycle of
    its traceback's frames, until a collection that may come late."""
    body = orjson.dumps(PADDED | {"parent": PADDED["parent"] | {"kind": kind}})
    assert len(body) > 2 * 1024 * 1024
    if bug is not None:

        def broken(*args: Any) -> Any:
            raise bug("unhashable type: 'list'")  # a new one: a kept one would keep its frames

        monkeypatch.setattr(replies, "sync_result", broken)
    app = hook_app()
    run_calls(app, [(0, post("warm-up", NEW_JOB))])  # the loop's and the thread's first costs
    call = post("large", body)
    markers.clear()
    kept = bytes_kept(app, call)
    print(f"\n{status} to a {len(body) / 2**20:.1f} MiB request: {kept / 1024:+.0f} KiB kept")
    assert call.status == status
    assert [marker() for marker in markers] == [None]
    assert kept < 512 * 1024, f"{kept} bytes kept"
