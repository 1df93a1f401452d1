"""`make demo`: MXJobs through the real hook, their pods as real MXNet processes, sync by sync.

Runs the happy path of docs/e2e.md with readable progress: every sync that changed something
(the job's conditions, the pods the hook saw, what it created or deleted), then each worker's
result. Exit status 0 when every job succeeded with correct results.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

from e2e.cluster import ApiServer, ClusterError, Kubelet, preflight
from e2e.driver import Metacontroller, SyncRecord, serve_hook, true_conditions
from e2e.jobs import PROGRAMS, free_port, mxjob

JOB_TIMEOUT = 150.0


def short(pod: str, job: str) -> str:
    return pod.removeprefix(f"{job}-")


class Progress:
    """Prints a sync when it differs from the last one printed, and how many were alike."""

    def __init__(self, job: str) -> None:
        self.job = job
        self.last: tuple[object, ...] | None = None
        self.alike = 0

    def __call__(self, record: SyncRecord) -> None:
        conditions = [(c["type"], c["status"]) for c in record.status["conditions"]]
        seen = (conditions, record.pods, record.changes.created, record.changes.deleted)
        if seen == self.last:
            self.alike += 1
            return
        self.flush()
        self.last = seen
        latest = record.status["conditions"][-1]
        print(f"sync {record.number:3}  {latest['message']}")
        print(f"          conditions  {' '.join(f'{t}={s}' for t, s in conditions)}")
        pods = ", ".join(f"{short(n, self.job)} {p}" for n, p in record.pods.items())
        print(f"          pods seen   {pods or '(none)'}")
        for name in record.changes.created:
            print(f"          created     pod {short(name, self.job)}")
        for child in record.changes.deleted:
            print(f"          deleted     {child.replace(f' {self.job}-', ' ')}")

    def flush(self) -> None:
        if self.alike:
            print(f"          ... {self.alike} more sync(s), nothing changed")
        self.alike = 0


def results(kubelet: Kubelet, job: str) -> dict[str, dict[str, object]]:
    found = {}
    for name, process in kubelet.processes.items():
        lines = [x for x in kubelet.log(name).splitlines() if x.startswith("{")]
        if process.labels.get("training.kubeflow.org/replica-type") == "worker" and lines:
            found[short(name, job)] = json.loads(lines[-1])
    return found


def run_one(hook_url: str, program: str, workdir: Path) -> bool:
    name = f"mxjob-demo-{program}"
    job = mxjob(name, program, free_port())
    print(f"\n== MXJob {name}: Scheduler 1, Server 2, Worker 2, each running {PROGRAMS[program]}")
    kubelet = Kubelet(workdir / "hosts", workdir, timeout=JOB_TIMEOUT)
    controller = Metacontroller(hook_url, job, ApiServer(kubelet, job["metadata"]["uid"]))
    progress = Progress(name)
    try:
        controller.run(timeout=JOB_TIMEOUT, on_sync=progress)
    finally:
        progress.flush()
        controller.close()
        kubelet.shutdown()
    found = results(kubelet, name)
    print("worker results:")
    for pod, result in found.items():
        print(f"  {pod}: {json.dumps(result, sort_keys=True)}")
    print(f"pod logs: {workdir}")
    succeeded = "Succeeded" in true_conditions(controller.parent.get("status"))
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
    with serve_hook(logs / "hook.log") as url:
        print(f"hook: python -m app serve at {url} (log {logs / 'hook.log'})")
        ok = [run_one(url, program, _dir(logs / program)) for program in args.programs or PROGRAMS]
    print("\n" + ("every job succeeded" if all(ok) else "a job did not succeed"))
    return 0 if all(ok) else 1


def _dir(path: Path) -> Path:
    path.mkdir()
    return path


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
