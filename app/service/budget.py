"""The byte budget: how many bytes of request bodies and answers the hook holds at once."""

import anyio


class ByteBudget:
    """Bytes reserved by requests in flight, from before their body is read until their answer
    is handed on: `try_take` fits now, `take` waits, `force` overdraws for an answer that exists,
    so at most one answer is ever beyond it (docs/reliability.md#deadlines-and-budgets)."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.used = capacity, 0
        self._freed: anyio.Event | None = None

    def try_take(self, size: int) -> bool:
        if self.used + size > self.capacity:
            return False
        self.used += size
        return True

    async def take(self, size: int) -> None:
        while not self.try_take(size):
            await self._released()

    def force(self, size: int) -> None:
        self.used += size

    async def until_room(self) -> None:
        while self.used > self.capacity:
            await self._released()

    def release(self, size: int) -> None:
        self.used -= size
        if self._freed is not None:
            self._freed.set()
            self._freed = None

    async def _released(self) -> None:
        # Made on first use: an anyio Event belongs to the running event loop.
        if self._freed is None:
            self._freed = anyio.Event()
        await self._freed.wait()
