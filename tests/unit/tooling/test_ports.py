"""The ports the local stacks hand their servers: never one an outgoing connection can take."""

import random
import socket

import pytest

from localcluster import ports


def test_ports_come_from_below_the_ephemeral_range_and_bind() -> None:
    top = ports.ephemeral_start()
    handed = ports.free_ports(50)
    assert len(set(handed)) == 50
    assert all(ports.LOWEST <= port < top for port in handed)
    with socket.socket() as server:
        server.bind(("127.0.0.1", handed[0]))  # a server can bind what it was handed


def test_a_port_in_use_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        picks = iter([busy, busy + 1 if busy + 1 < 65536 else busy - 1])
        monkeypatch.setattr(random, "randrange", lambda low, high: next(picks))
        monkeypatch.setattr(ports, "ephemeral_start", lambda: 65536)
        assert ports.free_port() != busy


def test_no_room_below_the_range_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "ephemeral_start", lambda: 1024)
    with pytest.raises(RuntimeError, match="ephemeral range starts at 1024"):
        ports.free_port()


@pytest.mark.parametrize("worker", range(3))
def test_each_xdist_worker_picks_from_a_share_of_its_own(
    monkeypatch: pytest.MonkeyPatch, worker: int
) -> None:
    monkeypatch.setattr(ports, "ephemeral_start", lambda: 31000)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    shares = []
    for n in range(3):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{n}")
        shares.append(range(*ports.span()))
    assert [(s.start, s.stop) for s in shares] == [(10000, 17000), (17000, 24000), (24000, 31000)]
    monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{worker}")
    assert all(port in shares[worker] for port in ports.free_ports(20))


def test_outside_xdist_the_whole_range_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    monkeypatch.setattr(ports, "ephemeral_start", lambda: 31000)
    assert ports.span() == (ports.LOWEST, 31000)
