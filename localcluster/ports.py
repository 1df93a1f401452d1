"""A free TCP port on loopback, from below the kernel's ephemeral range.

The ports the OS picks for a listener on port 0 come from the same range as the source ports of
outgoing connections, so a port picked that way, closed and handed to a server to bind later,
can be taken in between by any client's connection (on a busy machine it is: a kube-apiserver
once failed to bind one). A port below that range is never picked by a connection.

Under pytest-xdist each worker hands out ports from its own slice of that range (`share`), so
two workers never hand out the same port."""

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


def share(low: int, high: int) -> tuple[int, int]:
    """This process's slice of the ports from `low` to `high - 1`: the whole of them, or, in
    pytest-xdist's worker gwN of M (PYTEST_XDIST_WORKER, PYTEST_XDIST_WORKER_COUNT), the N-th of
    M equal slices."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (worker.isdigit() and count.isdigit() and int(count) > 1):
        return low, high
    index, width = int(worker) % int(count), (high - low) // int(count)
    return low + index * width, low + (index + 1) * width


def bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port nothing listens on now, outside the ephemeral range, not handed out before by
    this process (nor by another xdist worker); whoever binds it next gets it."""
    top = ephemeral_start()
    if top <= LOWEST + TRIES:
        raise RuntimeError(f"the ephemeral range starts at {top}: no room below it for servers")
    low, high = share(LOWEST, top)
    for _ in range(TRIES):
        port = random.randrange(low, high)
        if port not in _handed and bindable(port):
            _handed.add(port)
            return port
    raise RuntimeError(f"no free port in {low}-{high - 1} after {TRIES} tries")


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports."""
    return [free_port() for _ in range(count)]
