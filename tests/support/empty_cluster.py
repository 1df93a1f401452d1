"""A stand-in for the API server for the components' own process tests: a cluster with no object
of any kind. Every list (a GET) answers an empty list, every watch stays open with no event until
the server stops. Not a cluster: no discovery, nothing stored, nothing authenticated, any path
answered as a list."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml

EMPTY = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": []}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stopped: threading.Event

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if parse_qs(urlsplit(self.path).query).get("watch") == ["true"]:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            self.stopped.wait()
            return
        body = json.dumps(EMPTY).encode()
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads the component's log, not this one's."""


@contextmanager
def empty_cluster(kubeconfig: Path) -> Iterator[Path]:
    """Serve on a loopback port until the block ends; yield a kubeconfig (written to
    `kubeconfig`) that points at it."""
    stopped = threading.Event()
    handler = type("EmptyCluster", (Handler,), {"stopped": stopped})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="empty-cluster", daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "empty",
        "clusters": [{"name": "empty", "cluster": {"server": url}}],
        "users": [{"name": "empty", "user": {"token": "not-checked"}}],
        "contexts": [{"name": "empty", "context": {"cluster": "empty", "user": "empty"}}],
    }))  # fmt: skip
    try:
        yield kubeconfig
    finally:
        stopped.set()
        server.shutdown()
        server.server_close()
