"""Benchmark the sync hook against an echo baseline on the same server stack: `make bench`.

The echo baseline is FastAPI on uvicorn with the same settings as the hook, answering a request
of the same size with a precomputed response of the same bytes: the floor for any Python hook
here. Requests are a running job's sync as Metacontroller sends it (every observed pod with its
status and Metacontroller's last-applied annotation). Writes docs/performance.md (between the
bench markers) and docs/performance-*.png.

    .venv/bin/python -m scripts.bench            # the full run, a few minutes
    .venv/bin/python -m scripts.bench --quick    # fewer requests, for a smoke run
    .venv/bin/python -m scripts.bench profile --size large   # pyinstrument, in process
"""

import argparse
import asyncio
import copy
import importlib.util
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from app.reconcile import LAST_APPLIED, sync
from tests import support as s

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
HOST = "127.0.0.1"
CONCURRENCY = (1, 16)


@dataclass(frozen=True)
class Size:
    name: str
    servers: int
    workers: int
    named: bool = False  # a named size gets every figure; the others only feed the curve

    @property
    def replicas(self) -> int:
        return 1 + self.servers + self.workers

    @property
    def label(self) -> str:
        return f"{self.name} (1/{self.servers}/{self.workers})"


SIZES = (
    Size("small", 1, 2, named=True),
    Size("s16", 4, 16),
    Size("typical", 16, 64, named=True),
    Size("s250", 25, 250),
    Size("s500", 50, 500),
    Size("large", 100, 1000, named=True),
)


@dataclass(frozen=True)
class Counts:
    """Requests per measurement. The large job gets few: each of its syncs moves ~180 MB."""

    in_process: dict[str, int]
    serial: dict[str, int]
    concurrent: dict[str, int]
    memory: tuple[int, int] = (1000, 10000)
    rounds: int = 2

    @classmethod
    def of(cls, quick: bool) -> "Counts":
        if quick:
            return cls(
                in_process={"small": 300, "typical": 40, "large": 2},
                serial={"small": 300, "typical": 40, "large": 2},
                concurrent={"small": 600, "typical": 64},
                rounds=1,
            )
        return cls(
            in_process={"small": 2000, "typical": 200, "large": 6},
            serial={"small": 1000, "typical": 200, "large": 6},
            concurrent={"small": 4000, "typical": 400, "large": 16},
        )

    def serial_for(self, size: Size) -> int:
        return self.serial.get(size.name, 3)

    def concurrent_for(self, size: Size, round_: int) -> int:
        """This round's share; a count too small to split runs whole in the first round."""
        total = self.concurrent.get(size.name, 0) if size.named else 0
        if total >= 16 * self.rounds:
            return total // self.rounds
        return total if round_ == 0 else 0


# ---------------------------------------------------------------- realistic requests


def _running_status() -> dict[str, Any]:
    """What the kubelet reports for a running pod with one `mxnet` container."""
    status = s.pod_status(
        "Running",
        hostIP="10.0.3.17",
        podIP="10.244.3.41",
        podIPs=[{"ip": "10.244.3.41"}],
        qosClass="BestEffort",
        startTime="2026-11-22T11:58:30Z",
        conditions=[
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": at}
            for t, at in (
                ("PodReadyToStartContainers", "2026-11-22T11:58:41Z"),
                ("Initialized", "2026-11-22T11:58:30Z"),
                ("Ready", "2026-11-22T11:59:00Z"),
                ("ContainersReady", "2026-11-22T11:59:00Z"),
                ("PodScheduled", "2026-11-22T11:58:30Z"),
            )
        ],
    )
    status["containerStatuses"][0] |= {
        "containerID": "containerd://" + "3f" * 32,
        "imageID": f"docker.io/{s.IMAGE}@sha256:" + "a7" * 32,
        "started": True,
        "lastState": {},
    }
    return status


def _as_cluster_shows(child: dict[str, Any], **status: Any) -> dict[str, Any]:
    """A desired child as Metacontroller sends it back: with the API server's metadata and
    defaults, and the last-applied annotation Metacontroller keeps for its 3-way merge."""
    out = s.observed(child, **status)
    meta = out["metadata"]
    meta["annotations"] = meta.get("annotations", {}) | {LAST_APPLIED: orjson.dumps(child).decode()}
    meta["creationTimestamp"] = "2026-11-22T11:58:29Z"
    meta["generation"] = 1
    if child["kind"] == "Pod":
        out["spec"] = _pod_defaults(out["spec"])
    return out


