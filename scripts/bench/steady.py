"""What one sync of a running 1/100/1000 job costs Metacontroller, under each apply strategy:
`make bench-steady` (`python -m scripts.bench.steady`, about 3 minutes).

For each setting (the shipped flags with Metacontroller's default apply strategy,
`dynamic-apply`, and as shipped, `server-side-apply`), on the real stack with a fresh
Metacontroller: the job is applied and every pod marked Running (the bench plays the kubelet),
then, once it is settled, one worker pod's `Ready` condition is flipped every PACE seconds,
ROUNDS times. Each flip is a pod status change, which makes Metacontroller sync the job once
(a whole sync: the request with every child, the hook, every child compared, the status).
Reported per sync: Metacontroller's CPU (/proc, over the flips, divided by the syncs the hook
answered meanwhile), the request's bytes and the hook's time (its log). With `--pprof`,
Metacontroller's CPU profile over the flips (`go tool pprof -top`) as well. Prints a markdown
table; docs/performance.md quotes it.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from localcluster import kubelet as podstatus
from localcluster.rest import Rest as Kube
from localcluster.rest import path
from localcluster.stack import Stack, real_stack, release_0_1_0_flags, shipped_flags
from scripts.bench.namespaces import mark_pods, new_namespace
from scripts.bench.observe import cpu_seconds, hook_log
from scripts.bench.pprof import CpuProfile, top
from scripts.bench.report import machine, table
from scripts.bench.watch import wait_for, watching
from scripts.bench.workloads import SCENARIOS, mxjob

ROUNDS = 12
PACE = 2.0  # seconds between flips: longer than one sync of this job, so syncs do not merge
BIG = next(s for s in SCENARIOS if s.name.startswith("life 1/100/1000"))


def flip(kube: Kube, namespace: str, pod: str, ready: bool) -> None:
    condition = {"type": "Ready", "status": str(ready), "lastTransitionTime": podstatus.now_stamp()}
    kube.merge_patch(
        path("pods", namespace, pod) + "/status", {"status": {"conditions": [condition]}}
    )


def measure(stack: Stack, kube: Kube, flags: tuple[str, ...], pprof: int) -> dict[str, float]:
    profile = CpuProfile(pprof, stack.workdir / f"steady-{len(flags)}.pb.gz")
    with stack.metacontroller(flags + ((profile.flag,) if pprof else ())) as controller:
        namespace = new_namespace(kube)
        job = mxjob("job-0", BIG)
        job["metadata"]["namespace"] = namespace
        with watching(kube, namespace, BIG) as seen:
            stack.apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump(job))
            deadline = time.monotonic() + BIG.timeout
            for what in ("pods", "services", "condition"):
                wait_for(seen, what, deadline)
            mark_pods(kube, namespace)
            wait_for(seen, "running", deadline)
        time.sleep(10)  # the syncs the marking caused are over
        workers = [
            p["metadata"]["name"]
            for p in kube.list(path("pods", namespace))[0]
            if "-worker-" in p["metadata"]["name"]
        ]
        before = len(hook_log(stack.hook.log, namespace))
        cpu = cpu_seconds(controller.process.pid)
        if pprof:
            profile.start()
        for n in range(ROUNDS):
            flip(kube, namespace, workers[n], ready=n % 2 == 0)
            time.sleep(PACE)
        cpu = cpu_seconds(controller.process.pid) - cpu
        synced = hook_log(stack.hook.log, namespace)[before:]
        if pprof:
            profile.wait()
            print(top(profile.out, stack.binary, 40))
    return {
        "syncs": len(synced),
        "cpu": cpu / max(len(synced), 1),
        "bytes": statistics.median(b for b, _ in synced) if synced else 0.0,
        "hook": statistics.median(t for _, t in synced) if synced else 0.0,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench.steady", description=__doc__)
    parser.add_argument(
        "--pprof",
        type=int,
        default=0,
        metavar="SECONDS",
        help="also profile Metacontroller's CPU for SECONDS from the first flip",
    )
    args = parser.parse_args(argv)
    settings = [
        ("dynamic-apply (the shipped flags but the apply strategy and log level)",
         release_0_1_0_flags()),
        ("server-side-apply (as shipped)", shipped_flags()),
    ]  # fmt: skip
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="mxjob-bench-steady-"))
    rows = []
    with (
        real_stack(workdir, lambda line: print(line, flush=True)) as stack,
        Kube(stack.apiserver, user_agent="mxjob-bench-steady") as kube,
    ):
        for name, flags in settings:
            got = measure(stack, kube, flags, args.pprof)
            print(f"{name}: {got}", flush=True)
            rows.append([
                name, f"{got['syncs']:.0f}", f"{got['cpu'] * 1000:,.0f}",
                f"{got['bytes'] / 1e6:.2f}", f"{got['hook']:.0f}",
            ])  # fmt: skip
    print(f"\n`make bench-steady` in {time.monotonic() - started:,.0f} s, {ROUNDS} pod status "
          f"changes {PACE:.0f} s apart on a running 1/100/1000 job (2,203 children)\n")  # fmt: skip
    print(
        "\n".join(
            machine("Metacontroller, the hook, etcd, kube-apiserver and the bench share them")
        )
    )
    print()
    header = ["Metacontroller", "syncs", "Metacontroller CPU per sync, ms",
              "request per sync, MB (median)", "hook time per sync, ms (median)"]  # fmt: skip
    print("\n".join(table(header, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
