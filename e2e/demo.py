"""`make demo`: real MXNet jobs trained through the real Metacontroller, from `kubectl apply`.

Starts etcd and kube-apiserver on loopback, the hook, and Metacontroller v4.17.2 with the flags
the one-command install ships; installs our CRD and CompositeController as shipped (the webhook
pointed at the hook); then, for each program, `kubectl apply`s an MXJob (Scheduler 1, Server 2,
Worker 2) and prints what happens: the job's states, and each pod the local kubelet runs as a
real MXNet process (e2e/kubelet.py). Ends with the workers' results and where the logs are.
Exit status 0 when every job succeeded with correct results. Needs root (docs/e2e.md).
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from e2e.cluster import ClusterError, preflight
from e2e.jobs import PROGRAMS, mxjob
from e2e.kubelet import Report
from e2e.runner import JobRun, run_job
from localcluster.ports import free_port
from localcluster.rest import Rest
from localcluster.stack import Stack, real_stack, shipped_flags

JOB_TIMEOUT = 180.0
TYPE_LABEL = "training.kubeflow.org/replica-type"


class Progress:
    """Prints, with the seconds since the job was applied, each state and each pod status."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def line(self, text: str) -> None:
        print(f"  {time.monotonic() - self.started:6.1f} s  {text}", flush=True)

    def report(self, run: JobRun, report: Report) -> None:
        self.line(f"pod {report.pod.removeprefix(run.name + '-'):12} {report}")

    def state(self, run: JobRun, state: str) -> None:
        message = next((c["message"] for c in run.status["conditions"] if c["type"] == state), "")
        self.line(f"MXJob {state}: {message}")


def results(run: JobRun) -> dict[str, dict[str, object]]:
    found = {}
    for name, process in run.kubelet.processes.processes.items():
        lines = [x for x in run.kubelet.log(name).splitlines() if x.startswith("{")]
        if process.labels.get(TYPE_LABEL) == "worker" and lines:
            found[name.removeprefix(run.name + "-")] = json.loads(lines[-1])
    return found


def run_one(stack: Stack, kube: Rest, program: str, workdir: Path) -> bool:
    name = f"mxjob-demo-{program}"
    job = mxjob(name, program, free_port())
    print(f"\n== MXJob {name}: Scheduler 1, Server 2, Worker 2, each running {PROGRAMS[program]}")
    print(f"   kubectl apply -f {workdir / (name + '.yaml')}")
    progress = Progress()
    run = run_job(stack, kube, job, workdir, JOB_TIMEOUT, progress.report, progress.state)
    found = results(run)
    print("worker results:")
    for pod, result in found.items():
        print(f"  {pod}: {json.dumps(result, sort_keys=True)}")
    print(f"pod logs: {workdir}")
    succeeded = run.states[-1:] == ["Succeeded"]
    return succeeded and len(found) == 2 and all(r.get("ok") for r in found.values())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.demo", description=__doc__)
    parser.add_argument("programs", nargs="*", metavar="|".join(PROGRAMS), help="default: all")
    args = parser.parse_args(argv)
    unknown = set(args.programs) - set(PROGRAMS)
    if unknown:
        parser.error(f"unknown program(s) {sorted(unknown)}; choose from {list(PROGRAMS)}")
    try:
        preflight()
    except ClusterError as err:
        print(f"cannot run the demo: {err}", file=sys.stderr)
        return 2
    logs = Path(tempfile.mkdtemp(prefix="mxjob-demo-"))
    print(f"logs: {logs}")
    flags = shipped_flags()
    with real_stack(logs, lambda line: print(line, flush=True)) as stack:
        kube = Rest(stack.apiserver, user_agent="mxjob-demo")
        print(f"metacontroller {' '.join(flags)} (log in {logs})")
        with stack.metacontroller(flags):
            print(
                f"kubectl: {stack.apiserver.kubectl_path} --kubeconfig={stack.apiserver.kubeconfig}"
            )
            ok = [run_one(stack, kube, p, _dir(logs / p)) for p in args.programs or PROGRAMS]
        kube.close()
    print("\n" + ("every job succeeded" if all(ok) else "a job did not succeed"))
    print(f"logs: {logs} (hook, metacontroller, kube-apiserver, etcd; one folder per job)")
    return 0 if all(ok) else 1


def _dir(path: Path) -> Path:
    path.mkdir()
    return path


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
