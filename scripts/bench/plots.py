"""The hook benchmark's two plots: round trip and request/response bytes against job size."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scripts.bench.report import _ms, size_fit

if TYPE_CHECKING:
    from scripts.bench.hook import Result


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
