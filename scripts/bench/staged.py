"""An experiment, not the product: the hook's first answer staged, measured on the real stack.

Metacontroller writes a parent's status only after it has applied every child of the sync, so a
big job shows no condition until its last child exists (docs/performance.md). `staged_hook`
runs a loopback proxy in front of the hook that changes one thing: when the job has no
condition yet (its first sync), it passes the hook's status on with no children at all, so
Metacontroller writes `Created` at once; its own status write brings the next sync, which the
proxy passes through untouched. `--staged` in scripts/bench/e2e.py measures it beside the
shipped setting. What a hook that did this itself would do differently: nothing measured here
but the extra HTTP hop.
"""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from localcluster.ports import free_port

JSON = {"Content-Type": "application/json"}


def first_sync(request: dict[str, Any]) -> bool:
    status = request.get("parent", {}).get("status") or {}
    return not status.get("conditions")


@contextmanager
def staged_hook(hook_url: str) -> Iterator[str]:
    """The proxy's base URL while it runs."""
    client = httpx.Client(base_url=hook_url, timeout=120, trust_env=False)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            sent = client.post(
                self.path, content=body, headers={"Content-Type": "application/json"}
            )
            answer = sent.content
            if sent.status_code == 200 and first_sync(json.loads(body)):
                staged = json.loads(answer) | {"children": [], "resyncAfterSeconds": 0.1}
                answer = json.dumps(staged).encode()
            self.send_response(sent.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        client.close()
