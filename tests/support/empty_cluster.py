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
    with loopback_cluster("empty", Handler, kubeconfig):
        yield kubeconfig


@contextmanager
def loopback_cluster(
    name: str, handler: type[BaseHTTPRequestHandler], kubeconfig: Path, **attributes: object
) -> Iterator[None]:
    """Serve `handler` (a subclass of it, with `attributes` and a `stopped` Event set when the
    block ends) on a loopback port until the block ends, with a kubeconfig written to
    `kubeconfig` that points at it as cluster, user and context `name`."""
    stopped = threading.Event()
    served = type(f"{name.title()}Cluster", (handler,), {"stopped": stopped, **attributes})
    server = ThreadingHTTPServer(("127.0.0.1", 0), served)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name=f"{name}-cluster", daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {"token": "not-checked"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }))  # fmt: skip
    try:
        yield
    finally:
        stopped.set()
        server.shutdown()
        server.server_close()
