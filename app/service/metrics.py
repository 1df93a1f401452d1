"""Prometheus metrics of the hook: syncs by outcome and how long they took."""

import platform

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from app import __version__

REGISTRY = CollectorRegistry()

# Constant 1, labelled with what is running: join it to other series to see a rollout.
BUILD_INFO = Gauge(
    "mxjob_build_info",
    "The running hook's version and Python version; always 1.",
    ["version", "python"],
    registry=REGISTRY,
)
BUILD_INFO.labels(__version__, platform.python_version()).set(1)

SYNCS = Counter(
    "mxjob_sync_requests",
    "Sync requests answered, by outcome "
    "(ok, invalid_spec, bad_request, unauthorized, too_large, timeout, busy, expired, "
    "client_gone, error).",
    ["outcome"],
    registry=REGISTRY,
)
SYNC_SECONDS = Histogram(
    "mxjob_sync_duration_seconds",
    "Time to answer a sync request, by outcome.",
    ["outcome"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY,
)


# Each outcome's two series, made on its first sync: `labels()` takes a lock and builds a key
# on every call, a few microseconds of each small sync. Made lazily, so that /metrics still
# shows only the outcomes that happened.
_SERIES: dict[str, tuple[Counter, Histogram]] = {}


def observe(outcome: str, seconds: float) -> None:
    series = _SERIES.get(outcome)
    if series is None:
        series = _SERIES[outcome] = (SYNCS.labels(outcome), SYNC_SECONDS.labels(outcome))
    series[0].inc()
    series[1].observe(seconds)
