"""The latency bench's table: a row of medians per scenario, condition and setting."""

import statistics
from collections import Counter

from scripts.bench.latency import PARTS, TRACE_PARTS
from scripts.bench.latency.breakdown import Breakdown


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:,.0f}"


def requests_per_run(found: list[Breakdown]) -> str:
    """Metacontroller's writes after the hook answered, on average per run."""
    requests: Counter[str] = Counter()
    for b in found:
        requests.update(b.requests_after)
    return ", ".join(f"{v / len(found):g} {k}" for k, v in sorted(requests.items())) or "none"


def median_row(label: str, setting: str, found: list[Breakdown], trace: bool) -> list[str]:
    parts = [_ms([b.parts[p] for b in found]) for p in PARTS]
    if trace:
        parts += [_ms([b.trace.get(p, float("nan")) for b in found]) for p in TRACE_PARTS]
    busy = sum(b.parts["earlier sync"] > 0 for b in found)
    return [
        label, setting, str(len(found)), _ms([b.total for b in found]),
        f"{min(b.total for b in found) * 1000:,.0f}-{max(b.total for b in found) * 1000:,.0f}",
        *parts, f"{busy}/{len(found)}", requests_per_run(found), _ms([b.watched for b in found]),
        _ms([b.all_children for b in found]),
    ]  # fmt: skip


def header(trace: bool) -> list[str]:
    return [
        "scenario, condition", "Metacontroller", "runs", "total, ms (median)", "range, ms",
        *(f"{p}, ms" for p in PARTS), *((f"{p}, ms" for p in TRACE_PARTS) if trace else ()),
        "an earlier sync running", "Metacontroller's requests after the hook, per run",
        "by the bench's watch, ms", "apply to every child, ms",
    ]  # fmt: skip


def with_services(setting: str, services: str) -> str:
    """The setting's label, with the jobs' replica-services value unless it is `all`."""
    return setting if services == "all" else f"{setting}, replica-services {services}"


def said(b: Breakdown) -> str:
    """One breakdown on a progress line."""
    return (
        f"{b.condition} {b.total * 1000:.0f} ms "
        + " ".join(f"{k}={v * 1000:.1f}" for k, v in b.parts.items())
        + f" after={dict(b.requests_after)} trace={b.trace}"
    )
