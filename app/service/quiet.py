"""uvicorn's server loop, quieter: it wakes once a second, not ten times, and at once on a
signal."""

import asyncio
import contextlib
from types import FrameType

import uvicorn

# How often the idle server wakes: to renew its Date header. A shutdown signal wakes it at once.
TICK_SECONDS = 1.0


class QuietServer(uvicorn.Server):
    """uvicorn's server, waking once a second instead of ten times: its answers' Date header
    is renewed once a second either way, and an idle hook costs next to no CPU. A signal (or
    `stop()`) wakes it at once, so that it does not stop up to a second late."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._wake: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    async def main_loop(self) -> None:
        woken = asyncio.Event()
        self._wake = (asyncio.get_running_loop(), woken)
        # on_tick(0) renews the Date header and says whether to stop (a signal, as uvicorn's).
        while not await self.on_tick(0):
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK_SECONDS):
                    await woken.wait()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._wake_up()

    def stop(self) -> None:
        """Stop serving, from any thread, as a signal does."""
        self.should_exit = True
        self._wake_up()

    def _wake_up(self) -> None:
        # From a signal handler or another thread: as asyncio's own signal handling does.
        if self._wake is not None:
            loop, woken = self._wake
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(woken.set)
