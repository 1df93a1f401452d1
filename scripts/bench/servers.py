"""The servers the hook's benchmark compares: the hook and an echo, one uvicorn process each on
exactly the same settings; `STACKS` names the HTTP parser and event loop they run on."""

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

from tests import support as s

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
# uvicorn's HTTP parser and event loop per stack. `h11` is what the hook runs on as shipped
# (requirements.txt has neither C extension, so uvicorn's "auto" picks these); `standard` is
# what `uvicorn[standard]` would add. Its packages live outside the venv (`make bench` installs
# requirements-bench-standard.txt into STANDARD_LIB), so that installing them changes nothing
# for `make run` and the tests, whose uvicorn would pick them up on "auto".
STACKS = {"h11": ("h11", "asyncio"), "standard": ("httptools", "uvloop")}
STANDARD_LIB = ROOT / ".cache" / "uvicorn-standard"


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


def serve(kind: str, port: int, responses_dir: str | None, stack: str = "h11") -> None:
    """One server process; both kinds run on exactly the same uvicorn settings."""
    import uvicorn

    if kind == "hook":
        from app.web import app
    else:
        found = Path(responses_dir or ".").glob("*.response")
        app = _echo_app({int(p.stem): p.read_bytes() for p in found})
    http: Any
    http, loop = STACKS[stack]
    options: dict[str, Any] = {"access_log": False}
    if stack == "h11":
        # As shipped: the hook's own h11 protocol with its deadlines and limits (app/server.py).
        from app import server, settings

        options = server.options(settings.from_env())
        http = options.pop("http")
    uvicorn.run(app, host=HOST, port=port, log_level="warning", http=http, loop=loop, **options)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    kind: str
    port: int
    process: subprocess.Popen[bytes]
    stack: str = "h11"

    @property
    def name(self) -> str:
        """`hook`, `echo`; `hook standard`, `echo standard` on the other stack."""
        return self.kind if self.stack == "h11" else f"{self.kind} {self.stack}"

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")


@contextmanager
def running(kind: str, responses_dir: str, stack: str = "h11") -> Iterator[Server]:
    """A server process of this kind; its log goes to a file, shown if it fails to start."""
    port = _free_port()
    env = os.environ | {"MXJOB_FROZEN_CLOCK": s.NOW.isoformat()}
    if stack == "standard":
        if not STANDARD_LIB.is_dir():
            raise RuntimeError(f"no {STANDARD_LIB}: `make bench` installs it")
        env["PYTHONPATH"] = os.pathsep.join([str(STANDARD_LIB), env.get("PYTHONPATH", "")])
    argv = [sys.executable, "-m", "scripts.bench", "serve", kind, "--port", str(port)]
    argv += ["--stack", stack]
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
