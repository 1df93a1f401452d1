"""`python -m app ttl-controller`: the watch and its timers on an event loop, and /metrics and
/healthz served beside them."""

import asyncio
import logging.config
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lightkube import AsyncClient, ConfigError, KubeConfig
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.controllers.ttl.deleter import REGISTRY, Deleter
from app.controllers.ttl.watch import watch_jobs
from app.service import jsonlog

log = logging.getLogger("mxjob.ttl")


class Probe(BaseHTTPRequestHandler):
    """/metrics always; /healthz 200 once the first list of MXJobs has succeeded, else 503."""

    listed = threading.Event()

    def do_GET(self) -> None:
        if self.path == "/metrics":
            self._answer(200, CONTENT_TYPE_LATEST, generate_latest(REGISTRY))
        elif self.path == "/healthz":
            ok = self.listed.is_set()
            self._answer(200 if ok else 503, "text/plain", b"ok\n" if ok else b"not listed yet\n")
        else:
            self._answer(404, "text/plain", b"not found\n")

    def _answer(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Probes and scrapes are not logged: they come every few seconds."""


def run(host: str, port: int, log_level: str = "INFO") -> int:
    """Serve the probes on `host`:`port` and delete expired jobs until SIGTERM or SIGINT;
    2 at once if there are no credentials for the cluster (in-cluster, or KUBECONFIG)."""
    logging.config.dictConfig(jsonlog.config(log_level))
    try:
        config = KubeConfig.from_env()
    except ConfigError as error:
        log.error(f"no cluster to talk to: {error}")
        return 2
    probes = ThreadingHTTPServer((host, port), Probe)
    threading.Thread(target=probes.serve_forever, name="probes", daemon=True).start()
    log.info("TTL controller started", extra={"port": probes.server_address[1]})
    try:
        asyncio.run(_controller(config))
    finally:
        probes.shutdown()
        log.info("TTL controller stopped")
    return 0


async def _controller(config: KubeConfig) -> None:
    loop = asyncio.get_running_loop()
    async with AsyncClient(config=config) as client:
        deleter = Deleter(client)
        watching = asyncio.create_task(watch_jobs(client, deleter, Probe.listed.set))
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, watching.cancel)
        try:
            await watching
        except asyncio.CancelledError:
            pass
        finally:
            await deleter.drain()
