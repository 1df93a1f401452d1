"""The optional components' probe and metrics server (app/service/probes.py): each component
answers /healthz once it has listed and serves its /metrics; under a flood of idle connections,
5,000 of them to the TTL controller's probe port leave it answering /healthz within its probes'
timeout and within its memory limit, both read from its Deployment
(manifests/components/ttl-controller/deployment.yaml). docs/security.md has the figures; `-s`
prints them."""

import errno
import resource
import selectors
import socket
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support import REPO
from tests.support.empty_cluster import empty_cluster
from tests.support.servers import component

pytestmark = pytest.mark.slow

IDLE = 5_000
# How fast they are opened: 1,000 a second, in batches of 10.
RATE, BATCH = 1_000, 10
DEPLOYMENT = REPO / "manifests" / "components" / "ttl-controller" / "deployment.yaml"
# A container runtime may leave the soft limit on open files at 1,024 (containerd 2.x does):
# the controller runs under it here, as it may in a pod.
RUNTIME_OPEN_FILES = 1024
# Kubernetes' default timeoutSeconds of a probe that sets none.
PROBE_DEFAULT_TIMEOUT = 1


def container() -> dict[str, Any]:
    (found,) = yaml.safe_load(DEPLOYMENT.read_text())["spec"]["template"]["spec"]["containers"]
    return dict(found)


def probe_timeout(spec: dict[str, Any]) -> float:
    """The shortest timeout of the container's probes: the one a slow answer fails first."""
    probes = [spec[p] for p in ("livenessProbe", "readinessProbe") if p in spec]
    return min(float(p.get("timeoutSeconds", PROBE_DEFAULT_TIMEOUT)) for p in probes)


def memory_limit_kib(spec: dict[str, Any]) -> int:
    limit = spec["resources"]["limits"]["memory"]
    assert limit.endswith("Mi"), limit
    return int(limit[:-2]) * 1024


def at_runtime_limits() -> None:
    """In the child, before exec: the soft limit on open files a runtime may give."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (RUNTIME_OPEN_FILES, hard))


def enough_open_files(count: int) -> None:
    """Raise this process's soft limit so that it can hold `count` sockets and its own files."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 1024
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.fail(f"the hard limit on open files ({hard}) is under {wanted}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def open_idle(address: tuple[str, int], count: int, within: float, stack: ExitStack) -> int:
    """Open `count` connections that send nothing, RATE a second, as a client that wants each
    one held (a burst would only overflow the listener's backlog: the kernel drops what does
    not fit, and SYN cookies hide that from the client); return how many completed their
    handshake within `within` seconds."""
    selector = stack.enter_context(selectors.DefaultSelector())
    started = time.monotonic()
    for opened in range(count):
        if opened % BATCH == 0:
            time.sleep(max(0.0, started + opened / RATE - time.monotonic()))
        sock = stack.enter_context(socket.socket())
        sock.setblocking(False)
        assert sock.connect_ex(address) in (0, errno.EINPROGRESS)
        selector.register(sock, selectors.EVENT_WRITE)
    connected, deadline = 0, time.monotonic() + within
    while connected < count and (left := deadline - time.monotonic()) > 0:
        for key, _ in selector.select(left):
            selector.unregister(key.fileobj)
            connected += 1
    return connected


# Each component, and a series of its own /metrics has once it runs.
COMPONENTS = {
    "ttl-controller": "mxjob_ttl_pending_jobs",
    "kueue-status": "mxjob_kueue_status_writes",
}


@pytest.mark.parametrize(("command", "series"), COMPONENTS.items(), ids=COMPONENTS)
def test_each_component_serves_its_probe_and_metrics(
    tmp_path: Path, command: str, series: str
) -> None:
    with (
        empty_cluster(tmp_path / "kubeconfig") as kubeconfig,
        component(command, kubeconfig, at_runtime_limits) as c,
    ):
        metrics = httpx.get(f"{c.url}/metrics", timeout=5)
        assert metrics.status_code == 200
        assert f"# HELP {series}" in metrics.text
        assert httpx.get(f"{c.url}/other", timeout=5).status_code == 404


def test_idle_connections_leave_healthz_answered_in_time(tmp_path: Path) -> None:
    spec = container()
    timeout, limit = probe_timeout(spec), memory_limit_kib(spec)
    enough_open_files(IDLE)
    with (
        empty_cluster(tmp_path / "kubeconfig") as kubeconfig,
        component("ttl-controller", kubeconfig, at_runtime_limits) as controller,
        ExitStack() as idle,
    ):
        at_rest = controller.memory_kib()
        connected = open_idle(controller.address, IDLE, 30, idle)
        started = time.monotonic()
        try:
            status = httpx.get(f"{controller.url}/healthz", timeout=timeout).status_code
        except httpx.TimeoutException:
            status = 0
        answered = time.monotonic() - started
        peak = controller.memory_kib("VmHWM")
        print(f"\n{connected} of {IDLE} idle connections opened; /healthz {status} in "
              f"{answered * 1000:.1f} ms (timeout {timeout} s); RSS {at_rest // 1024} MiB at "
              f"rest, peak {peak // 1024} MiB (limit {limit // 1024} MiB)")  # fmt: skip
        assert status == 200
        assert answered < timeout
        assert peak < limit
        assert connected == IDLE
