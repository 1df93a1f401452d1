"""What a sync costs the hook with MX_CONFIG inline in every pod (before) and through the
job's ConfigMap (after), measured in one run: request bytes, time per sync in process and
through a real server, and the server's peak memory.

    .venv/bin/python -m scripts.bench.sizes     # about 3 minutes

Requests are the bench's steady-state syncs of a running job (scripts/bench/workloads.py:
every pod and Service as the API server and Metacontroller show them). "Before" is the same
hook under a CompositeController that declares no ConfigMap, which keeps MX_CONFIG inline
exactly as the previous version did. Each (job, form) gets a fresh `python -m app serve` on
loopback, with a body limit large enough for the inline form; its peak VmHWM is read after
its syncs. Forms alternate job by job so that the machine's noise hits both. Prints a
Markdown table."""

import http.client
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson

from app.core.validate.costs import MiB
from localcluster.ports import free_port
from scripts.bench.workloads import Size, running_job_request
from tests.support import jobs as s
from tests.support.hooked import sync

HOST = "127.0.0.1"
JOBS = [
    (Size("small", 1, 2), 200),
    (Size("typical", 16, 64), 40),
    (Size("large", 100, 1000), 6),
    # The most replicas validation admits for a job named `mnist`
    # (tests/unit/core/test_size_rule.py).
    (Size("largest admitted", 331, 2979), 6),
]
# The previous version refused more replicas than this.
BEFORE_CAP = 1200


@dataclass(frozen=True)
class Figures:
    request_bytes: int
    response_bytes: int
    in_process_ms: float
    round_trip_ms: float
    peak_rss_mib: float


@contextmanager
def _server() -> Iterator[tuple[int, int]]:
    port = free_port()
    env = os.environ | {"MXJOB_MAX_BODY_BYTES": str(512 * MiB), "MXJOB_LOG_LEVEL": "WARNING"}
    command = [sys.executable, "-m", "app", "serve", "--host", HOST, "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                connection = http.client.HTTPConnection(HOST, port, timeout=2)
                connection.request("GET", "/healthz")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def _in_process_ms(body: bytes, count: int) -> float:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        orjson.dumps(sync(orjson.loads(body), s.NOW))
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _round_trips_ms(port: int, body: bytes, count: int) -> tuple[float, int]:
    connection = http.client.HTTPConnection(HOST, port, timeout=120)
    times, size = [], 0
    headers = {"Content-Type": "application/json"}
    for _ in range(count):
        start = time.perf_counter()
        connection.request("POST", "/sync", body=body, headers=headers)
        answer = connection.getresponse()
        content = answer.read()
        times.append((time.perf_counter() - start) * 1000)
        if answer.status != 200:
            raise RuntimeError(f"answered {answer.status}: {content[:300]!r}")
        size = len(content)
    connection.close()
    return statistics.median(times), size


def measure(size: Size, count: int, config_map: bool) -> Figures:
    body = orjson.dumps(running_job_request(size, config_map))
    in_process = _in_process_ms(body, count)
    with _server() as (port, pid):
        round_trip, response = _round_trips_ms(port, body, count)
        peak = _peak_rss_mib(pid)
    return Figures(len(body), response, in_process, round_trip, peak)


def _bytes(n: int) -> str:
    return f"{n:,}" if n < MiB else f"{n:,} ({n / MiB:.1f} MiB)"


def main() -> None:
    rows = [
        "| job (scheduler/servers/workers) | form | request bytes | response bytes "
        "| in process, ms | round trip, ms | server peak RSS, MiB |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for size, count in JOBS:
        forms = [("before: inline", False), ("after: ConfigMap", True)]
        if size.replicas > BEFORE_CAP:
            forms = forms[1:]
        for label, config_map in forms:
            f = measure(size, count, config_map)
            rows.append(
                f"| {size.label} | {label} | {_bytes(f.request_bytes)} | "
                f"{_bytes(f.response_bytes)} | {f.in_process_ms:,.1f} | "
                f"{f.round_trip_ms:,.1f} | {f.peak_rss_mib:,.0f} |"
            )
            print(rows[-1], file=sys.stderr, flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
