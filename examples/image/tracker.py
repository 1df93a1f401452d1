"""The TunerTracker of tune.py: a board of trials, servers and results, served over HTTP."""

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# How long one request waits for news before answering; the caller then asks again.
POLL_SECONDS = 10.0

Json = dict[str, Any]


@dataclass
class Board:
    """The tracker's state, shared by its request threads: trials, servers, results."""

    waiting: list[Json] = field(default_factory=list)
    results: list[Json] = field(default_factory=list)
    servers: dict[str, str] = field(default_factory=dict)
    told: set[str] = field(default_factory=set)
    submitted: int = 0
    stopping: bool = False
    stopped: bool = False
    changed: threading.Condition = field(default_factory=threading.Condition)

    def register(self, server: str, key: str) -> Json:
        with self.changed:
            self.servers[server] = key
            return {"servers": self.servers}

    def submit(self, trials: list[Json]) -> Json:
        with self.changed:
            for trial in trials:
                self.waiting.append({**trial, "id": self.submitted})
                self.submitted += 1
            self.changed.notify_all()
            return {"submitted": self.submitted}

    def next_trial(self, server: str, timeout: float) -> Json:
        """A trial for the server's key, `stop` once the Tuner is done, or nothing yet."""
        with self.changed:
            key = self.servers.get(server)
            if key is None:
                raise ValueError(f"{server} has not registered")
            if not self.changed.wait_for(lambda: self.stopping or self.waiting_for(key), timeout):
                return {}
            if self.stopping:
                self.told.add(server)
                self.changed.notify_all()
                return {"stop": True}
            trial = self.waiting_for(key)[0]
            self.waiting.remove(trial)
            return {"trial": trial}

    def waiting_for(self, key: str) -> list[Json]:
        return [t for t in self.waiting if t["key"] == key]

    def report(self, result: Json) -> Json:
        with self.changed:
            self.results.append(result)
            self.changed.notify_all()
            return {"results": len(self.results)}

    def wait_results(self, timeout: float) -> Json:
        """Every result once all submitted trials have one, or what there is after `timeout`."""
        with self.changed:
            self.changed.wait_for(lambda: len(self.results) == self.submitted, timeout)
            pending = self.submitted - len(self.results)
            return {"results": self.results, "pending": pending, "servers": self.servers}

    def stop(self, timeout: float) -> Json:
        """Tell every registered server to stop at its next request, waiting until all are."""
        with self.changed:
            self.stopping = True
            self.changed.notify_all()
            self.changed.wait_for(lambda: self.told >= set(self.servers), timeout)
            self.stopped = True
            self.changed.notify_all()
            return {"told": sorted(self.told), "servers": sorted(self.servers)}


ROUTES: dict[str, Callable[[Board, Json], Json]] = {
    "/register": lambda board, body: board.register(body["server"], body["key"]),
    "/trials": lambda board, body: board.submit(body["trials"]),
    "/next": lambda board, body: board.next_trial(body["server"], POLL_SECONDS),
    "/result": lambda board, body: board.report(body),
    "/results": lambda board, body: board.wait_results(POLL_SECONDS),
    "/stop": lambda board, body: board.stop(POLL_SECONDS),
}


def handler(board: Board) -> type[BaseHTTPRequestHandler]:
    """The tracker's HTTP face: POST a JSON body to a route, get the board's JSON answer."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            route = ROUTES.get(self.path)
            try:
                if route is None:
                    raise ValueError(f"no route {self.path}: {sorted(ROUTES)}")
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                self.reply(200, route(board, body))
            except (ValueError, KeyError, TypeError) as error:
                self.reply(400, {"error": str(error)})

        def reply(self, code: int, answer: Json) -> None:
            data = json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: servers ask every POLL_SECONDS; the roles print what happens."""

    return Handler


def serve(port: int, timeout: float) -> Board:
    """Serve a board on `port` until a Tuner has stopped it, or `timeout` seconds."""
    board = Board()
    server = ThreadingHTTPServer(("", port), handler(board))
    # Closing joins the request threads, so the Tuner's `stop` gets its answer.
    server.daemon_threads = False
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with board.changed:
        board.changed.wait_for(lambda: board.stopped, timeout)
    server.shutdown()
    server.server_close()
    return board
