"""Soak the sync hook on loopback: `make soak` (or `python -m scripts.soak`).

Starts `python -m app serve` on 127.0.0.1 with a frozen clock, holds a fixed number of
concurrent clients sending a weighted mix of sync requests (built with tests/support/jobs.py and
the benchmark's workloads, from a 1-worker job to a 1/100/1000 one as Metacontroller sends it
with the job's ConfigMap), checks every answer
byte for byte against the core's own answer, restarts the service half-way (SIGTERM, then a
new process on the same port: requests in flight must finish, clients retry refused
connections as Metacontroller would), and reports errors, latency percentiles and the
server's resident memory (from /proc). Bounded in time and in count; exits non-zero on any
error. Prints a Markdown report for docs/reliability.md.
"""

import argparse
import asyncio
import contextlib
import copy
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import orjson

from app.core.model.kinds import CONFIG_MAP_TYPE
from app.core.observe.applied import LAST_APPLIED
from localcluster.ports import free_port
from localcluster.realstack import hook_command
from scripts.bench.workloads import SIZES, running_job_request
from tests.support import jobs as s
from tests.support.hooked import sync

ROOT = Path(__file__).parent.parent
HOST = "127.0.0.1"  # loopback only, by design: there is no option to point this elsewhere
MAX_SECONDS = 900
ERROR_LINE = '"level":"error"'


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    expected: bytes
    weight: int


def _observed(child: dict[str, Any], **status: Any) -> dict[str, Any]:
    """A child as Metacontroller sends it back: with its status and the last-applied copy."""
    out = s.observed(child, **status)
    out["metadata"].setdefault("annotations", {})[LAST_APPLIED] = orjson.dumps(child).decode()
    return out


