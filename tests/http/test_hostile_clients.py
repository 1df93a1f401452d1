"""The real server against careless and hostile clients, its memory read from /proc: error
answers to large bodies, a body at the limit, a stalled upload, idle and slow connections,
answers nobody reads, clients that leave (also while queued). All of them at once: in
test_hostile_mix.py."""

import time
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import orjson
import pytest

from app.core.validate.costs import MiB
from tests.support import jobs as s
from tests.support.hostile import (
    LIMIT_KIB,
    NEW_JOB,
    crashing_hook,
    drip,
    head,
    hook,
    new_job,
    renamed,
    running,
    status_of,
    unread_answer,
)
from tests.support.servers import Server, closed_by_peer, wait_for


# Resident memory is a timing-sensitive figure: a late collection on a loaded machine (21 MiB
# once in the parallel run, 13 MiB alone) is not the leak this test is for (38-49 MiB).
@pytest.mark.serial
def test_error_answers_to_large_requests_free_their_memory() -> None:
    """A 422 and a 500 (a bug in the core) for a 12 MiB request, three times each: memory
    goes back to where a 200 for the same size left it. Raising those errors across the
    worker thread kept each request until a late collection: three 422s to it left 38-49
    MiB more resident. (tests/http/test_admission_errors.py holds this exactly, in-process,
    with the collector off.)"""
    ok, refused, crashed = running(500), running(500, kind="TFJob"), renamed(running(500), "crash")
    with crashing_hook() as server:
        assert httpx.post(f"{server.url}/sync", content=ok, timeout=30).status_code == 200
        after_ok = server.memory_kib()
        for _ in range(3):
            assert httpx.post(f"{server.url}/sync", content=refused, timeout=30).status_code == 422
            assert httpx.post(f"{server.url}/sync", content=crashed, timeout=30).status_code == 500
        grown = server.memory_kib() - after_ok
        server.stop()
        errors = [orjson.loads(line) for line in server.log_lines() if '"error"' in line]
    print(f"\nRSS after a 200 to {len(ok) / MiB:.1f} MiB: {after_ok // 1024} MiB;")
    print(f"after three 422s and three 500s: {grown / 1024:+.1f} MiB")
    assert [(line["outcome"], line["job"]) for line in errors] == [("error", "crash")] * 3
    assert grown < 20 * 1024, f"{grown} KiB more after three 422s and three 500s"


def test_a_stalled_upload_gets_408_and_the_next_large_job_its_answer() -> None:
    """The issue's case: a 24 MiB upload that stops after 1 MiB, then a 10 MiB job. With
    the default deadlines the stalled one gets 408 after the chunk timeout (2 s) and the
    other its answer, well within Metacontroller's 10 s."""
    other = running(460)
    assert len(other) > 10 * MiB
    with hook() as server, server.connect() as stalled:
        stalled.sendall(head(24 * MiB) + b"{" * MiB)
        started = time.monotonic()
        reply = httpx.post(f"{server.url}/sync", content=other, timeout=10)
        assert reply.status_code == 200
        took = time.monotonic() - started
        print(f"\nthe other job answered after {took:.2f} s")
        assert took < 6
        answer = stalled.recv(4096)
        assert status_of(answer) == 408
        assert b"still incomplete" in answer
        assert closed_by_peer(stalled, 5)
        assert httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200


def test_a_body_of_the_largest_size_arrives_well_within_the_chunk_deadline() -> None:
    """How fast loopback moves a body through the server and the app's reading, the figure
    the read deadlines were chosen by: a body of 64 MiB less a byte (the default limit),
    answered 422 as soon as it is read (it is not JSON)."""
    body = b" " * (64 * MiB - 2) + b"x"
    with hook() as server, server.connect() as sock:
        started = time.monotonic()
        sock.sendall(head(len(body)) + body)
        answer = sock.recv(4096)
        took = time.monotonic() - started
    rate = len(body) / MiB / took
    print(f"\n{len(body) / MiB:.0f} MiB read and refused in {took:.2f} s ({rate:.0f} MiB/s)")
    assert status_of(answer) == 422
    assert took < 4, "a body at the limit took half the read deadline"


