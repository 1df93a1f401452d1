"""A free TCP port on loopback."""

import socket


def free_port() -> int:
    """A port nothing listens on now (the OS's pick); whoever binds it next gets it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports (the OS may hand the same one out twice in a row)."""
    found: list[int] = []
    while len(found) < count:
        port = free_port()
        if port not in found:
            found.append(port)
    return found