def _new(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """A new job's first sync: no children yet, the ConfigMap type declared (as shipped)."""
    return s.request(s.mxjob(spec, name=name), others={CONFIG_MAP_TYPE: []})


def _running(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """A job of any spec once every child exists, its ConfigMap with them; the sized jobs
    come from the benchmark's builder (`running_job_request`), with the API server's
    metadata and defaults."""
    parent = s.mxjob(spec, name=name)
    first = s.created(_new(spec, name))
    pods = [_observed(p, **s.pod_status("Running")) for p in s.pods_of(first)]
    services = [_observed(x) for x in s.services_of(first)]
    maps = [_observed(c) for c in first["children"] if c["kind"] == "ConfigMap"]
    return s.request(parent | {"status": first["status"]}, pods, services, {CONFIG_MAP_TYPE: maps})


def _restarting() -> dict[str, Any]:
    request = _running(s.train_spec(2, 4, "ExitCode"), "restarting")
    pod = request["children"]["Pod.v1"]["default/restarting-worker-1"]
    pod["status"] = s.pod_status("Failed", exit_code=137)
    return request


def corpus() -> list[Case]:
    """The request mix as Metacontroller sends it with the shipped CompositeController (the
    job's ConfigMap among the children): mostly small jobs, some mid-size, a rare
    1/100/1000 one."""
    small, typical, large = (size for size in SIZES if size.named)
    requests = {
        "new 2s+2w": (_new(s.train_spec(), "fresh"), 30),
        "running 1 worker": (_running({"mxReplicaSpecs": {"Worker": s.replica()}}, "solo"), 30),
        f"running {small.label}": (running_job_request(small), 30),
        "restarting (ExitCode 137)": (_restarting(), 10),
        "invalid spec": (_new({"mxReplicaSpecs": {}}, "broken"), 5),
        f"running {typical.label}": (running_job_request(typical), 4),
        f"running {large.label}": (running_job_request(large), 1),
    }
    cases = []
    for name, (request, weight) in requests.items():
        body = orjson.dumps(request)
        expected = orjson.dumps(sync(copy.deepcopy(request), s.NOW))
        cases.append(Case(name, body, expected, weight))
    return cases


@dataclass
class Server:
    port: int
    log: IO[bytes]
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        env = os.environ | {"MXJOB_FROZEN_CLOCK": s.NOW.isoformat()}
        self.proc = subprocess.Popen(
            hook_command(self.port, HOST),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("the hook did not start within 30 s")

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")


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


def _warm(server: Server, cases: list[Case]) -> tuple[dict[str, bytes], float]:
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
    notes["answers_before"], notes["rss_end_1"] = await asyncio.to_thread(_warm, server, cases)
    restarting.set()
    began = time.monotonic()
    notes["exit"] = await asyncio.to_thread(server.stop)
    await asyncio.to_thread(server.start)
    notes["restart_seconds"] = time.monotonic() - began
    # A second more in which a kept-alive connection to the old process may still fail and be
    # retried (`_post`); after it, such a failure is an error.
    await asyncio.sleep(1)
    restarting.clear()
    notes["answers_after"], notes["rss_base_2"] = await asyncio.to_thread(_warm, server, cases)


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
    notes["answers_end"], notes["rss_end_2"] = await asyncio.to_thread(_warm, server, cases)
    stop.set()
    await sampler
    await prober
    return {"tally": tally, "notes": notes, "series": series, "probes": probes}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)] * 1000


def report(args: argparse.Namespace, cases: list[Case], run: dict[str, Any], log: str) -> str:
    tally, notes = run["tally"], run["notes"]
    everything = [x for values in tally.latencies.values() for x in values]
    lines = [
        f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}: "
        f"`python -m scripts.soak --duration {args.duration:g} --concurrency {args.concurrency}`.",
        "",
        f"- requests answered: {len(everything)} in {notes['elapsed']:.0f} s "
        f"({len(everything) / notes['elapsed']:.0f}/s); **errors: {len(tally.errors)}**",
        f"- restart half-way: old process exit status {notes['exit']}, new one serving after "
        f"{notes['restart_seconds']:.2f} s; connections refused meanwhile and retried: "
        f"{tally.retries}; every answer, under load and in the warm passes before and after "
        "the restart, byte for byte the core's own",
        f"- /healthz once a second under load: {len(run['probes'])} probes, p50 "
        f"{_pct(run['probes'], 0.5):.1f} ms, p99 {_pct(run['probes'], 0.99):.0f} ms, "
        f"max {max(run['probes']) * 1000:.0f} ms",
        f"- slow-sync warnings in the server log: {log.count('slow sync')}; "
        f"error lines: {log.count(ERROR_LINE)}",
        "",
        "| request | body | answers | p50 ms | p90 ms | p99 ms | max ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for case in cases:
        got = tally.latencies.get(case.name, [])
        if got:
            lines.append(
                f"| {case.name} | {_size(len(case.body))} | {len(got)} | {_pct(got, 0.5):.1f} "
                f"| {_pct(got, 0.9):.1f} | {_pct(got, 0.99):.1f} | {max(got) * 1000:.0f} |"
            )
    lines.append(
        f"| **all** | | {len(everything)} | {_pct(everything, 0.5):.1f} "
        f"| {_pct(everything, 0.9):.1f} | {_pct(everything, 0.99):.1f} "
        f"| {max(everything) * 1000:.0f} |"
    )
    lines += ["", *_memory(run["series"], notes)]
    if tally.errors:
        lines += ["", "Errors (first 10):", *[f"- {e}" for e in tally.errors[:10]]]
    return "\n".join(lines)


def _memory(series: list[tuple[float, str, float]], notes: dict[str, Any]) -> list[str]:
    """RSS after the same warm pass (every case once, the largest last) at the start
    and at the end of each process's life, and the samples taken every 2 s under load: their
    median in each quarter of the process's life (a leak would climb) and their peak."""
    ends = [(notes["rss_base_1"], notes["rss_end_1"]), (notes["rss_base_2"], notes["rss_end_2"])]
    out = [
        "Server resident memory (VmRSS, MiB) of each process: after a warm pass at its start",
        "and again at its end; under load, the median of each quarter of its life and the peak:",
        "",
        "| process | after warm-up | under load, by quarter | peak | at its end | growth |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    pids = list(dict.fromkeys(p for _, p, _ in series))
    for n, (base, end) in enumerate(ends):
        rss = [r for _, p, r in series if n < len(pids) and p == pids[n]] or [end]
        quarters = [rss[len(rss) * q // 4 : max(len(rss) * (q + 1) // 4, 1)] for q in range(4)]
        trend = " / ".join(f"{statistics.median(q or rss):.0f}" for q in quarters)
        label = "before the restart" if n == 0 else "after the restart"
        out.append(
            f"| {label} | {base:.0f} | {trend} | {max(rss):.0f} | {end:.0f} | {end - base:+.0f} |"
        )
    return out


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.soak", description=__doc__)
    parser.add_argument("--duration", type=float, default=180, help="seconds of load (<= 900)")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent clients")
    parser.add_argument("--max-requests", type=int, default=200_000, help="stop after these")
    args = parser.parse_args(argv)
    args.duration = min(args.duration, MAX_SECONDS)
    print("building requests ...", file=sys.stderr)
    cases = corpus()
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        server = Server(free_port(), log)
        server.start()
        try:
            answers, rss = _warm(server, cases)
            print("soaking ...", file=sys.stderr)
            run = asyncio.run(soak(args, server, cases))
        finally:
            if server.proc and server.proc.poll() is None:
                server.stop()
        text = Path(log.name).read_text()
    run["notes"]["rss_base_1"] = rss
    notes, expected = run["notes"], {c.name: c.expected for c in cases}
    for moment in (answers, notes["answers_before"], notes["answers_after"], notes["answers_end"]):
        if moment != expected:
            run["tally"].errors.append("an answer of the warm pass differs from the core's")
    print(report(args, cases, run, text))
    return 1 if run["tally"].errors else 0


if __name__ == "__main__":
    sys.exit(main())