# Deadlines shortened so that the test takes seconds: a whole head within 1 s, a body within
# 2 s (four fifths of the webhook timeout) without a gap over 0.5 s (a fifth).
SHORT = {"MXJOB_HEADER_TIMEOUT_SECONDS": "1", "MXJOB_WEBHOOK_TIMEOUT_SECONDS": "2.5"}


@pytest.fixture(scope="module", params=["httptools", "h11"])
def short_deadlines(request: pytest.FixtureRequest) -> Iterator[Server]:
    """On the shipped stack and on the h11 one MXJOB_HTTP selects: the deadlines and the
    head's bound are the hook's own on httptools, h11's own bound on h11."""
    with hook(MXJOB_HTTP=request.param, **SHORT) as server:
        yield server


def test_an_idle_connection_is_closed_after_the_head_timeout(short_deadlines: Server) -> None:
    before = short_deadlines.metric("mxjob_connections_closed_total", reason="head_timeout")
    with short_deadlines.connect() as idle:
        started = time.monotonic()
        assert closed_by_peer(idle, 5)
        assert 0.9 < time.monotonic() - started < 3
    after = short_deadlines.metric("mxjob_connections_closed_total", reason="head_timeout")
    assert after - before == 1


def test_a_kept_alive_connection_is_closed_after_the_head_timeout(
    short_deadlines: Server,
) -> None:
    with short_deadlines.connect() as kept:
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: hook\r\n\r\n")
        assert status_of(kept.recv(4096)) == 200
        started = time.monotonic()
        assert closed_by_peer(kept, 5)
        assert time.monotonic() - started < 3


def test_a_head_sent_a_byte_at_a_time_is_cut_off(short_deadlines: Server) -> None:
    """Every byte used to restart uvicorn's idle timer, so that a slow head held the
    connection for ever."""
    slow_head = b"GET /healthz HTTP/1.1\r\nHost: hook\r\nX-Padding: " + b"x" * 1000
    with short_deadlines.connect() as sock:
        took, answer = drip(sock, slow_head, every=0.2, timeout=5)
    assert answer == b""
    assert took < 3


def test_a_body_sent_a_byte_at_a_time_gets_408(short_deadlines: Server) -> None:
    """Each byte within the chunk deadline (0.5 s), the whole past the body deadline (2 s)."""
    with short_deadlines.connect() as sock:
        sock.sendall(head(len(NEW_JOB)))
        took, answer = drip(sock, NEW_JOB, every=0.2, timeout=6)
    assert status_of(answer) == 408
    assert 1.9 < took < 4


def test_answers_nobody_reads_are_dropped_after_the_send_timeout() -> None:
    """The issue's case, four of them: clients asking for a 1000-worker job's 21 MiB answer
    and reading none of it. Each connection is cut one send timeout after its answer
    started, and the answers' memory goes back."""
    with hook(MXJOB_SEND_TIMEOUT_SECONDS="1") as server, ExitStack() as stack:
        baseline = server.memory_kib()
        readers = [stack.enter_context(unread_answer(server, new_job(1000))) for _ in range(4)]

        def cut() -> bool:
            return server.metric("mxjob_connections_closed_total", reason="send_timeout") == 4

        wait_for(cut, 20, "four connections cut")
        assert all(closed_by_peer(sock, 5) for sock in readers)
        lines = [orjson.loads(line) for line in server.log_lines()]
        cuts = [line for line in lines if line["logger"] == "mxjob.server"]
        assert [(line["level"], line["reason"]) for line in cuts] == [
            ("warning", "send_timeout")
        ] * 4
        assert all(line["unsent_bytes"] > 0 for line in cuts)
        assert httpx.post(f"{server.url}/sync", content=NEW_JOB, timeout=5).status_code == 200
        grown = server.memory_kib() - baseline
        peak = server.memory_kib("VmHWM")
    print(f"\nunread answers: peak RSS {peak // 1024} MiB, {grown // 1024:+} MiB after the cuts")
    assert grown < 64 * 1024, f"{grown} KiB kept after the connections were cut"
    assert peak < LIMIT_KIB


