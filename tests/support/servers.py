"""The hook for the HTTP tests: the ASGI app in-process, and the real server on loopback."""

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import anyio.from_thread
import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from localcluster.ports import free_port
from localcluster.realstack import hook_command
from tests.support import REPO


@dataclass
class AsgiClient:
    """A blocking httpx client that calls the app in-process, on one event loop."""

    portal: anyio.from_thread.BlockingPortal
    client: httpx.AsyncClient

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.portal.call(partial(self.client.request, method, path, **kwargs))

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)


@contextmanager
def asgi_client(app: FastAPI) -> Iterator[AsgiClient]:
    with anyio.from_thread.start_blocking_portal() as portal:
        transport = httpx.ASGITransport(app=app)
        client = httpx.AsyncClient(transport=transport, base_url="http://hook")
        try:
            yield AsgiClient(portal, client)
        finally:
            portal.call(client.aclose)


@dataclass
class Server:
    """`python -m app serve` on a loopback port, its stderr (the JSON logs) in a file."""

    proc: subprocess.Popen[bytes]
    url: str
    log: IO[bytes]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise

    def log_lines(self) -> list[str]:
        self.log.flush()
        return Path(self.log.name).read_text().splitlines()

    def memory_kib(self, field: str = "VmRSS") -> int:
        """Resident memory now (VmRSS) or at its peak so far (VmHWM), from /proc."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
        raise LookupError(field)

    def metric(self, name: str, **labels: str) -> float:
        """One sample of /metrics (0 when it was never counted)."""
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and labels.items() <= sample.labels.items():
                    return sample.value
        return 0.0

    @property
    def address(self) -> tuple[str, int]:
        parts = urlsplit(self.url)
        assert parts.hostname is not None
        assert parts.port is not None
        return parts.hostname, parts.port

    def connect(self) -> socket.socket:
        return socket.create_connection(self.address, timeout=30)


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `condition` until it is truthy (returning its value) or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)
    return value


def closed_by_peer(sock: socket.socket, timeout: float) -> bool:
    """Whether the other end closes `sock` within `timeout` (reading and dropping anything
    it still sends)."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(1 << 20):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return False


def start(
    env: dict[str, str],
    log: IO[bytes],
    scheme: str = "http",
    verify: Any = True,
    prefix: Sequence[str] = (),
) -> Server:
    """`python -m app serve` with `env` added to the environment, once it answers /healthz;
    `prefix` runs it through another command (which execs it, e.g. setpriv)."""
    port = free_port()
    proc = subprocess.Popen(
        [*prefix, *hook_command(port)],
        cwd=REPO,
        env=os.environ | env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"{scheme}://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    with httpx.Client(timeout=1, verify=verify) as client:  # one TLS context for every try
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if client.get(f"{url}/healthz").status_code == 200:
                    return Server(proc, url, log)
            except httpx.TransportError:
                time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=10)
    raise RuntimeError(f"the hook did not start: {Path(log.name).read_text()[-2000:]}")


@contextmanager
def serving(
    env: dict[str, str], scheme: str = "http", verify: Any = True, prefix: Sequence[str] = ()
) -> Iterator[Server]:
    """The real hook for the block (`start`), its logs in a temporary file; stopped at the end
    unless the test stopped it."""
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        server = start(env, log, scheme, verify, prefix)
        try:
            yield server
        finally:
            if server.proc.poll() is None:
                server.stop()


@dataclass(frozen=True)
class Tls:
    ca: Path
    cert: Path
    key: Path


def self_signed(folder: Path) -> Tls:
    """A throwaway CA and a serving certificate for 127.0.0.1 and localhost, signed by it."""
    now = datetime.now(UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mxjob-test-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mxjob-controller")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    tls = Tls(folder / "ca.crt", folder / "tls.crt", folder / "tls.key")
    tls.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    tls.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    tls.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return tls


@contextmanager
def component(
    command: str, kubeconfig: Path, preexec_fn: Callable[[], None] | None = None
) -> Iterator[Server]:
    """`python -m app <command>` (ttl-controller, kueue-status) against `kubeconfig` on a free
    loopback port, once its /healthz answers 200; stopped at the block's end if it still runs."""
    port = free_port()
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", command, "--port", str(port)],
            cwd=REPO, env=os.environ | {"KUBECONFIG": str(kubeconfig)},
            stdout=subprocess.DEVNULL, stderr=log, preexec_fn=preexec_fn,
        )  # fmt: skip
        server = Server(proc, f"http://127.0.0.1:{port}", log)
        try:
            wait_for(lambda: healthy(server), 30, f"{command}'s /healthz 200")
            yield server
        finally:
            if proc.poll() is None:
                server.stop()


def healthy(server: Server) -> bool:
    """Whether the server's /healthz answers 200 (it must still run)."""
    assert server.proc.poll() is None, server.log_lines()[-5:]
    try:
        return httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False
