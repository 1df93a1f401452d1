"""Metacontroller replicas under leader election on a real stack, for
tests/apiserver/test_metacontroller_ha.py: the cluster they share (its replicas and every pod
event), which replica leads, a leader killed as on a lost node and the standby that takes
over, and the server-side applies the API server's audit log records."""

import json
import os
import re
import signal
import threading
import time
import urllib.request
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from localcluster.apiserver import ApiServer
from localcluster.realstack import Metacontroller, run_metacontroller
from localcluster.rest import Rest
from localcluster.stack import leader_election_flags, shipped_flags
from localcluster.waiting import wait_for

LEASE = "metacontroller"  # --leader-election-id, in --leader-election-namespace
TAKEOVER = 60.0  # Metacontroller's lease is 15 s (controller-runtime's default), retry 2 s


@dataclass
class Cluster:
    server: ApiServer
    rest: Rest
    binary: Path
    workdir: Path
    audit: Path
    processes: ExitStack
    kubeconfig: Path  # Metacontroller's ServiceAccount's, under the shipped role
    replicas: list[Metacontroller] = field(default_factory=list)
    events: list[tuple[str, str, str, str]] = field(default_factory=list)  # type, ns, name, uid
    namespaces: list[str] = field(default_factory=list)  # the lives' so far

    def start_replica(self) -> Metacontroller:
        flags = (*shipped_flags(), *leader_election_flags())
        replica = self.processes.enter_context(
            run_metacontroller(self.binary, self.server, self.workdir, flags, self.kubeconfig)
        )
        self.replicas.append(replica)
        return replica

    def leader(self) -> Metacontroller | None:
        leading = [r for r in self.replicas if r.process.poll() is None and leads(r)]
        assert len(leading) <= 1, "two leaders at once"
        return leading[0] if leading else None


def leads(replica: Metacontroller) -> bool:
    """The replica holds the lease: controller-runtime's `leader_election_master_status` is 1
    on its metrics endpoint."""
    try:
        text = fetch(replica.metrics_url)
    except OSError:
        return False
    return (
        re.search(rf'^leader_election_master_status{{name="{LEASE}"}} 1$', text, re.M) is not None
    )


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def watch_pods(rest: Rest, events: list[tuple[str, str, str, str]], stop: threading.Event) -> None:
    """Every pod event from now on: ADDED, DELETED, and MODIFIED with a deletionTimestamp."""
    _, version = rest.list("/api/v1/pods")
    for event in rest.watch("/api/v1/pods", version, stop):
        meta = event["object"]["metadata"]
        kind = event["type"]
        if kind == "MODIFIED" and meta.get("deletionTimestamp"):
            kind = "DELETING"
        if kind != "MODIFIED":
            events.append((kind, meta["namespace"], meta["name"], meta["uid"]))


@dataclass(frozen=True)
class Failover:
    at: float  # monotonic time of the kill
    leader: Metacontroller


def kill_leader(ha: Cluster) -> Failover:
    """SIGKILL the leading replica (its lease is not released, as on a lost node)."""
    leader = ha.leader()
    assert leader is not None, "no replica leads"
    os.killpg(leader.process.pid, signal.SIGKILL)
    at = time.monotonic()
    leader.process.wait(timeout=30)
    return Failover(at, leader)


def taken_over(ha: Cluster, failover: Failover) -> tuple[Metacontroller, float]:
    """The replica that leads after `failover`, and the seconds from the kill to its lease."""
    leader = wait_for(ha.leader, "a standby takes the lease", TAKEOVER, lambda r: r is not None)
    assert leader is not None
    assert leader is not failover.leader
    return leader, time.monotonic() - failover.at


def applies(audit: Path, since: datetime) -> Counter[tuple[str, str, str]]:
    """Metacontroller's server-side applies (forced apply patches) that the API server received
    after `since`, by (resource, namespace, name). By when each was received, not where its
    line is: a request's line is written when it completes, after a watch may have seen its
    object."""
    found: Counter[tuple[str, str, str]] = Counter()
    with audit.open() as lines:
        for line in lines:
            if "force=true" not in line:
                continue
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if (
                event["verb"] == "patch"
                and str(event.get("userAgent", "")).startswith("metacontroller/")
                and datetime.fromisoformat(event["requestReceivedTimestamp"]) > since
            ):
                found[(ref["resource"], ref["namespace"], ref["name"])] += 1
    return found
