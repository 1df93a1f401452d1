"""The benchmarks' reports: the hook's tables and targets, and what both benchmarks share (the
machine, markdown tables, rewriting their part of docs/performance.md)."""

from __future__ import annotations

import argparse
import math
import os
import platform
import subprocess
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from scripts.bench.client import Run
from scripts.bench.results import Result, SizeResult
from scripts.bench.servers import ROOT, SHIPPED, STACKS

CONCURRENCY = (1, 16)
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


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
    row(
        "floor: echo round trip + parse + serialize ms, medians",
        lambda r: ("—", f"{floor_ms(r):,.2f}"),
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


def floor_ms(r: SizeResult) -> float:
    """What any Python hook on this stack pays besides deciding: the echo's round trip, plus
    parsing the request and serializing the answer in process (medians, same bytes)."""
    echo = _ms(r.run("echo", 1).latencies, 0.5)
    return echo + _ms(r.phases["parse"], 0.5) + _ms(r.phases["serialize"], 0.5)


def targets(result: Result) -> list[str]:
    by = {r.payload.size.name: r for r in result.sizes}
    rows = []

    def add(what: str, figure: str, met: bool) -> None:
        rows.append([what, figure, "**met**" if met else "**not met**"])

    if "typical" in by:
        hook, floor = _ms(by["typical"].run("hook", 1).latencies, 0.5), floor_ms(by["typical"])
        add(
            "typical round trip ≤ 1.5x the floor (echo + parse + serialize)",
            f"{hook:.2f} ms vs {floor:.2f} ms = {hook / floor:.2f}x",
            hook <= 1.5 * floor,
        )
    if "large" in by:
        large = by["large"]
        median = _ms(large.run("hook", 1).latencies, 0.5)
        add(
            "large round trip < 1 s median",
            f"median {median:,.0f} ms (max {_ms(large.run('hook', 1).latencies, 1):,.0f} ms), "
            f"response {_mib(len(large.payload.response))} bytes",
            median < 1000 and large.same_answer,
        )
    marks = result.memory["hook"]
    first, last = marks[-2][1], marks[-1][1]
    add(
        f"memory flat: after {marks[-1][0]:,} syncs within 10% of after {marks[-2][0]:,}",
        f"{first / 1024:,.1f} → {last / 1024:,.1f} MiB ({100 * (last - first) / first:+.1f}%)",
        abs(last - first) <= 0.1 * first,
    )
    return table(["target", "figure", "met"], rows)


def stacks_table(result: Result) -> list[str]:
    """Both servers on the shipped stack (httptools, uvloop) and on h11 (asyncio)."""
    named = [r for r in result.sizes if r.payload.size.named]
    others = [x for x in STACKS if x != SHIPPED]
    if not any(kind.endswith(f" {x}") for r in named for kind, _ in r.runs for x in others):
        return []
    columns = [(r, stack) for r in named for stack in STACKS]
    header = ["figure"] + [f"{r.payload.size.label} {stack}" for r, stack in columns]

    def run(r: SizeResult, stack: str, kind: str, c: int) -> Run:
        return r.run(kind if stack == SHIPPED else f"{kind} {stack}", c)

    rows = []
    for kind in ("hook", "echo"):
        for c in CONCURRENCY:
            label = f"{kind} round trip ms at concurrency {c}, median"
            cells = [f"{_ms(run(r, st, kind, c).latencies, 0.5):,.2f}" for r, st in columns]
            rows.append([label, *cells])
        label = f"{kind} throughput, syncs/s (concurrency 16)"
        rows.append([label, *(_throughput(run(r, st, kind, 16)) for r, st in columns)])
    return table(header, rows)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def machine(sharing: str = "client and server share them") -> list[str]:
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
    return [
        f"- CPU: {cpu}, `nproc` = {len(os.sched_getaffinity(0))} ({sharing})",
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
        "- servers: one uvicorn process each on the hook's settings (`app/service/server.py`), "
        "HTTP/1.1 by httptools on uvloop as shipped (and by h11 on asyncio, `MXJOB_HTTP=h11`, "
        "the stack of earlier versions, in the last table)",
        "",
        "#### Targets",
        "",
        *targets(result),
        "",
        "#### Hook and echo baseline, side by side",
        "",
        *main_table(result),
        "",
        "#### Response size and latency against job size (concurrency 1, medians)",
        "",
        *curve_table(result),
        "",
        *thousand_workers(result),
        "",
        "![round trip against job size](performance-latency.png)",
        "![request and response bytes against job size](performance-size.png)",
        "",
        f"#### Resident memory (VmRSS) of a fresh server, {mem.label} syncs at concurrency 16",
        "",
        *memory_table(result),
        "",
        *(
            [
                "#### The shipped stack (httptools, uvloop) and the earlier one (h11, asyncio)",
                "",
                *stacks_table(result),
                "",
            ]
            if stacks_table(result)
            else []
        ),
        "Answers identical to the in-process answer for every size: "
        + ("yes" if all(r.same_answer for r in result.sizes) else "**no**"),
        END,
    ]
    return "\n".join(lines)


def write_doc(doc: Path, start: str, end: str, text: str) -> None:
    """Replace what lies between the `start` and `end` markers of `doc` (markers included)
    with `text`; without the markers, add `text` at the end."""
    old = doc.read_text() if doc.exists() else "# Performance\n"
    if start not in old:
        old = f"{old.rstrip()}\n\n{start}\n{end}\n"
    before, _, rest = old.partition(start)
    _, _, after = rest.partition(end)
    doc.write_text(before + text + after)
