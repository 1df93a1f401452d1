"""The hook benchmark's two plots: round trip and request/response bytes against job size."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.bench.report import _ms, size_fit
from scripts.bench.results import Result


def plot(result: Result, path: Path) -> None:
    def draw(ax: Any) -> None:
        for kind, style in (("hook", "o-"), ("echo", "s--")):
            y = [_ms(r.run(kind, 1).latencies, 0.5) for r in result.sizes]
            ax.plot(_pods(result), y, style, label=f"{kind} (median, concurrency 1)")
        ax.axhline(2000, color="grey", linewidth=0.8, linestyle=":", label="2 s target")

    _against_job_size(path, "Sync round trip against job size", "round trip, ms", draw)


def plot_sizes(result: Result, path: Path) -> None:
    def draw(ax: Any) -> None:
        x = _pods(result)
        ax.plot(x, [len(r.payload.request) for r in result.sizes], "o-", label="request")
        ax.plot(x, [len(r.payload.response) for r in result.sizes], "s-", label="response")
        if len(x) >= 3:
            a, b, c = size_fit(result)
            fit = [a * n * n + b * n + c for n in x]
            ax.plot(x, fit, ":", color="grey", label="a·n² + b·n + c")

    title = "Sync request and response size against job size"
    _against_job_size(path, title, "bytes", draw)


def _pods(result: Result) -> list[int]:
    return [r.payload.size.replicas for r in result.sizes]


def _against_job_size(path: Path, title: str, ylabel: str, draw: Callable[[Any], None]) -> None:
    """A log-log plot against the job's pod count, written to `path`; `draw` adds the lines."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    draw(ax)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="pods in the job (scheduler + servers + workers)",
        ylabel=ylabel,
        title=title,
    )
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
