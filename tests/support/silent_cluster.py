"""A stand-in for an API server that never answers: it takes each request and holds it until the
server stops, so that a command talking to it is caught mid-call (a Ctrl-C there, say). Not a
cluster: nothing is read, nothing is answered."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml


@dataclass(frozen=True)
class SilentCluster:
    kubeconfig: Path
    # Set once a request has come.
    asked: threading.Event


class Holder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    asked: threading.Event
    stopped: threading.Event

    def do_GET(self) -> None:
        self.asked.set()
        self.stopped.wait()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads the command's output, not this one's."""


@contextmanager
def silent_cluster(kubeconfig: Path) -> Iterator[SilentCluster]:
    """Serve on a loopback port until the block ends, with a kubeconfig (written to
    `kubeconfig`) that points at it."""
    asked, stopped = threading.Event(), threading.Event()
    handler = type("SilentCluster", (Holder,), {"asked": asked, "stopped": stopped})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="silent-cluster", daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "silent",
        "clusters": [{"name": "silent", "cluster": {"server": url}}],
        "users": [{"name": "silent", "user": {"token": "not-checked"}}],
        "contexts": [{"name": "silent", "context": {"cluster": "silent", "user": "silent"}}],
    }))  # fmt: skip
    try:
        yield SilentCluster(kubeconfig, asked)
    finally:
        stopped.set()
        server.shutdown()
        server.server_close()
