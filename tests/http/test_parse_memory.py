"""The real server against JSON that costs the most memory per byte once parsed, its memory read
from /proc: bodies under the body limit whose parse would take gigabytes are refused before
parsing, and the costliest bodies the parse budget admits stay within the memory they were
measured at. The figures printed (with `-s`) are in docs/security.md#memory."""

import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import orjson
import pytest

from app.core.validate import costs
from app.core.validate.costs import MiB
from tests.support import json_shapes
from tests.support.servers import Server, start

pytestmark = pytest.mark.slow

# The promise: the hook stays within 512 MiB of RSS, half the Deployment's 1 GiB limit, the
# costliest bodies the parse budget admits included (docs/security.md#memory).
LIMIT_MIB = 512


@contextmanager
def hook() -> Iterator[Server]:
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        server = start({}, log)
        try:
            yield server
        finally:
            if server.proc.poll() is None:
                server.stop()


def still_answers(server: Server) -> None:
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
    reply = httpx.post(f"{server.url}/sync", content=json_shapes.NEW_JOB, timeout=10)
    assert reply.status_code == 200
    assert reply.json()["children"]


def test_bodies_whose_parse_would_take_gigabytes_are_refused_before_parsing() -> None:
    """Each shape at 60 MiB, a body of tiny objects alone would parse to about 1.9 GiB: a 413
    naming the parse budget, with memory that of the body, and the hook answers on."""
    with hook() as server:
        for shape in json_shapes.SHAPES:
            body = json_shapes.of_size(shape, 60 * MiB)
            reply = httpx.post(f"{server.url}/sync", content=body, timeout=60)
            peak = server.memory_kib("VmHWM") // 1024
            print(f"\n{shape}: {len(body) / MiB:.1f} MiB, {reply.status_code}, peak RSS {peak} MiB")
            assert reply.status_code == 413, reply.text[:200]
            assert "parse budget" in reply.json()["detail"]
            assert peak <= LIMIT_MIB
            still_answers(server)


@pytest.mark.parametrize("shape", list(json_shapes.SHAPES))
def test_the_costliest_body_admitted_of_each_shape_is_answered_within_memory(shape: str) -> None:
    """The largest body of each shape within the parse budget, on a fresh hook: answered 200,
    with the hook's peak RSS within the promise."""
    body = json_shapes.most_admitted(shape)
    with hook() as server:
        reply = httpx.post(f"{server.url}/sync", content=body, timeout=60)
        peak = server.memory_kib("VmHWM") // 1024
        print(
            f"\n{shape}: {len(body) / MiB:.1f} MiB, estimate {costs.parse_cost(body) // MiB} MiB, "
            f"{reply.status_code}, peak RSS {peak} MiB"
        )
        assert reply.status_code == 200
        assert peak <= LIMIT_MIB
        still_answers(server)


def test_a_body_of_wide_characters_is_answered_within_the_promise() -> None:
    """Strings whose characters need 4 bytes each in Python cost 4 bytes per byte of body, not
    counted by the parse budget: a 60 MiB one stays within the promise."""
    body = json_shapes.request_with(b'"\xf0\x9f\x98\x80' + b"a" * (60 * MiB) + b'"')
    with hook() as server:
        reply = httpx.post(f"{server.url}/sync", content=body, timeout=60)
        peak = server.memory_kib("VmHWM") // 1024
        print(f"\nwide characters: {len(body) / MiB:.1f} MiB, peak RSS {peak} MiB")
        assert reply.status_code == 200
        assert peak <= LIMIT_MIB
        still_answers(server)


def test_counting_a_body_costs_a_fraction_of_parsing_it() -> None:
    """The count that guards the parse runs on every body over 1.8 MiB, before the parse: it
    takes a small part of what parsing the same body takes (both timed in this run, best of
    three, on 16 MiB of a costly shape; the figures printed are in docs/security.md#memory)."""
    body = json_shapes.of_size("distinct-keys-and-strings", 16 * MiB)
    counting = min(_seconds(lambda: costs.parse_cost(body)) for _ in range(3))
    parsing = min(_seconds(lambda: orjson.loads(body)) for _ in range(3))
    per_mib = 1000 / (len(body) / MiB)
    print(
        f"\n{len(body) / MiB:.0f} MiB: counted in {counting * per_mib:.2f} ms a MiB, "
        f"parsed in {parsing * per_mib:.1f} ms a MiB ({parsing / counting:.0f}x)"
    )
    assert counting * 4 < parsing


def _seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started
