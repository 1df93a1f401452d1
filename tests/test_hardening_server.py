"""The real server: SIGTERM finishes the sync in flight, 413 before the body arrives, and
every line on stderr is one JSON object."""

import json
import signal
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from app.reconcile import sync
from tests import support as s
from tests.hardening import Server, start

CLOCK = {"MXJOB_FROZEN_CLOCK": s.NOW.isoformat()}


def _running_request(workers: int) -> bytes:
    parent = s.mxjob(s.train_spec(2, workers))
    first = sync(s.request(parent), s.NOW)
    phases = {p["metadata"]["name"]: s.pod_status("Running") for p in s.pods_of(first)}
    return orjson.dumps(s.step(parent, first, phases)[0])


@pytest.fixture
def server() -> Iterator[Server]:
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        proc = start(CLOCK, log)
        yield proc
        if proc.proc.poll() is None:
            proc.stop()


def test_sigterm_lets_the_sync_in_flight_finish(server: Server) -> None:
    body = _running_request(200)
    half = len(body) // 2
    refused_meanwhile = False

    def slow_upload() -> Iterator[bytes]:
        nonlocal refused_meanwhile
        yield body[:half]
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(1.0)
        try:
            httpx.get(f"{server.url}/healthz", timeout=2)
        except httpx.TransportError:
            refused_meanwhile = True  # the server is shutting down: no new connections
        yield body[half:]

    reply = httpx.post(f"{server.url}/sync", content=slow_upload(), timeout=30)
    assert reply.status_code == 200
    assert reply.json() == sync(orjson.loads(body), s.NOW)
    assert refused_meanwhile
    # uvicorn re-raises the signal once it has shut down cleanly.
    assert server.proc.wait(timeout=20) in (0, -signal.SIGTERM)
    assert any("Finished server process" in line for line in server.log_lines())


def test_a_declared_length_over_the_limit_gets_413_before_any_body(server: Server) -> None:
    address = urlsplit(server.url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        head = (
            b"POST /sync HTTP/1.1\r\nHost: hook\r\nConnection: close\r\n"
            b"Content-Length: 1000000000000\r\n\r\n"
        )
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"exceeds" in answer


def test_every_log_line_is_json_and_sync_lines_name_the_job(server: Server) -> None:
    httpx.get(f"{server.url}/healthz", timeout=5)
    good = orjson.dumps(s.request(s.mxjob(s.train_spec(), name="logged")))
    assert httpx.post(f"{server.url}/sync", content=good, timeout=10).status_code == 200
    assert httpx.post(f"{server.url}/sync", content=b"{", timeout=10).status_code == 422
    server.stop()
    lines = [json.loads(line) for line in server.log_lines()]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    syncs = [line for line in lines if line["logger"] == "mxjob.sync"]
    assert [(ln.get("namespace"), ln.get("job"), ln["outcome"]) for ln in syncs] == [
        ("default", "logged", "ok"),
        (None, None, "bad_request"),
    ]
    assert not [line for line in lines if "/healthz" in line["message"]]  # no access log
    assert any("Shutting down" in line["message"] for line in lines)


def test_a_bad_setting_fails_the_start_with_a_message() -> None:
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        with pytest.raises(RuntimeError, match="MXJOB_TLS_KEY_FILE"):
            start({"MXJOB_TLS_CERT_FILE": "/nonexistent"}, log)
        assert Path(log.name).read_text()