def _pod_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    mount = {"name": "kube-api-access", "readOnly": True, "mountPath": "/var/run/secrets/sa"}
    defaults = {
        "container": {
            "imagePullPolicy": "IfNotPresent",
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": [mount],
        },
    }
    return spec | {
        "containers": [c | defaults["container"] for c in spec["containers"]],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "nodeName": "node-3",
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute"}
            | {"tolerationSeconds": 300}
            for k in ("not-ready", "unreachable")
        ],
        "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420}}],
    }


def running_job_request(size: Size) -> dict[str, Any]:
    """The steady-state sync of a job whose pods all run: the parent's status already says
    Running, so the answer is the same status and the same children."""
    parent = s.mxjob(s.train_spec(size.servers, size.workers, policy="OnFailure"))
    answer = sync(s.request(parent), s.NOW)
    for _ in range(2):
        pods = [_as_cluster_shows(p, **_running_status()) for p in s.pods_of(answer)]
        services = [_as_cluster_shows(c) for c in s.services_of(answer)]
        request = s.request(parent | {"status": answer["status"]}, pods, services)
        answer = sync(copy.deepcopy(request), s.NOW)
    return request


@dataclass(frozen=True)
class Payload:
    size: Size
    request: bytes
    response: bytes


def payload(size: Size) -> Payload:
    request = orjson.dumps(running_job_request(size))
    return Payload(size, request, orjson.dumps(sync(orjson.loads(request), s.NOW)))


# ---------------------------------------------------------------- in-process timing


def answer(body: bytes) -> bytes:
    """What the hook does with a body besides HTTP: parse, sync, serialize."""
    return orjson.dumps(sync(orjson.loads(body), s.NOW))


PHASES = ("parse", "sync", "serialize", "whole")


def time_phases(body: bytes, count: int) -> dict[str, list[float]]:
    """Seconds per phase of what the hook does with a body besides HTTP, `count` times."""
    out: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for _ in range(count):
        marks = [time.perf_counter()]
        parsed = orjson.loads(body)
        marks.append(time.perf_counter())
        desired = sync(parsed, s.NOW)
        marks.append(time.perf_counter())
        orjson.dumps(desired)
        marks.append(time.perf_counter())
        for phase, start, end in zip(PHASES, marks, marks[1:], strict=False):
            out[phase].append(end - start)
        out["whole"].append(marks[-1] - marks[0])
    return out


# ---------------------------------------------------------------- servers


def _echo_app(responses: dict[int, bytes]) -> Any:
    from fastapi import FastAPI, Request
    from fastapi.responses import PlainTextResponse, Response

    echo = FastAPI()

    @echo.post("/sync")
    async def answer_precomputed(request: Request) -> Response:
        body = await request.body()
        return Response(responses.get(len(body), b"{}"), media_type="application/json")

    @echo.get("/healthz")
    async def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    return echo


def serve(kind: str, port: int, responses_dir: str | None) -> None:
    """One server process; both kinds run on exactly the same uvicorn settings, the hook's
    (its protocol with connection deadlines, app/server.py)."""
    import uvicorn

    from app import server, settings

    if kind == "hook":
        from app.web import app
    else:
        found = Path(responses_dir or ".").glob("*.response")
        app = _echo_app({int(p.stem): p.read_bytes() for p in found})
    config = server.options(settings.from_env())
    uvicorn.run(app, host=HOST, port=port, log_level="warning", **config)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    kind: str
    port: int
    process: subprocess.Popen[bytes]

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")


@contextmanager
def running(kind: str, responses_dir: str) -> Iterator[Server]:
    """A server process of this kind; its log goes to a file, shown if it fails to start."""
    port = _free_port()
    env = os.environ | {"MXJOB_FROZEN_CLOCK": s.NOW.isoformat()}
    argv = [sys.executable, "-m", "scripts.bench", "serve", kind, "--port", str(port)]
    log = Path(responses_dir) / f"{kind}-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*argv, "--responses", responses_dir], cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        _wait_ready(port, process)
        yield Server(kind, port, process)
    except RuntimeError:
        sys.stderr.write(log.read_text())
        raise
    finally:
        process.terminate()
        process.wait(timeout=30)


