"""Whether the hook can listen where it is told to, found out before it starts: uvicorn learns it
only after the app's startup, and says so among its logs."""

import errno
import socket

from app.service.errors import CannotListen


def check(host: str, port: int) -> None:
    """Bind each address of `host`:`port` as uvicorn will (address reuse on, IPv6 apart from
    IPv4, as asyncio does), and let it go again; CannotListen saying why if one cannot be bound."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        found = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as err:
        raise CannotListen(f"cannot listen on {where}: {err.strerror} (--host)") from None
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as err:
                raise CannotListen(f"cannot listen on {where}: {_why(err)}") from None


def _why(err: OSError) -> str:
    if err.errno == errno.EADDRINUSE:
        return "the address is in use by another process (choose another --port)"
    if err.errno == errno.EADDRNOTAVAIL:
        return "not an address of this machine (--host)"
    if err.errno == errno.EACCES:
        return "permission denied (a port below 1024 needs privileges)"
    return str(err.strerror)
