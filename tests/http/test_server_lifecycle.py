"""The real server: SIGTERM finishes the sync in flight, 413 before the body arrives, every
line on stderr is one JSON object and none holds a token, a header or a body, and a missing
HTTP package stops the start."""

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from localcluster.ports import free_port
from localcluster.realstack import hook_command
from tests.support import REPO
from tests.support import jobs as s
from tests.support.hooked import sync
from tests.support.servers import Server, serving, start

CLOCK = {"MXJOB_FROZEN_CLOCK": s.NOW.isoformat()}


def _running_request(workers: int) -> bytes:
    parent = s.mxjob(s.train_spec(2, workers))
    first = s.created(s.request(parent))
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
        # The server is shutting down once it takes no new connection; how soon it sees the
        # signal depends on the machine's load, so ask until it refuses (or 20 s pass).
        deadline = time.monotonic() + 20
        while not refused_meanwhile and time.monotonic() < deadline:
            try:
                httpx.get(f"{server.url}/healthz", timeout=2)
                time.sleep(0.1)
            except httpx.TransportError:
                refused_meanwhile = True
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
        with pytest.raises(RuntimeError, match="MXJOB_TLS_CERT_FILE='/nonexistent'"):
            start({"MXJOB_TLS_CERT_FILE": "/nonexistent"}, log)
        assert Path(log.name).read_text()


# Loaded by the server's Python before anything else: the package named here cannot be
# imported, as when it is not installed.
BLOCK_IMPORT = """
import sys


class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == {package!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Missing())
"""


@pytest.mark.parametrize("package", ["httptools", "uvloop"])
def test_serve_stops_at_once_naming_a_missing_http_package(package: str, tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(BLOCK_IMPORT.format(package=package))
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    done = subprocess.run(
        hook_command(free_port()), cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ")
    assert f"{package} is missing" in last
    assert "pip install -r requirements.txt" in last


# Strings that must not appear anywhere in the logs.
SECRET_TOKEN = "tok-7d1c9e5a-never-logged"
HEADER_MARK = "header-3f0b-never-logged"
BODY_MARK = "body-a94e-never-logged"


def test_tokens_headers_and_bodies_are_never_logged() -> None:
    """Syncs answered 200, 401, 422 (not a sync request; not JSON) and 413, each carrying a
    marker in its token, in a header and in its body, with the log level at DEBUG: no
    marker in any line on stderr."""
    env = CLOCK | {"MXJOB_AUTH_TOKEN": SECRET_TOKEN, "MXJOB_LOG_LEVEL": "DEBUG"}
    env |= {"MXJOB_MAX_BODY_BYTES": str(1024 * 1024)}
    parent = s.mxjob(s.train_spec(), name="marked")
    parent["metadata"]["annotations"] = {"note": BODY_MARK}
    parent["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "MARK", "value": BODY_MARK}
    ]
    good = orjson.dumps(s.after_first(s.request(parent)))
    other_kind = orjson.dumps(s.request(parent | {"kind": "TFJob"}))
    not_json = f'{{"parent": "{BODY_MARK}'.encode()
    too_large = b'{"padding": "' + BODY_MARK.encode() * 100_000 + b'"}'
    headers = {"Authorization": f"Bearer {SECRET_TOKEN}", "X-Mark": HEADER_MARK}
    wrong = headers | {"Authorization": f"Bearer {SECRET_TOKEN}x"}
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        server = start(env, log)
        try:
            answers = [
                httpx.post(f"{server.url}/sync", content=body, headers=sent, timeout=10)
                for body, sent in [
                    (good, headers),
                    (good, wrong),
                    (other_kind, headers),
                    (not_json, headers),
                    (too_large, headers),
                ]
            ]
            assert [answer.status_code for answer in answers] == [200, 401, 422, 422, 413]
            assert BODY_MARK in answers[0].text  # the marker did reach the hook
        finally:
            server.stop()
        text = Path(log.name).read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    outcomes = [line["outcome"] for line in lines if "outcome" in line]
    assert outcomes == ["ok", "unauthorized", "bad_request", "bad_request", "too_large"]
    for mark in (SECRET_TOKEN, HEADER_MARK, BODY_MARK):
        assert mark not in text


def test_a_port_in_use_is_one_line_and_exit_2_before_the_app_starts() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            hook_command(port), cwd=REPO, capture_output=True, text=True, timeout=60
        )
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"python -m app serve: cannot listen on 127.0.0.1:{port}: "
        "the address is in use by another process (choose another --port)\n",
    )


def test_a_misspelt_setting_is_warned_about_and_the_hook_starts() -> None:
    with serving(CLOCK | {"MXJOB_MAX_BODY_BYTE": "512"}) as server:
        # Not taken: the default limit stands, and a body over 512 bytes is answered.
        body = orjson.dumps(s.request(s.mxjob(s.train_spec(), name="misspelt")))
        assert len(body) > 512
        assert httpx.post(f"{server.url}/sync", content=body, timeout=10).status_code == 200
        server.stop()
        lines = [json.loads(line) for line in server.log_lines()]
    warned = [(line["level"], line["message"]) for line in lines if "MXJOB_" in line["message"]]
    assert warned == [
        (
            "warning",
            "MXJOB_MAX_BODY_BYTE is not a setting and is ignored; "
            "did you mean MXJOB_MAX_BODY_BYTES?",
        )
    ]
