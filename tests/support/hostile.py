"""The real hook against raw sockets: its requests (large running jobs, new jobs with large
answers), the hook started with a given environment or a core with a bug, and clients that
drip bytes or never read their answer."""

import os
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import orjson

from app.core.model import kinds
from tests.support import REPO
from tests.support import jobs as s
from tests.support.servers import Server, start

LIMIT_KIB = 512 * 1024  # the promise: the hook stays within 512 MiB of RSS
NEW_JOB = orjson.dumps(s.request(s.mxjob(s.train_spec())))


# The running jobs' requests below are of a CompositeController that declares no ConfigMap
# (a hook upgraded before its CompositeController): every pod's env then carries the whole
# cluster, and sizes grow with the square of the job, which makes large bodies cheap to build.


@cache
def running(workers: int, kind: str = "MXJob") -> bytes:
    """A running job's sync request: 7.8 MiB for 400 workers, 12 MiB for 500."""
    parent = s.mxjob(s.train_spec(1, workers))
    first = s.created(s.request(parent))
    phases = {p["metadata"]["name"]: s.pod_status("Running") for p in s.pods_of(first)}
    request = s.step(parent, first, phases)[0]
    request["parent"]["kind"] = kind
    return orjson.dumps(request)


@cache
def new_job(workers: int) -> bytes:
    """A new job's sync request: a few hundred bytes, but an answer of 21 MiB for 1000 (each
    pod carries its template's 20 KB variable; the size rule refuses a job that large whose
    every pod would carry the whole cluster)."""
    spec = s.train_spec(1, workers)
    for replica in spec["mxReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["env"] = [
            {"name": "BIG", "value": "x" * 20_000}
        ]
    return orjson.dumps(s.after_first(s.request(s.mxjob(spec), others={kinds.CONFIG_MAP_TYPE: []})))


@contextmanager
def hook(**env: str) -> Iterator[Server]:
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        server = start({"MXJOB_FROZEN_CLOCK": s.NOW.isoformat()} | env, log)
        try:
            yield server
        finally:
            if server.proc.poll() is None:
                server.stop()


# Loaded by the server's Python before anything else: the core raises, as a bug would, for
# a job named "crash".
CRASHING_CORE = """
import app.core.reconcile

_core = app.core.reconcile.sync_result


def _crashing(request, now, integrations):
    if request["parent"]["metadata"]["name"] == "crash":
        raise TypeError("unhashable type: 'list'")
    return _core(request, now, integrations)


app.core.reconcile.sync_result = _crashing
"""


@contextmanager
def crashing_hook(**env: str) -> Iterator[Server]:
    """The real server whose core has a bug for the job named "crash"."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "sitecustomize.py").write_text(CRASHING_CORE)
        with hook(PYTHONPATH=os.pathsep.join([folder, str(REPO)]), **env) as server:
            yield server


def renamed(request: bytes, name: str) -> bytes:
    parsed = orjson.loads(request)
    parsed["parent"]["metadata"]["name"] = name
    return orjson.dumps(parsed)


def head(length: int, path: str = "/sync") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: hook\r\nContent-Length: {length}\r\n\r\n".encode()


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def drip(sock: socket.socket, data: bytes, every: float, timeout: float) -> tuple[float, bytes]:
    """Send `data` a byte at a time, `every` seconds apart, until the server closes the
    connection: how long that took and what it answered."""
    started, answer = time.monotonic(), b""
    sock.settimeout(every)
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            break
        answer += chunk
        if not chunk:
            break
        if time.monotonic() - started > timeout:
            raise AssertionError("still open")
    return time.monotonic() - started, answer


def unread_answer(server: Server, request: bytes) -> socket.socket:
    """A client that sends `request` and never reads its answer (a tiny receive buffer, so
    that the answer stays on the server's side)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(server.address)
    sock.sendall(head(len(request)) + request)
    return sock
