"""The load: concurrent clients posting the mix and checking each answer, the service restarted
half-way, its memory sampled and its health probed meanwhile."""

import argparse
import asyncio
import contextlib
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from scripts.soak.corpus import Case
from scripts.soak.server import Server


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    retries: int = 0
    sent: int = 0


async def _post(
    client: httpx.AsyncClient, url: str, case: Case, tally: Tally, restarting: asyncio.Event
) -> None:
    """One sync, retried while the service restarts, then checked. Refused connections are
    retried, as Metacontroller requeues a failed sync; so is a kept-alive connection that
    the old process closed before reading the request, but only during the restart."""
    for attempt in range(200):
        started = time.perf_counter()
        try:
            reply = await client.post(f"{url}/sync", content=case.body)
        except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError) as err:
            if not (isinstance(err, httpx.ConnectError) or restarting.is_set()):
                tally.errors.append(f"{case.name}: {type(err).__name__}: {err}")
                return
            tally.retries += 1
            await asyncio.sleep(0.05 * min(attempt + 1, 10))
            continue
        except httpx.TransportError as err:
            tally.errors.append(f"{case.name}: {type(err).__name__}: {err}")
            return
        tally.latencies.setdefault(case.name, []).append(time.perf_counter() - started)
        if reply.status_code != 200:
            tally.errors.append(f"{case.name}: HTTP {reply.status_code}: {reply.text[:200]}")
        elif reply.content != case.expected:
            tally.errors.append(f"{case.name}: answer differs from the core's")
        return
    tally.errors.append(f"{case.name}: still refused after 200 tries")


async def _client(
    url: str,
    cases: list[Case],
    tally: Tally,
    until: tuple[float, list[int]],
    restarting: asyncio.Event,
    seed: int,
) -> None:
    stop_at, budget = until
    rng = random.Random(seed)
    weights = [c.weight for c in cases]
    limits = httpx.Limits(max_connections=1)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        while time.monotonic() < stop_at and budget[0] > 0:
            budget[0] -= 1
            tally.sent += 1
            await _post(client, url, rng.choices(cases, weights)[0], tally, restarting)


def warm(server: Server, cases: list[Case]) -> tuple[dict[str, bytes], float]:
    """Each case once, the largest last: their answers, and the server's RSS right after,
    a state that can be compared from one point of a run to another."""
    with httpx.Client(timeout=120) as client:
        answers = {c.name: client.post(f"{server.url}/sync", content=c.body).content for c in cases}
    return answers, server.rss_mib()


async def _sample(
    server: Server, series: list[tuple[float, str, float]], stop: asyncio.Event
) -> None:
    start = time.monotonic()
    while not stop.is_set():
        with contextlib.suppress(OSError):  # the process is being replaced
            series.append((time.monotonic() - start, str(server.pid), server.rss_mib()))
        await asyncio.sleep(2)  # a memory sample every 2 s: pacing, not waiting


async def _probe(url: str, seconds: list[float], stop: asyncio.Event) -> None:
    """/healthz once a second, as the kubelet would: how long a probe waits under load."""
    async with httpx.AsyncClient(timeout=10) as client:
        while not stop.is_set():
            started = time.perf_counter()
            with contextlib.suppress(httpx.TransportError):  # refused during the restart
                await client.get(f"{url}/healthz")
                seconds.append(time.perf_counter() - started)
            await asyncio.sleep(1)  # the kubelet's probe period


async def _restart_half_way(
    server: Server, cases: list[Case], at: float, notes: dict[str, Any], restarting: asyncio.Event
) -> None:
    await asyncio.sleep(max(at - time.monotonic(), 0))  # the restart is due half-way
    notes["answers_before"], notes["rss_end_1"] = await asyncio.to_thread(warm, server, cases)
    restarting.set()
    began = time.monotonic()
    notes["exit"] = await asyncio.to_thread(server.stop)
    await asyncio.to_thread(server.start)
    notes["restart_seconds"] = time.monotonic() - began
    # A second more in which a kept-alive connection to the old process may still fail and be
    # retried (`_post`); after it, such a failure is an error.
    await asyncio.sleep(1)
    restarting.clear()
    notes["answers_after"], notes["rss_base_2"] = await asyncio.to_thread(warm, server, cases)


async def soak(args: argparse.Namespace, server: Server, cases: list[Case]) -> dict[str, Any]:
    tally = Tally()
    notes: dict[str, Any] = {}
    series: list[tuple[float, str, float]] = []
    probes: list[float] = []
    start = time.monotonic()
    until = (start + args.duration, [args.max_requests])
    stop, restarting = asyncio.Event(), asyncio.Event()
    sampler = asyncio.create_task(_sample(server, series, stop))
    prober = asyncio.create_task(_probe(server.url, probes, stop))
    half_way = start + args.duration / 2
    restart = asyncio.create_task(_restart_half_way(server, cases, half_way, notes, restarting))
    clients = (
        _client(server.url, cases, tally, until, restarting, seed)
        for seed in range(args.concurrency)
    )
    await asyncio.gather(*clients)
    await restart
    notes["elapsed"] = time.monotonic() - start
    notes["answers_end"], notes["rss_end_2"] = await asyncio.to_thread(warm, server, cases)
    stop.set()
    await sampler
    await prober
    return {"tally": tally, "notes": notes, "series": series, "probes": probes}
