"""Where the time goes after a pod changes: `make bench-latency`.

On the real stack (etcd, kube-apiserver with an audit log, the hook, the real Metacontroller
v4.17.2), for each scenario and setting, several times: apply one MXJob, wait for its children,
mark every pod Running (16 at a time, the Scheduler last: it decides), wait for `Running`, let
the job settle, mark the Scheduler Succeeded, wait for `Succeeded`. For each of the two
deciding pod writes, the time to the MXJob status write that carries the condition, in parts:

- `earlier sync`: a sync of the same job that was still running when the pod was written
  (Metacontroller's work queue runs one sync of a key at a time), until its last request;
- `to the hook`: the rest until the hook received the sync that saw the pod (informer
  delivery, work queue, Metacontroller reading its cache and encoding the request);
- `hook`: the hook answering (its log's `duration_ms`);
- `children`: Metacontroller decoding the answer, comparing and applying children (its
  requests in that window are counted);
- `reading the job`: its status update starts with a GET of the job (`AtomicStatusUpdate`),
  then compares the status;
- `status write`: the `mxjobs/status` update, received to answered.

Times from the audit log (the pod's status write, Metacontroller's requests and the MXJob
status update, microseconds; the update's body, at level `Request`, tells which one carries
the condition) and the hook's log (each answer's duration; its line can come tens of ms late,
so each answer is placed at the latest at the GET that ends its sync, `placed`). With
`--trace` Metacontroller runs with `--zap-log-level=4` (not the shipped level: it logs more),
and its `Sync` line splits `to the hook` into the wait for a worker and the worker's own work
before it calls the hook.

    .venv/bin/python -m scripts.bench.latency                  # typical and 1/100/1000, 5 times
    .venv/bin/python -m scripts.bench.latency --trace          # with the worker's share
    .venv/bin/python -m scripts.bench.latency --scenarios small --repeat 1  # the smoke test's
    .venv/bin/python -m scripts.bench.latency --replica-services all,scheduler
        # every Service, then the Scheduler's only, job by job (docs/behaviour.md)
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from localcluster.apiserver import cluster, obtain_binaries
from localcluster.crds import install_crds
from localcluster.realstack import install_controller, obtain_metacontroller, serve_hook
from localcluster.rest import Rest as Kube
from localcluster.rest import path
from localcluster.stack import Stack, install_adoption_guard, overlay_access, shipped_flags
from scripts.bench.e2e import TYPE_LABEL, cleanup, mark_pods, new_namespace
from scripts.bench.observe import Seen, audit_events, json_lines, wait_for, watching
from scripts.bench.report import machine, table
from scripts.bench.workloads import SCENARIOS, Scenario, mxjob

AGENT = "mxjob-bench-latency"
# The MXJob status updates with their body (which condition they carry); the rest, metadata.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {
            "level": "Request",
            "verbs": ["update"],
            "resources": [{"group": "kubeflow.org", "resources": ["mxjobs/status"]}],
        },
        {"level": "Metadata"},
    ],
}
PARTS = ("earlier sync", "to the hook", "hook", "children", "reading the job", "status write")
TRACE_PARTS = ("waiting for a worker", "worker before the hook")
QUIET = 1.5  # seconds without a hook call or a request of Metacontroller: the job settled
DEFAULT_SCENARIOS = ("typical", "large")
REPLICA_SERVICES = "training.kubeflow.org/replica-services"


@dataclass(frozen=True)
class Sync:
    """One sync the hook answered, wall-clock seconds."""

    received: float
    answered: float


@dataclass
class Breakdown:
    """One deciding pod write to the status write that shows its condition, in seconds."""

    condition: str
    total: float
    parts: dict[str, float]
    watched: float  # the same latency by the bench's clock and watch, for a cross-check
    requests_after: Counter[str] = field(default_factory=Counter)
    trace: dict[str, float] = field(default_factory=dict)
    # `kubectl apply` to the job's last pod or Service by the bench's watch: every child made.
    all_children: float = 0.0


def stamp(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 time (the audit log's, the hook's)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def namespace_events(log: Path, offset: int, namespace: str) -> list[dict[str, Any]]:
    """The audit events since `offset` on objects in `namespace`."""
    return [
        event
        for event in audit_events(log, offset)
        if (event.get("objectRef") or {}).get("namespace") == namespace
    ]


def hook_syncs(log: Path, namespace: str, job: str) -> list[Sync]:
    """The job's syncs from the hook's log: a line per answer, at its end, with its duration."""
    out = []
    for entry in json_lines(log):
        mine = (entry.get("namespace"), entry.get("job")) == (namespace, job)
        if mine and entry.get("status") == 200 and "duration_ms" in entry:
            answered = stamp(entry["time"])
            out.append(Sync(answered - float(entry["duration_ms"]) / 1000, answered))
    return sorted(out, key=lambda s: s.received)


def sync_starts(log: Path, namespace: str, job: str) -> list[float]:
    """When a Metacontroller worker took the job (its `Sync` line at level 4)."""
    ref = {"name": job, "namespace": namespace}
    return [
        float(entry["ts"])
        for entry in json_lines(log)
        if entry.get("msg") == "Sync" and entry.get("object") == ref
    ]


def _is(event: dict[str, Any], resource: str, subresource: str | None, name: str) -> bool:
    ref = event.get("objectRef") or {}
    return (ref.get("resource"), ref.get("subresource"), ref.get("name")) == (
        resource,
        subresource,
        name,
    )


def _carries(event: dict[str, Any], condition: str) -> bool:
    status = (event.get("requestObject") or {}).get("status") or {}
    return any(
        c.get("type") == condition and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def placed(syncs: list[Sync], reads: list[float]) -> list[Sync]:
    """Each sync as Metacontroller saw it. Every sync ends with a GET of the job before its
    status update (`AtomicStatusUpdate`), so the n-th GET follows the n-th answer. The hook
    logs an answer once it is sent, up to tens of ms late on a busy machine: the answer was in
    at the latest at its GET (the duration, `perf_counter`'s, stays the hook's)."""
    if len(reads) != len(syncs):
        raise ValueError(f"{len(syncs)} hook answers but {len(reads)} GETs of the job")
    out = []
    for sync, read in zip(syncs, reads, strict=True):
        shift = max(sync.answered - read, 0.0)
        out.append(Sync(sync.received - shift, sync.answered - shift))
    return out


def breakdown(
    events: list[dict[str, Any]],
    syncs: list[Sync],
    starts: list[float],
    pod: str,
    job: str,
    condition: str,
    after: float,
    watched: float,
) -> Breakdown:
    """The parts of one latency: `pod`'s first status write received after `after` to the
    first `mxjobs/status` update of `job` that carries `condition` True."""
    write = next(
        e for e in events
        if _is(e, "pods", "status", pod) and e["userAgent"].startswith(AGENT)
        and stamp(e["requestReceivedTimestamp"]) >= after
    )  # fmt: skip
    t0 = stamp(write["stageTimestamp"])
    status = next(
        e for e in events
        if _is(e, "mxjobs", "status", job) and e["verb"] == "update"
        and e["userAgent"].startswith("metacontroller") and _carries(e, condition)
        and stamp(e["requestReceivedTimestamp"]) >= t0
    )  # fmt: skip
    received, done = stamp(status["requestReceivedTimestamp"]), stamp(status["stageTimestamp"])
    ours = [e for e in events if e["userAgent"].startswith("metacontroller")]
    reads = sorted(
        stamp(e["requestReceivedTimestamp"])
        for e in ours
        if _is(e, "mxjobs", None, job) and e["verb"] == "get"
    )
    syncs = placed(syncs, reads)
    index = max(i for i, r in enumerate(reads) if r <= received)
    deciding, read = syncs[index], reads[index]
    busy_until = t0
    if index > 0:
        earlier = syncs[index - 1]
        busy_until = max(
            [earlier.answered]
            + [
                stamp(e["stageTimestamp"])
                for e in ours
                if earlier.answered <= stamp(e["requestReceivedTimestamp"]) < deciding.received
            ]
        )
    waited = min(max(busy_until - t0, 0.0), max(deciding.received - t0, 0.0))
    window = [
        e for e in ours if deciding.answered <= stamp(e["requestReceivedTimestamp"]) < received
    ]
    parts = {
        "earlier sync": waited,
        "to the hook": deciding.received - t0 - waited,
        "hook": deciding.answered - deciding.received,
        "children": read - deciding.answered,
        "reading the job": received - read,
        "status write": done - received,
    }
    requests_after = Counter(
        f"{e['verb']} {e['objectRef'].get('resource')}" for e in window if e["verb"] != "get"
    )
    trace = {}
    taken = [s for s in starts if s <= deciding.received]
    if taken:
        start = taken[-1]
        trace = {
            "waiting for a worker": start - t0 - waited,
            "worker before the hook": deciding.received - start,
        }
    return Breakdown(condition, done - t0, parts, watched, requests_after, trace)


class Requests:
    """How many requests Metacontroller made in a namespace, read from the audit log as it
    grows."""

    def __init__(self, log: Path, namespace: str) -> None:
        self.log, self.namespace = log, namespace
        self.offset, self.count = log.stat().st_size, 0

    def __call__(self) -> int:
        with self.log.open("rb") as lines:
            lines.seek(self.offset)
            for line in lines:
                if not line.endswith(b"\n"):
                    break
                self.offset += len(line)
                event = json.loads(line)
                ours = event.get("userAgent", "").startswith("metacontroller")
                self.count += ours and (event.get("objectRef") or {}).get("namespace") == (
                    self.namespace
                )
        return self.count


def wait_quiet(stack: Stack, namespace: str, job: str, requests: Requests, deadline: float) -> None:
    """Until the hook has answered no sync of the job, and Metacontroller made no request in
    its namespace, for QUIET seconds (a sync that creates children goes on long after the
    hook answered it)."""
    seen, since = (-1, -1), time.monotonic()
    while time.monotonic() < deadline:
        now = (len(hook_syncs(stack.hook.log, namespace, job)), requests())
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= QUIET:
            return
        time.sleep(0.2)
    raise TimeoutError(f"the job {namespace}/{job} never settled")


def scheduler_pod(kube: Kube, namespace: str) -> str:
    pods, _ = kube.list(path("pods", namespace))
    return next(
        str(p["metadata"]["name"])
        for p in pods
        if p["metadata"]["labels"].get(TYPE_LABEL) == "scheduler"
    )


def every_child(seen: Seen, services: int, deadline: float) -> float:
    """Seconds from the apply to the moment the watch had seen every pod and `services`
    Services (noticed within ms: the watch threads notify on each event)."""
    with seen.changed:
        while "pods" not in seen.at or len(seen.services) < services:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(seen.services)} of {services} Services seen")
            seen.changed.wait(timeout=1)
        return time.monotonic() - seen.start


def one_job(
    stack: Stack,
    kube: Kube,
    audit_log: Path,
    scenario: Scenario,
    trace: Path | None,
    services: str = "all",
) -> list[Breakdown]:
    """One job's Running and Succeeded, each from its deciding pod write; `services`: the
    job's replica-services annotation, none for `all`."""
    namespace = new_namespace(kube)
    job = mxjob("job-0", scenario)
    job["metadata"]["namespace"] = namespace
    if services != "all":
        job["metadata"]["annotations"] = {REPLICA_SERVICES: services}
    name = job["metadata"]["name"]
    offset = audit_log.stat().st_size
    requests = Requests(audit_log, namespace)
    marked: dict[str, float] = {}
    with watching(kube, namespace, scenario) as seen:
        deadline = seen.start + scenario.timeout
        stack.apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump(job))
        for what in ("pods", "condition"):
            wait_for(seen, what, deadline)
        all_children = every_child(seen, scenario.pods if services == "all" else 1, deadline)
        wait_quiet(stack, namespace, name, requests, deadline)
        marked["Running"] = time.time()
        mark_pods(kube, namespace)
        seen.mark("marked")
        wait_for(seen, "running", deadline)
        wait_quiet(stack, namespace, name, requests, deadline)
        marked["Succeeded"] = time.time()
        mark_pods(kube, namespace, exited=True)
        seen.mark("exited")
        wait_for(seen, "succeeded", deadline)
        wait_quiet(stack, namespace, name, requests, deadline)
    pod = scheduler_pod(kube, namespace)
    events = namespace_events(audit_log, offset, namespace)
    syncs = hook_syncs(stack.hook.log, namespace, name)
    starts = sync_starts(trace, namespace, name) if trace else []
    out = []
    for condition, ends in (
        ("Running", ("marked", "running")),
        ("Succeeded", ("exited", "succeeded")),
    ):
        after = marked[condition]
        watched = seen.at[ends[1]] - seen.at[ends[0]]
        out.append(breakdown(events, syncs, starts, pod, name, condition, after, watched))
        out[-1].all_children = all_children
    cleanup(kube, namespace)
    return out


