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

from e2e import trained
from e2e.cluster import ClusterError, preflight
from e2e.jobs import PROGRAMS, mxjob
from e2e.kubelet import Report
from e2e.runner import JobRun, run_job
from localcluster.ports import free_port
from localcluster.rest import Rest
from localcluster.stack import Stack, real_stack, shipped_flags

JOB_TIMEOUT = 180.0
# The epochs examples/dist-cpu.yaml asks its workers for.
EPOCHS = 10
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


def worker_logs(run: JobRun) -> dict[str, str]:
    """Each worker pod's output, by its name within the job, deleted pods included."""
    processes = run.kubelet.processes.processes
    return {
        name.removeprefix(run.name + "-"): run.kubelet.log(name)
        for name, process in processes.items()
        if process.labels.get(TYPE_LABEL) == "worker"
    }


def kvstore_result(log: str) -> tuple[bool, str]:
    """The check's verdict and its last JSON line."""
    lines = [x for x in log.splitlines() if x.startswith("{")]
    if not lines:
        return False, " no result"
    result = json.loads(lines[-1])
    return bool(result.get("ok")), " " + json.dumps(result, sort_keys=True)


def train_result(log: str) -> tuple[bool, str]:
    """Whether the worker learned as the quick start promises, and its epochs."""
    epochs = "".join(f"\n    {m.group(0)}" for m in trained.EPOCH.finditer(log))
    return trained.learned(log, EPOCHS), epochs or " no epoch"


RESULTS = {"kvstore": kvstore_result, "train": train_result}


def run_one(stack: Stack, kube: Rest, program: str, workdir: Path) -> bool:
    name = f"mxjob-demo-{program}"
    job = mxjob(name, program, free_port())
    print(f"\n== MXJob {name}: Scheduler 1, Server 2, Worker 2, running {PROGRAMS[program]}")
    print(f"   kubectl apply -f {workdir / (name + '.yaml')}")
    progress = Progress()
    run = run_job(stack, kube, job, workdir, JOB_TIMEOUT, progress.report, progress.state)
    found = {pod: RESULTS[program](log) for pod, log in worker_logs(run).items()}
    print("worker results:")
    for pod, (_, shown) in found.items():
        print(f"  {pod}:{shown}")
    print(f"pod logs: {workdir}")
    succeeded = run.states[-1:] == ["Succeeded"]
    return succeeded and len(found) == 2 and all(ok for ok, _ in found.values())


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
