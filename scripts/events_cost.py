"""What declaring Event children costs Metacontroller: `python -m scripts.events_cost`.

With the events child type (manifests/components/events), Metacontroller watches and caches
every Event of the cluster, not only the jobs'. On a loopback API server with the real
Metacontroller, this creates EVENTS unrelated Events (as kubelets and schedulers make them),
then declares the child type, then creates as many again, and prints Metacontroller's resident
memory and CPU seconds after each step (from /proc) as a Markdown table for docs/behaviour.md.
Loopback only, bounded by the count; about ten minutes on 2 cores (kubectl applies the Events).
"""

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from localcluster.apiserver import ApiServer, cluster
from localcluster.binaries import obtain_binaries
from localcluster.crds import install_crds
from localcluster.realstack import (
    composite_controller,
    install_controller,
    obtain_metacontroller,
    run_metacontroller,
)

NAMESPACE = "noise"
BATCH = 500
SETTLE = 10  # seconds for Metacontroller's informers to take in what was just written
TICKS = os.sysconf("SC_CLK_TCK")


def event(n: int) -> dict[str, Any]:
    """An Event about a pod, as the kubelet writes one (about 600 bytes stored)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"noise-{n}.{n:016x}", "namespace": NAMESPACE},
        "involvedObject": {"kind": "Pod", "name": f"noise-{n}", "namespace": NAMESPACE},
        "reason": "Pulled",
        "message": f'Container image "registry.example/app:{n}" already present on machine',
        "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-11-23T10:00:00Z",
        "lastTimestamp": "2026-11-23T10:00:00Z",
        "count": 1,
    }


def create(server: ApiServer, start: int, count: int) -> None:
    for first in range(start, start + count, BATCH):
        batch = [event(n) for n in range(first, min(first + BATCH, start + count))]
        server.apply(*batch)


def usage(pid: int) -> tuple[float, float]:
    """Resident MiB and CPU seconds (user + system) of a process."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return rss_kib / 1024, (int(fields[11]) + int(fields[12])) / TICKS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000, help="unrelated Events per step")
    args = parser.parse_args()
    binaries = obtain_binaries(print)
    metacontroller = obtain_metacontroller(print)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, cluster(binaries, Path(tmp)) as server:
        install_crds(server)
        install_controller(server, "http://127.0.0.1:9")
        server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        with run_metacontroller(metacontroller, server, Path(tmp)) as running:
            pid = running.process.pid

            def step(what: str) -> None:
                time.sleep(SETTLE)
                rss, cpu = usage(pid)
                rows.append(f"| {what} | {rss:.0f} | {cpu:.1f} |")

            step("started, pods and services declared")
            create(server, 0, args.events)
            step(f"{args.events} unrelated Events created")
            server.apply(composite_controller("http://127.0.0.1:9", events=True))
            step("events child type declared")
            create(server, args.events, args.events)
            step(f"{args.events} more unrelated Events created")
            server.apply(composite_controller("http://127.0.0.1:9"))
    print("| step | Metacontroller RSS (MiB) | its CPU seconds so far |")
    print("| --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