@contextmanager
def latency_stack(workdir: Path, progress: Callable[[str], None]) -> Iterator[tuple[Stack, Path]]:
    """The real stack of `localcluster.stack.real_stack`, its audit log at AUDIT_POLICY."""
    binaries = obtain_binaries(progress)
    binary = obtain_metacontroller(progress)
    audit_log = workdir / "audit.log"
    policy = workdir / "latency-audit-policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY, sort_keys=False))
    flags = (
        f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}",
        "--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0",
    )  # fmt: skip
    with ExitStack() as scope:
        progress("starting etcd and kube-apiserver on loopback")
        server = scope.enter_context(cluster(binaries, workdir, flags=flags))
        install_crds(server)
        hook = scope.enter_context(serve_hook(workdir))
        install_controller(server, hook.url)
        install_adoption_guard(server)
        yield Stack(server, hook, binary, workdir, overlay_access(server)), audit_log


def settings(names: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    shipped = shipped_flags()
    known = {
        "shipped": ("shipped (server-side-apply)", shipped),
        "dynamic": (
            "shipped but dynamic-apply",
            tuple(f for f in shipped if not f.startswith("--apply-strategy=")),
        ),
    }
    return [known[n] for n in names]


def median_row(label: str, setting: str, found: list[Breakdown], trace: bool) -> list[str]:
    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:,.0f}"

    parts = [ms([b.parts[p] for b in found]) for p in PARTS]
    if trace:
        parts += [ms([b.trace.get(p, float("nan")) for b in found]) for p in TRACE_PARTS]
    busy = sum(b.parts["earlier sync"] > 0 for b in found)
    requests: Counter[str] = Counter()
    for b in found:
        requests.update(b.requests_after)
    after = ", ".join(f"{v / len(found):g} {k}" for k, v in sorted(requests.items())) or "none"
    return [
        label, setting, str(len(found)), ms([b.total for b in found]),
        f"{min(b.total for b in found) * 1000:,.0f}-{max(b.total for b in found) * 1000:,.0f}",
        *parts, f"{busy}/{len(found)}", after, ms([b.watched for b in found]),
        ms([b.all_children for b in found]),
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


def cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench.latency", description=__doc__)
    parser.add_argument(
        "--scenarios",
        default=",".join(DEFAULT_SCENARIOS),
        help="comma-separated scenario names or their first word (default: typical,large)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="jobs per scenario and setting")
    parser.add_argument(
        "--settings",
        default="shipped",
        help="comma-separated: shipped (server-side-apply), dynamic (dynamic-apply)",
    )
    parser.add_argument(
        "--trace", action="store_true", help="Metacontroller at --zap-log-level=4 (see above)"
    )
    parser.add_argument("--json", type=Path, help="also write every breakdown here")
    parser.add_argument(
        "--replica-services",
        default="all",
        help=f"comma-separated values of the jobs' {REPLICA_SERVICES} annotation (all: none), "
        "taken in turn job by job within each scenario, e.g. all,scheduler",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = cli(argv)
    names = args.scenarios.split(",")
    scenarios = [
        s for s in SCENARIOS if not s.life and (s.name in names or s.name.split(" ")[0] in names)
    ]
    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started:6.0f} s] {line}", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="mxjob-bench-latency-"))
    rows, dump = [], []
    kinds = args.replica_services.split(",")
    load = Path("/proc/loadavg").read_text().split()[:3]
    with latency_stack(workdir, progress) as (stack, audit_log):
        kube = Kube(stack.apiserver, user_agent=AGENT)
        try:
            for label, flags in settings(args.settings.split(",")):
                extra = ("--zap-log-level=4", "--zap-time-encoding=epoch") if args.trace else ()
                with stack.metacontroller(flags + extra) as controller:
                    trace = controller.log if args.trace else None
                    one_job(stack, kube, audit_log, SCENARIOS[0], trace)  # warm-up: not measured
                    for scenario in scenarios:
                        found: dict[str, list[Breakdown]] = {v: [] for v in kinds}
                        for n, value in ((n, v) for n in range(args.repeat) for v in kinds):
                            got = one_job(stack, kube, audit_log, scenario, trace, value)
                            for b in got:
                                progress(
                                    f"{scenario.name}, {with_services(label, value)}, "
                                    f"run {n + 1}: {b.condition} "
                                    f"{b.total * 1000:.0f} ms "
                                    + " ".join(f"{k}={v * 1000:.1f}" for k, v in b.parts.items())
                                    + f" after={dict(b.requests_after)} trace={b.trace}"
                                )
                            found[value] += got
                            dump += [{"scenario": scenario.name, "setting": label, "run": n,
                                      "replica_services": value} | vars(b)
                                     for b in got]  # fmt: skip
                        for condition in ("Running", "Succeeded"):
                            for value in kinds:
                                mine = [b for b in found[value] if b.condition == condition]
                                row = f"{scenario.name}, {condition}"
                                setting = with_services(label, value)
                                rows.append(median_row(row, setting, mine, args.trace))
        finally:
            kube.close()
    command = " ".join(["python -m scripts.bench.latency", *argv])
    seconds = time.monotonic() - started
    end = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\n`make bench-latency` (`{command}`) in {seconds:,.0f} s; load average (1, 5, 15 "
          f"min) at the start {' '.join(load)}, at the end {' '.join(end)}\n")  # fmt: skip
    print("\n".join(machine("Metacontroller, the hook, etcd, kube-apiserver and the bench")))
    print()
    print("\n".join(table(header(args.trace), rows)))
    print(f"\nlogs: {workdir}")
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
