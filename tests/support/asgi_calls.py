"""In-process calls to the hook at the ASGI level, each client scripted step by step: bodies
that stall, pause or leave, answers taken late or in part, and the log of what happened."""

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson

from app.service import web
from app.service.settings import Settings
from tests.support import jobs as s

NEW_JOB = orjson.dumps(s.after_first(s.request(s.mxjob(s.train_spec()))))
# Small, but a job of more than intake.INLINE_REPLICAS replicas: answered in the worker thread.
THREADED = orjson.dumps(s.after_first(s.request(s.mxjob(s.train_spec(4, 20)))))


def hook_app(**settings: Any) -> Any:
    """The hook's ASGI app on the frozen clock, with these settings."""
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


def run_calls(app: Any, calls: list[tuple[float, Call]], timeout: float = 10) -> list[str]:
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


def run_with(
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
