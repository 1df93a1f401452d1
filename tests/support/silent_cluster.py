"""A stand-in for an API server that never answers: it takes each request and holds it until the
server stops, so that a command talking to it is caught mid-call (a Ctrl-C there, say). Not a
cluster: nothing is read, nothing is answered."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tests.support.empty_cluster import loopback_cluster


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
    asked = threading.Event()
    with loopback_cluster("silent", Holder, kubeconfig, asked=asked):
        yield SilentCluster(kubeconfig, asked)