def _wait_ready(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start in 30 s")


# ---------------------------------------------------------------- load


class Connection:
    """A minimal keep-alive HTTP/1.1 client: Content-Length in, Content-Length out. Lean on
    purpose: the client shares the two cores with the server, and httpx costs more than
    the echo server itself for big bodies (`--client httpx` shows it)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> "Connection":
        reader, writer = await asyncio.open_connection(HOST, port, limit=1 << 20)
        return cls(reader, writer)

    async def post(self, body: bytes) -> tuple[int, bytes]:
        head = b"POST /sync HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n"
        self.writer.write(head % HOST.encode() + b"content-length: %d\r\n\r\n" % len(body))
        self.writer.write(body)
        await self.writer.drain()
        lines = (await self.reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        headers = dict(line.lower().split(b": ", 1) for line in lines[1:] if line)
        data = await self.reader.readexactly(int(headers[b"content-length"]))
        return int(lines[0].split()[1]), data

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


Post = Callable[[bytes], Awaitable[tuple[int, bytes]]]


async def _posters(port: int, n: int, client: str) -> tuple[list[Post], Callable[[], Any]]:
    if client == "httpx":
        import httpx

        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        session = httpx.AsyncClient(base_url=f"http://{HOST}:{port}", limits=limits, timeout=120)

        async def post(body: bytes) -> tuple[int, bytes]:
            sent = await session.post("/sync", content=body, headers=JSON)
            return sent.status_code, sent.content

        return [post] * n, session.aclose
    conns = [await Connection.open(port) for _ in range(n)]

    async def close_all() -> None:
        for conn in conns:
            await conn.close()

    return [c.post for c in conns], close_all


JSON = {"content-type": "application/json"}


@dataclass
class Run:
    latencies: list[float] = field(default_factory=list)
    elapsed: float = 0.0
    bad: int = 0

    def add(self, other: "Run") -> None:
        self.latencies += other.latencies
        self.elapsed += other.elapsed
        self.bad += other.bad

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0


async def load(port: int, body: bytes, count: int, concurrency: int, client: str) -> Run:
    """`count` syncs over `concurrency` connections, each sending as soon as it has its answer."""
    posters, close = await _posters(port, concurrency, client)
    run, left = Run(), count

    async def worker(post: Post) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            started = time.perf_counter()
            status, _ = await post(body)
            run.latencies.append(time.perf_counter() - started)
            run.bad += status != 200

    started = time.perf_counter()
    await asyncio.gather(*(worker(p) for p in posters))
    run.elapsed = time.perf_counter() - started
    await close()
    return run


async def first_answer(port: int, body: bytes) -> tuple[int, bytes]:
    conn = await Connection.open(port)
    try:
        return await conn.post(body)
    finally:
        await conn.close()


# ---------------------------------------------------------------- the run


@dataclass
class SizeResult:
    payload: Payload
    phases: dict[str, list[float]] = field(default_factory=dict)
    runs: dict[tuple[str, int], Run] = field(default_factory=dict)
    same_answer: bool = True

    def run(self, kind: str, concurrency: int) -> Run:
        return self.runs.setdefault((kind, concurrency), Run())


@dataclass
class Result:
    sizes: list[SizeResult]
    memory: dict[str, list[tuple[int, int]]]
    memory_size: Size
    seconds: float = 0.0


def measure(args: argparse.Namespace) -> Result:
    started = time.perf_counter()
    counts = Counts.of(args.quick)
    wanted = args.sizes.split(",")
    sizes = [z for z in SIZES if z.name in wanted or (args.curve and not z.named)]
    print(f"building {len(sizes)} requests ...", flush=True)
    results = [SizeResult(payload(z)) for z in sizes]
    for r in results:
        r.phases = time_phases(r.payload.request, counts.in_process.get(r.payload.size.name, 3))
    with tempfile.TemporaryDirectory() as tmp:
        for r in results:
            (Path(tmp) / f"{len(r.payload.request)}.response").write_bytes(r.payload.response)
        with running("echo", tmp) as echo, running("hook", tmp) as hook:
            asyncio.run(_http(results, (echo, hook), counts, args.client))
        wanted_memory = args.memory_size or ("small" if args.quick else "typical")
        memory_size = next(z for z in SIZES if z.name == wanted_memory)
        memory = asyncio.run(_memory(tmp, payload(memory_size), counts, args.client))
    return Result(results, memory, memory_size, time.perf_counter() - started)


async def _http(
    results: list[SizeResult], servers: tuple[Server, ...], counts: Counts, client: str
) -> None:
    for r in results:
        size, body = r.payload.size, r.payload.request
        status, got = await first_answer(servers[1].port, body)
        r.same_answer = status == 200 and got == r.payload.response
        print(f"{size.label}: {len(body):,} B in, {len(got):,} B out", flush=True)
        for round_ in range(counts.rounds):
            for server in servers:
                await load(server.port, body, 2, 1, client)  # warm-up
                n = max(1, counts.serial_for(size) // counts.rounds)
                r.run(server.kind, 1).add(await load(server.port, body, n, 1, client))
                n = counts.concurrent_for(size, round_)
                if n:
                    r.run(server.kind, 16).add(await load(server.port, body, n, 16, client))


async def _memory(
    responses_dir: str, job: Payload, counts: Counts, client: str
) -> dict[str, list[tuple[int, int]]]:
    """VmRSS of a fresh hook server after one sync, after 1,000 and after 10,000."""
    out: dict[str, list[tuple[int, int]]] = {}
    (Path(responses_dir) / f"{len(job.request)}.response").write_bytes(job.response)
    for kind in ("hook",):
        with running(kind, responses_dir) as server:
            await load(server.port, job.request, 1, 1, client)
            marks, done = [(1, server.rss_kib())], 1
            for target in counts.memory:
                await load(server.port, job.request, target - done, 16, client)
                done = target
                marks.append((done, server.rss_kib()))
                print(f"memory {kind}: {done:,} syncs, VmRSS {marks[-1][1]:,} KiB", flush=True)
            out[kind] = marks
    return out


# ---------------------------------------------------------------- report


def _ms(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def _pair(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{_ms(values, 0.5):,.2f} / {_ms(values, 0.99):,.2f}"


def _mib(n: int) -> str:
    return f"{n:,} ({n / 2**20:,.1f} MiB)" if n >= 2**20 else f"{n:,}"


def main_table(result: Result) -> list[str]:
    named = [r for r in result.sizes if r.payload.size.named]
    head = ["| figure |"] + [f" {r.payload.size.label} hook | echo |" for r in named]
    rows = ["".join(head), "|---" * (1 + 2 * len(named)) + "|"]

    def row(label: str, cells: Callable[[SizeResult], tuple[str, ...]]) -> None:
        rows.append(f"| {label} | " + " | ".join(" | ".join(cells(r)) for r in named) + " |")

    row("request bytes", lambda r: (_mib(len(r.payload.request)),) * 2)
    row("response bytes", lambda r: (_mib(len(r.payload.response)),) * 2)
    for phase, what in (
        ("parse", "parse (`orjson.loads`)"),
        ("sync", "reconcile (`sync()`)"),
        ("serialize", "serialize (`orjson.dumps`)"),
        ("whole", "parse + reconcile + serialize"),
    ):
        row(f"in process: {what} ms, median / p99", _phase_cells(phase))
    for c in CONCURRENCY:
        row(f"round trip ms at concurrency {c}, median / p99", _round_trips(c))
    row(
        "throughput, syncs/s (concurrency 16)",
        lambda r: tuple(_throughput(r.run(k, 16)) for k in ("hook", "echo")),
    )
    row("requests / non-200", lambda r: tuple(_requests(r, k) for k in ("hook", "echo")))
    return rows


def _throughput(run: Run) -> str:
    return f"{run.throughput:,.1f}" if run.latencies else "—"


def _phase_cells(phase: str) -> Callable[[SizeResult], tuple[str, ...]]:
    return lambda r: (_pair(r.phases[phase]), "—")


def _round_trips(concurrency: int) -> Callable[[SizeResult], tuple[str, ...]]:
    return lambda r: tuple(_pair(r.run(k, concurrency).latencies) for k in ("hook", "echo"))


def _requests(r: SizeResult, kind: str) -> str:
    runs = [r.run(kind, c) for c in CONCURRENCY]
    return f"{sum(len(x.latencies) for x in runs):,} / {sum(x.bad for x in runs)}"


def curve_table(result: Result) -> list[str]:
    rows = [
        "| job (scheduler/servers/workers) | pods | request bytes | response bytes "
        "| response bytes / pods² | in process ms | hook round trip ms | echo round trip ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result.sizes:
        z, p = r.payload.size, r.payload
        rows.append(
            f"| 1/{z.servers}/{z.workers} | {z.replicas:,} | {_mib(len(p.request))} "
            f"| {_mib(len(p.response))} | {len(p.response) / z.replicas**2:,.1f} "
            f"| {_ms(r.phases['whole'], 0.5):,.1f} "
            f"| {_ms(r.run('hook', 1).latencies, 0.5):,.1f} "
            f"| {_ms(r.run('echo', 1).latencies, 0.5):,.1f} |"
        )
    return rows


def size_fit(result: Result) -> tuple[float, float, float]:
    """Least-squares bytes = a·n² + b·n + c of the response against the pods n in the job."""
    import numpy

    n = numpy.array([r.payload.size.replicas for r in result.sizes], dtype=float)
    y = numpy.array([len(r.payload.response) for r in result.sizes], dtype=float)
    a, b, c = numpy.linalg.lstsq(numpy.stack([n**2, n, n**0], axis=1), y, rcond=None)[0]
    return float(a), float(b), float(c)


def thousand_workers(result: Result) -> list[str]:
    large = next((r for r in result.sizes if r.payload.size.name == "large"), None)
    if large is None:
        return []
    p, ph = large.payload, large.phases
    a, b, c = size_fit(result) if len(result.sizes) >= 3 else (math.nan,) * 3
    return [
        f"Response bytes fit {a:,.1f}·n² + {b:,.0f}·n + {c:,.0f} for a job of n pods. "
        f"A 1,000-worker job ({p.size.label}, {p.size.replicas:,} pods) costs: request "
        f"{_mib(len(p.request))} bytes, response {_mib(len(p.response))} bytes; in process "
        f"{_ms(ph['parse'], 0.5):,.0f} ms to parse, {_ms(ph['sync'], 0.5):,.0f} ms to "
        f"reconcile, {_ms(ph['serialize'], 0.5):,.0f} ms to serialize; round trip "
        f"{_ms(large.run('hook', 1).latencies, 0.5):,.0f} ms median against the echo's "
        f"{_ms(large.run('echo', 1).latencies, 0.5):,.0f} ms.",
    ]


def memory_table(result: Result) -> list[str]:
    rows = ["| server | " + " | ".join(f"after {n:,}" for n, _ in result.memory["hook"]) + " |"]
    rows.append("|---" * (1 + len(result.memory["hook"])) + "|")
    for kind, marks in result.memory.items():
        rows.append(
            f"| {kind} | " + " | ".join(f"{kib / 1024:,.1f} MiB" for _, kib in marks) + " |"
        )
    return rows


def targets(result: Result) -> list[str]:
    by = {r.payload.size.name: r for r in result.sizes}
    out = ["| target | figure | met |", "|---|---|---|"]

    def add(what: str, figure: str, met: bool) -> None:
        out.append(f"| {what} | {figure} | {'**met**' if met else '**not met**'} |")

    if "typical" in by:
        hook, echo = (_ms(by["typical"].run(k, 1).latencies, 0.5) for k in ("hook", "echo"))
        add(
            "typical round trip ≤ 1.5x echo",
            f"{hook:.2f} ms vs {echo:.2f} ms = {hook / echo:.2f}x",
            hook <= 1.5 * echo,
        )
    if "small" in by:
        hook, echo = (by["small"].run(k, 16).throughput for k in ("hook", "echo"))
        add(
            "small-job throughput ≥ 0.7x echo",
            f"{hook:,.0f} vs {echo:,.0f} syncs/s = {hook / echo:.2f}x",
            hook >= 0.7 * echo,
        )
    if "large" in by:
        large = by["large"]
        ms = [_ms(large.run("hook", c).latencies, 0.5) for c in (1,)]
        p99 = _ms(large.run("hook", 1).latencies, 0.99)
        add(
            "large round trip < 2 s",
            f"median {ms[0]:,.0f} ms, max {p99:,.0f} ms, response "
            f"{_mib(len(large.payload.response))} bytes",
            p99 < 2000 and large.same_answer,
        )
    marks = result.memory["hook"]
    first, last = marks[-2][1], marks[-1][1]
    add(
        f"memory after {marks[-1][0]:,} syncs within 10% of after {marks[-2][0]:,}",
        f"{first / 1024:,.1f} → {last / 1024:,.1f} MiB ({100 * (last - first) / first:+.1f}%)",
        abs(last - first) <= 0.1 * first,
    )
    return out


def machine() -> list[str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    stack = "httptools" if importlib.util.find_spec("httptools") else "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    return [
        f"- CPU: {cpu}, `nproc` = {len(os.sched_getaffinity(0))} (client and server share them)",
        f"- servers: one uvicorn process each, HTTP/1.1 by {stack}, {loop} event loop",
        f"- Python {platform.python_version()} on {platform.system()} {platform.release()}",
        f"- run at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on commit `{commit}`",
    ]


def report(result: Result, args: argparse.Namespace) -> str:
    command = "make bench" + (" BENCH_ARGS=--quick" if args.quick else "")
    mem = result.memory_size
    lines = [
        START,
        f"Generated by `{command}` (`{' '.join(['python -m scripts.bench', *args.argv])}`) "
        f"in {result.seconds:,.0f} s, client `{args.client}`.",
        "",
        *machine(),
        "",
        "### Targets",
        "",
        *targets(result),
        "",
        "### Hook and echo baseline, side by side",
        "",
        *main_table(result),
        "",
        "### Response size and latency against job size (concurrency 1, medians)",
        "",
        *curve_table(result),
        "",
        *thousand_workers(result),
        "",
        "![round trip against job size](performance-latency.png)",
        "![request and response bytes against job size](performance-size.png)",
        "",
        f"### Resident memory (VmRSS) of a fresh server, {mem.label} syncs at concurrency 16",
        "",
        *memory_table(result),
        "",
        "Answers identical to the in-process answer for every size: "
        + ("yes" if all(r.same_answer for r in result.sizes) else "**no**"),
        END,
    ]
    return "\n".join(lines)


def plot(result: Result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    x = [r.payload.size.replicas for r in result.sizes]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for kind, style in (("hook", "o-"), ("echo", "s--")):
        y = [_ms(r.run(kind, 1).latencies, 0.5) for r in result.sizes]
        ax.plot(x, y, style, label=f"{kind} (median, concurrency 1)")
    ax.axhline(2000, color="grey", linewidth=0.8, linestyle=":", label="2 s target")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="pods in the job (scheduler + servers + workers)",
        ylabel="round trip, ms",
        title="Sync round trip against job size",
    )
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_sizes(result: Result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    x = [r.payload.size.replicas for r in result.sizes]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    ax.plot(x, [len(r.payload.request) for r in result.sizes], "o-", label="request")
    ax.plot(x, [len(r.payload.response) for r in result.sizes], "s-", label="response")
    if len(x) >= 3:
        a, b, c = size_fit(result)
        ax.plot(x, [a * n * n + b * n + c for n in x], ":", color="grey", label="a·n² + b·n + c")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="pods in the job (scheduler + servers + workers)",
        ylabel="bytes",
        title="Sync request and response size against job size",
    )
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_doc(text: str) -> None:
    old = DOC.read_text() if DOC.exists() else f"# Performance\n\n{START}\n{END}\n"
    before, _, rest = old.partition(START)
    _, _, after = rest.partition(END)
    DOC.write_text(before + text + after)


# ---------------------------------------------------------------- profile


def profile(size_name: str, repeat: int) -> None:
    from pyinstrument import Profiler

    size = next(z for z in SIZES if z.name == size_name)
    body = payload(size).request
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for _ in range(repeat):
        answer(body)
    profiler.stop()
    print(profiler.output_text(unicode=True, color=False))


def cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer requests: a smoke run")
    parser.add_argument("--sizes", default="small,typical,large", help="named sizes to run")
    parser.add_argument(
        "--no-curve",
        dest="curve",
        action="store_false",
        help="skip the extra sizes that only feed the size curve",
    )
    parser.add_argument(
        "--memory-size", help="job size for the memory run (default: typical; small with --quick)"
    )
    parser.add_argument("--client", choices=("raw", "httpx"), default="raw")
    parser.add_argument(
        "--no-write", dest="write", action="store_false", help="print only; leave docs/ alone"
    )
    commands = parser.add_subparsers(dest="command")
    server = commands.add_parser("serve", help="internal: one server process")
    server.add_argument("kind", choices=("hook", "echo"))
    server.add_argument("--port", type=int, required=True)
    server.add_argument("--responses")
    prof = commands.add_parser("profile", help="pyinstrument profile of parse+sync+serialize")
    prof.add_argument("--size", default="large")
    prof.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    args.argv = argv
    return args


def main(argv: list[str]) -> int:
    args = cli(argv)
    if args.command == "serve":
        serve(args.kind, args.port, args.responses)
        return 0
    if args.command == "profile":
        profile(args.size, args.repeat)
        return 0
    result = measure(args)
    text = report(result, args)
    print(text)
    if args.write:
        write_doc(text)
        plot(result, DOC.parent / "performance-latency.png")
        plot_sizes(result, DOC.parent / "performance-size.png")
        print(f"wrote {DOC.relative_to(ROOT)} and docs/performance-*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
