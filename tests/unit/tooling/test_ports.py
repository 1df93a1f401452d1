"""The ports the local stacks hand their servers: never one an outgoing connection can take."""

import itertools
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
        # The busy port first; then random picks, as free_port makes them (a scripted second
        # pick could be in use too, by another test's server, or handed out before).
        first, pick = iter([busy]), random.randrange
        monkeypatch.setattr(
            random, "randrange", lambda low, high: next(first, None) or pick(low, high)
        )
        monkeypatch.setattr(ports, "ephemeral_start", lambda: 65536)
        assert ports.free_port() != busy
        assert next(first, None) is None  # the busy port was tried, and refused


def test_no_room_below_the_range_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "ephemeral_start", lambda: 1024)
    with pytest.raises(RuntimeError, match="ephemeral range starts at 1024"):
        ports.free_port()


def test_each_xdist_worker_hands_out_ports_from_its_own_slice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    top = ports.ephemeral_start()
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    slices = []
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        low, high = ports.share(ports.LOWEST, top)
        assert all(low <= port < high for port in ports.free_ports(20))
        slices.append(range(low, high))
    assert slices[0].start == ports.LOWEST
    assert slices[-1].stop <= top
    assert all(a.stop <= b.start for a, b in itertools.pairwise(slices))  # disjoint
    assert all(len(s) >= (top - ports.LOWEST) // 3 for s in slices)


def test_outside_xdist_or_with_one_worker_the_whole_range_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert ports.share(10000, 32768) == (10000, 32768)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "1")
    assert ports.share(10000, 32768) == (10000, 32768)
