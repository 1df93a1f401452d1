"""The servers the hook's benchmark compares: the hook and an echo, one uvicorn process each on
exactly the hook's settings; `STACKS` names the HTTP stacks they can run on."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.ports import free_port
from tests.support import jobs as s

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
# The HTTP stacks both servers can run on, by MXJOB_HTTP (app/service/server.py): the first is the
# shipped one (httptools on uvloop), the other the pure-Python h11 on asyncio that earlier
# versions shipped; both with the hook's deadlines and limits.
STACKS = ("httptools", "h11")
SHIPPED = STACKS[0]


def _echo_app(responses: dict[int, bytes]) -> Any:
    from fastapi import FastAPI, Request
    from fastapi.responses import PlainTextResponse, Response

    echo = FastAPI()

    @echo.post("/sync")
    async def answer_precomputed(request: Request) -> Response:
        body = await request.body()
        return Response(responses.get(len(body), b"{}"), media_type="application/json")

    @echo.get("/healthz")
    async def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    return echo


def serve(kind: str, port: int, responses_dir: str | None) -> None:
    """One server process; both kinds run on exactly the hook's uvicorn settings, on the
    stack MXJOB_HTTP names."""
    import uvicorn

    from app.service import server, settings

    config = settings.from_env()
    if kind == "hook":
        from app.service.web import create_app

        app = create_app(config)
    else:
        found = Path(responses_dir or ".").glob("*.response")
        app = _echo_app({int(p.stem): p.read_bytes() for p in found})
    options = server.options(config)
    server.settle_memory()
    uvicorn.run(app, host=HOST, port=port, log_level="warning", **options)


@dataclass
class Server:
    kind: str
    port: int
    process: subprocess.Popen[bytes]
    stack: str = SHIPPED

    @property
    def name(self) -> str:
        """`hook`, `echo`; `hook h11`, `echo h11` on the other stack."""
        return self.kind if self.stack == SHIPPED else f"{self.kind} {self.stack}"

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")


@contextmanager
def running(kind: str, responses_dir: str, stack: str = SHIPPED) -> Iterator[Server]:
    """A server process of this kind; its log goes to a file, shown if it fails to start."""
    port = free_port()
    env = os.environ | {"MXJOB_FROZEN_CLOCK": s.NOW.isoformat(), "MXJOB_HTTP": stack}
    argv = [sys.executable, "-m", "scripts.bench", "serve", kind, "--port", str(port)]
    log = Path(responses_dir) / f"{kind}-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*argv, "--responses", responses_dir], cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        _wait_ready(port, process)
        yield Server(kind, port, process, stack)
    except RuntimeError:
        sys.stderr.write(log.read_text())
        raise
    finally:
        process.terminate()
        process.wait(timeout=30)


def _wait_ready(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start in 30 s")
