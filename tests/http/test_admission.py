"""What the web layer lets in, in-process at the ASGI level: read deadlines (408), the byte
budget (429), the queue deadline (503), and an odd Content-Length. What it answers to clients
that leave and to a bug in the core is in test_admission_errors.py."""

from typing import Any

import anyio
import orjson
import pytest

from tests.support import jobs as s
from tests.support.asgi_calls import (
    NEW_JOB,
    THREADED,
    Call,
    Gate,
    Step,
    hook_app,
    post,
    run_calls,
    run_with,
)

# A body between intake.INLINE_BODY and intake.LARGE_BODY: counted against the byte budget.
MEDIUM = orjson.dumps(
    s.after_first(s.request(s.mxjob(s.train_spec()))) | {"padding": "x" * 200_000}
)


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
    run_calls(hook_app(**settings), [(0, call)], timeout=5)
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
    log = run_calls(hook_app(**settings), [(0, call)])
    assert (call.status, call.headers["connection"]) == (status, "close")
    assert "refused sent" not in log


def test_a_stalled_large_upload_releases_the_large_slot() -> None:
    """The case that once blocked every large job: a large upload that stops holds the one large-request slot; with
    the chunk deadline it gets 408 and the next large request goes through."""
    app = hook_app(read_chunk_timeout_seconds=0.3, max_body_bytes=64 * 1024 * 1024)
    stalled = Call("stalled", [b"{" * 1000, "stall"], declared=24 * 1024 * 1024)
    big = Call("big", [THREADED])  # unknown length: large
    log = run_calls(app, [(0, stalled), (0.05, big)])
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
    app = hook_app(max_body_bytes=len(MEDIUM), bytes_in_flight=len(MEDIUM) + 1000)
    first = post("first", MEDIUM[:1000], hold, MEDIUM[1000:])
    second, small, third = post("second", MEDIUM), post("small", NEW_JOB), post("third", MEDIUM)

    def release() -> None:
        hold.opened = True

    log = run_with(app, [(0, first), (0.05, second), (0.05, small)], release, [third])
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
    app = hook_app(max_body_bytes=66_000, bytes_in_flight=66_000)  # one THREADED answer: 66,785 B
    slow, waiting = post("slow", THREADED), post("waiting", THREADED)
    slow.reader = reader

    def read() -> None:
        reader.opened = True

    log = run_with(app, [(0, slow), (0.05, waiting)], read, [])
    assert (slow.status, waiting.status) == (200, 200)
    assert log.index("slow taken") < log.index("waiting 200")


def test_work_queued_past_the_webhook_timeout_is_dropped_with_503() -> None:
    """Metacontroller stops waiting after its webhook timeout: a request still waiting for
    the large-request slot then, or whose upload alone took that long, gets a 503 to retry
    instead of being computed for nobody."""
    app = hook_app(
        webhook_timeout_seconds=0.3, read_timeout_seconds=5, read_chunk_timeout_seconds=5
    )
    slow = Call("slow", [THREADED[:10], *["pause"] * 10, THREADED[10:]])
    waiting = Call("waiting", [THREADED])
    log = run_calls(app, [(0, slow), (0.05, waiting)])
    assert (waiting.status, slow.status) == (503, 503)
    assert (waiting.headers["retry-after"], waiting.headers["connection"]) == ("1", "close")
    assert "webhook timeout" in waiting.detail
    assert "waiting sent" not in log  # refused without reading its body


def test_a_content_length_of_other_digits_is_no_length() -> None:
    """ "²" is a digit to str.isdigit() but not to int(): such a Content-Length counts as
    none (a body of unknown length), never a 500."""
    for declared in ("²".encode("latin-1"), "٣".encode(), b"12\xb2"):
        call = Call("odd", [NEW_JOB])

        async def run(call: Call = call, declared: bytes = declared) -> None:
            async def app(scope: Any, receive: Any, send: Any) -> None:
                headers = [(b"content-length", declared)]
                await hook_app()(scope | {"headers": headers}, receive, send)

            await call.run(app, [])

        anyio.run(run)
        assert call.status == 200, (declared, call.body)
