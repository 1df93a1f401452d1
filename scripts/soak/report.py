"""The soak's Markdown report for docs/reliability.md: answers, errors, latency percentiles
and the server's memory over each process's life."""

import argparse
import os
import platform
import statistics
import time
from typing import Any

from scripts.soak.corpus import Case

ERROR_LINE = '"level":"error"'


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
