"""A free TCP port on loopback, from below the kernel's ephemeral range.

The ports the OS picks for a listener on port 0 come from the same range as the source ports of
outgoing connections, so a port picked that way, closed and handed to a server to bind later,
can be taken in between by any client's connection (on a busy machine it is: a kube-apiserver
once failed to bind one). A port below that range is never picked by a connection. Under
pytest-xdist each worker picks from a share of that range of its own, so that two workers never
hand out the same port."""

import os
import random
import socket
from pathlib import Path

RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10000  # below: well-known and registered ports that services on the machine may use
TRIES = 1000

_handed: set[int] = set()  # this process never hands out the same port twice


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (Linux's default is 32768)."""
    try:
        return int(RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def span() -> tuple[int, int]:
    """The ports this process picks from, `low` to `high - 1`: those below the ephemeral range,
    or under pytest-xdist the worker's share of them (worker gwN of M takes the N-th of M)."""
    top = ephemeral_start()
    if top <= LOWEST + TRIES:
        raise RuntimeError(f"the ephemeral range starts at {top}: no room below it for servers")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or workers < 2:
        return LOWEST, top
    share = (top - LOWEST) // workers
    low = LOWEST + int(worker.removeprefix("gw")) % workers * share
    return low, low + share


def free_port() -> int:
    """A port nothing listens on now, outside the ephemeral range, not handed out before by
    this process (nor by another pytest-xdist worker); whoever binds it next gets it."""
    low, high = span()
    for _ in range(TRIES):
        port = random.randrange(low, high)
        if port not in _handed and bindable(port):
            _handed.add(port)
            return port
    raise RuntimeError(f"no free port in {low}-{high - 1} after {TRIES} tries")


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports."""
    return [free_port() for _ in range(count)]
