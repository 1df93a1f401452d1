"""The answer handed to the connection in pieces, so that its bytes stay in the budget until the
client has them."""

from collections.abc import Callable
from typing import Any

import anyio
from fastapi.responses import Response
from starlette.types import Receive, Scope, Send

# An answer is handed to the connection in pieces of this size: the server's flow control
# makes each wait until the client took the previous one, so that the answer's bytes stay
# in the budget until the client has them (or the send deadline cut the connection).
PIECE = 1024 * 1024


class Pieces(Response):
    """An answer written in pieces of PIECE bytes; `done` runs once the last piece was
    handed to the connection (`done(True)`), or once the client is seen gone before that,
    during the computation or between two pieces (`done(False)`)."""

    def __init__(self, body: bytes, done: Callable[[bool], None]) -> None:
        super().__init__(body, media_type="application/json")
        self._done = done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        whole = False
        try:
            if await _client_gone(receive):
                return
            start = {"type": "http.response.start", "status": self.status_code}
            await send(start | {"headers": self.raw_headers})
            view = memoryview(self.body)
            for at in range(0, max(len(view), 1), PIECE):
                if await _client_gone(receive):
                    return
                more = at + PIECE < len(view)
                await send(
                    {"type": "http.response.body", "body": view[at : at + PIECE], "more_body": more}
                )
            whole = True
        finally:
            self._done(whole)


async def _client_gone(receive: Receive) -> bool:
    """Whether the client has disconnected, without waiting: a receive that would block is
    cancelled at once (the body is all read, so the only message left is the disconnect)."""
    message: dict[str, Any] = {}
    with anyio.CancelScope() as scope:
        scope.cancel()
        message = dict(await receive())
    return message.get("type") == "http.disconnect"
