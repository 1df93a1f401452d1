"""The real-MXNet tests' jobs as they ran (tests/e2e/test_mxnet_e2e.py): a job applied and
followed to its end on the real stack, what its pods printed and the kubelet reported, a
timeline of its states, and what its workers must have read and pulled, written out here
independently of the hook."""

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e.jobs import single_worker
from e2e.kubelet import Report
from e2e.runner import JobRun, run_job
from localcluster.rest import Rest
from localcluster.stack import Stack
from tests.support import REPO

JOB = "mxjob-e2e"
JOB_TIMEOUT = 150.0
TYPE_LABEL = "training.kubeflow.org/replica-type"
INDEX_LABEL = "training.kubeflow.org/replica-index"
ATTEMPT_LABEL = "training.kubeflow.org/replica-attempt"


@dataclass
class Run:
    """A finished job: the states it showed, its last status, and the kubelet that ran it."""

    job: JobRun

    @property
    def status(self) -> dict[str, Any]:
        return self.job.status

    def states(self) -> list[str]:
        return self.job.states

    def condition(self, ctype: str) -> dict[str, Any]:
        return self.job.condition(ctype)

    def worker_pods(self) -> list[str]:
        processes = self.job.kubelet.processes.processes
        return [n for n, p in processes.items() if p.labels[TYPE_LABEL] == "worker"]

    def labels(self, pod: str) -> dict[str, str]:
        return self.job.kubelet.processes.processes[pod].labels

    def log(self, pod: str) -> str:
        return self.job.kubelet.log(pod)

    def running(self) -> list[str]:
        return self.job.kubelet.running()

    def json_lines(self, pod: str) -> list[dict[str, Any]]:
        """Every JSON line `pod` printed, in order."""
        return [json.loads(x) for x in self.log(pod).splitlines() if x.startswith("{")]

    def results(self) -> dict[str, dict[str, Any]]:
        """Each worker pod's last JSON line, by pod name, deleted pods included."""
        found = {}
        for name in self.worker_pods():
            lines = self.json_lines(name)
            if lines:
                found[name] = lines[-1]
        return found

    def reported(self, pod: str) -> list[str]:
        """Every status the kubelet wrote for `pod`, in order."""
        return [str(r) for r in self.job.kubelet.reports if r.pod == pod]


@dataclass
class Harness:
    stack: Stack
    kube: Rest
    workdir: Path

    def run(
        self,
        job: dict[str, Any],
        on_report: Callable[[JobRun, Report], None] = lambda run, report: None,
        on_state: Callable[[JobRun, str], None] = lambda run, state: None,
    ) -> Run:
        """`kubectl apply` the job and follow it until it is finished and cleaned up."""
        return Run(
            run_job(self.stack, self.kube, job, self.workdir, JOB_TIMEOUT, on_report, on_state)
        )


class Timeline:
    """Seconds from `kubectl apply` (about) to each state and pod report, printed: the figures
    docs/e2e.md gives for the one-pod jobs."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.events: list[str] = []

    def on_report(self, run: JobRun, report: Report) -> None:
        self.events.append(f"{time.monotonic() - self.began:.1f} s pod {report}")

    def on_state(self, run: JobRun, state: str) -> None:
        self.events.append(f"{time.monotonic() - self.began:.1f} s job {state}")

    def show(self, title: str) -> None:
        print(f"{title}: {'; '.join(self.events)}; done {time.monotonic() - self.began:.1f} s")


def kvstore_result(worker_id: str) -> dict[str, Any]:
    """Two workers push 1 and 2, then 2 and 4: every key must pull 3, then 6."""
    sums = [{"3": 3.0, "5": 3.0, "7": 3.0}, {"3": 6.0, "5": 6.0, "7": 6.0}]
    return {"ok": True, "worker_id": worker_id, "expected": [3.0, 6.0], "pulled": sums}


def by_worker_id(results: dict[str, dict[str, Any]], *keys: str) -> dict[str, dict[str, Any]]:
    return {r["worker_id"]: {k: r[k] for k in keys} for r in results.values()}


def mx_config(port: int, index: int) -> str:
    """MX_CONFIG as a worker of the e2e job must read it: the contract's compact JSON,
    written out here independently of the hook."""
    cluster = {
        "scheduler": [{"port": port, "url": f"{JOB}-scheduler-0"}],
        "server": [{"port": 9091, "url": f"{JOB}-server-{i}"} for i in range(2)],
        "worker": [{"port": 9091, "url": f"{JOB}-worker-{i}"} for i in range(2)],
    }
    labels = {"scheduler": "", "server": "", "worker": ""}
    whole = {"cluster": cluster, "labels": labels, "task": {"index": index, "type": "worker"}}
    return json.dumps(whole, sort_keys=True, separators=(",", ":"))


def single_mx_config(worker: str, label: str) -> str:
    """MX_CONFIG as the single Worker must read it, written out independently of the hook."""
    cluster = {"worker": [{"port": 9091, "url": worker}]}
    task = {"index": 0, "type": "worker"}
    whole = {"cluster": cluster, "labels": {"worker": label}, "task": task}
    return json.dumps(whole, sort_keys=True, separators=(",", ":"))


def readme_worker_log() -> str:
    """The output README's quick start shows for `kubectl logs` of a worker."""
    text = (REPO / "README.md").read_text()
    found = re.search(r"^\$ kubectl logs mnist-dist-cpu-worker-0\n(.*?)^```", text, re.M | re.S)
    assert found, "README's quick start ends with `kubectl logs` of a worker and its output"
    return found.group(1)


def single_worker_reading(text: str) -> dict[str, Any]:
    """A single Worker on a local kvstore whose template's tuner-server-key is `text`."""
    job = single_worker(JOB, "kvstore", ["--kv-store", "local"])
    template = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    template["metadata"] = {"annotations": {"tuner-server-key": text}}
    return job


def only(items: Iterable[str]) -> str:
    found = list(items)
    assert len(found) == 1, found
    return found[0]
