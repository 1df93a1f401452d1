"""Benchmark the sync hook against its floor on the same server stack: `make bench`.

The floor is what any Python hook on this stack pays for a sync besides deciding anything: an
echo server's round trip (FastAPI on the same uvicorn, answering a request of the same size
with precomputed bytes) plus parsing the request and serializing the answer in process with
the same library. Requests are a running job's sync as Metacontroller sends it (every observed
pod with its status and Metacontroller's last-applied annotation). Writes docs/performance.md
(between the bench markers) and docs/performance-*.png.

    .venv/bin/python -m scripts.bench            # the full run, a few minutes
    .venv/bin/python -m scripts.bench --quick    # fewer requests, for a smoke run
    .venv/bin/python -m scripts.bench profile --size large   # pyinstrument, in process
"""

import argparse
import asyncio
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from scripts.bench.client import first_answer, load
from scripts.bench.plots import plot, plot_sizes
from scripts.bench.report import END, START, report, write_doc
from scripts.bench.results import Result, SizeResult
from scripts.bench.servers import ROOT, STACKS, Server, running, serve
from scripts.bench.workloads import SIZES, Payload, Size, answer, payload, time_phases

DOC = ROOT / "docs" / "performance.md"


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


def measure(args: argparse.Namespace) -> Result:
    started = time.perf_counter()
    counts = Counts.of(args.quick)
    wanted = args.sizes.split(",")
    sizes = [z for z in SIZES if z.name in wanted or (args.curve and not z.named)]
    print(f"building {len(sizes)} requests ...", flush=True)
    results = [SizeResult(payload(z)) for z in sizes]
    with tempfile.TemporaryDirectory() as tmp:
        for r in results:
            (Path(tmp) / f"{len(r.payload.request)}.response").write_bytes(r.payload.response)
        with ExitStack() as stack:
            servers = [
                stack.enter_context(running(kind, tmp, name))
                for name in args.stacks.split(",")
                for kind in ("echo", "hook")
            ]
            asyncio.run(_http(results, servers, counts, args.client))
        wanted_memory = args.memory_size or ("small" if args.quick else "typical")
        memory_size = next(z for z in SIZES if z.name == wanted_memory)
        memory = asyncio.run(_memory(tmp, payload(memory_size), counts, args.client))
    return Result(results, memory, memory_size, time.perf_counter() - started)


async def _http(
    results: list[SizeResult], servers: list[Server], counts: Counts, client: str
) -> None:
    for r in results:
        size, body = r.payload.size, r.payload.request
        for server in servers:
            if server.kind == "hook":
                status, got = await first_answer(server.port, body)
                r.same_answer &= status == 200 and got == r.payload.response
        print(f"{size.label}: {len(body):,} B in, {len(got):,} B out", flush=True)
        for round_ in range(counts.rounds):
            # In-process phases in the same rounds as the servers, so that the floor's parse
            # and serialize meet the same load on the shared cores as the round trips.
            n = max(1, counts.in_process.get(size.name, 3) // counts.rounds)
            for phase, times in time_phases(body, n).items():
                r.phases.setdefault(phase, []).extend(times)
            for server in servers:
                await load(server.port, body, 2, 1, client)  # warm-up
                n = max(1, counts.serial_for(size) // counts.rounds)
                r.run(server.name, 1).add(await load(server.port, body, n, 1, client))
                n = counts.concurrent_for(size, round_)
                if n:
                    r.run(server.name, 16).add(await load(server.port, body, n, 16, client))


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
        "--stacks",
        default=",".join(STACKS),
        help="HTTP stacks (MXJOB_HTTP) to serve both servers on, in the same rounds: "
        "httptools (on uvloop, as shipped), h11 (on asyncio, as earlier versions shipped)",
    )
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
        write_doc(DOC, START, END, text)
        plot(result, DOC.parent / "performance-latency.png")
        plot_sizes(result, DOC.parent / "performance-size.png")
        print(f"wrote {DOC.relative_to(ROOT)} and docs/performance-*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