def test_a_client_that_leaves_is_counted_and_logged_without_a_traceback() -> None:
    with hook() as server:
        with server.connect() as leaving:
            leaving.sendall(head(len(NEW_JOB)) + NEW_JOB[:100])
        wait_for(
            lambda: server.metric("mxjob_sync_requests_total", outcome="client_gone") == 1,
            5,
            "the abort counted",
        )
        server.stop()
        lines = [orjson.loads(line) for line in server.log_lines()]
    assert [line for line in lines if line["level"] in ("error", "critical")] == []
    [gone] = [line for line in lines if line.get("outcome") == "client_gone"]
    assert gone["level"] == "warning"
    assert "exception" not in gone


def test_a_client_that_left_while_queued_behind_a_large_sync_gets_no_work() -> None:
    """A 1000-worker job's sync whose 21 MiB answer its client does not take overdraws a
    16 MiB byte budget, so no other sync starts until that answer is taken or cut (the send
    timeout, 2 s). A client that sent its whole request meanwhile and left gets no work:
    counted `client_gone`, a warning that its sync never ran, and no answered sync; the one
    that never took its answer is `client_gone` too, not `ok`."""
    queued = renamed(orjson.dumps(s.request(s.mxjob(s.train_spec(4, 20)))), "leaving")
    budget = str(16 * MiB)
    env = {"MXJOB_MAX_BODY_BYTES": budget, "MXJOB_BYTES_IN_FLIGHT": budget}
    with hook(MXJOB_SEND_TIMEOUT_SECONDS="2", **env) as server:
        with unread_answer(server, new_job(1000)) as large:
            assert large.recv(12) == b"HTTP/1.1 200"  # its answer exists: the budget is over
            with server.connect() as leaving:
                leaving.sendall(head(len(queued)) + queued)
                time.sleep(0.5)  # queued, its whole request read
            wait_for(
                lambda: server.metric("mxjob_sync_requests_total", outcome="client_gone") == 2,
                10,
                "both counted gone",
            )
        assert server.metric("mxjob_sync_requests_total", outcome="ok") == 0
        assert httpx.post(f"{server.url}/sync", content=queued, timeout=5).status_code == 200
        server.stop()
        lines = [orjson.loads(line) for line in server.log_lines()]
    syncs = [
        (line.get("job"), line["level"], line["message"])
        for line in lines
        if line["logger"] == "mxjob.sync"
    ]
    assert syncs == [
        ("mnist", "warning", "client went away before it had its answer"),
        (None, "warning", "client went away before its sync ran"),
        ("leaving", "info", "sync answered"),
    ]


def test_a_request_over_the_connection_limit_gets_503() -> None:
    with hook(MXJOB_MAX_CONNECTIONS="4") as server, ExitStack() as stack:
        for _ in range(4):
            stack.enter_context(server.connect())
        with server.connect() as fifth:
            fifth.sendall(b"GET /healthz HTTP/1.1\r\nHost: hook\r\n\r\n")
            answer = fifth.recv(4096)
            assert status_of(answer) == 503
            assert b"content-type: text/plain" in answer.lower()  # uvicorn's, before the app
        stack.close()
        wait_for(
            lambda: httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200,
            5,
            "answered again once the connections closed",
        )


def test_a_request_head_over_16_kib_is_refused(short_deadlines: Server) -> None:
    with short_deadlines.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hook\r\nX-Padding: " + b"x" * 17 * 1024)
        answer = sock.recv(4096)
        assert status_of(answer) == 400
        assert b"content-type: text/plain" in answer.lower()  # the server's, before the app
        assert closed_by_peer(sock, 5)
