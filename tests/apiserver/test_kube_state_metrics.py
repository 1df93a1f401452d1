"""Job-level metrics on the real stack: the real kube-state-metrics (scripts/go-tools.sh) with the
MXJob configuration and RBAC of manifests/components/kube-state-metrics, reading as its own
ServiceAccount, while MXJobs run, restart, succeed and fail through the real Metacontroller and
hook; each job's series checked against its status, then the recording rules run by promtool on
what it exported."""

import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.apiserver import ApiServer, running, wait_until
from localcluster.crds import install_crds
from localcluster.kubelet import Kubelet
from localcluster.ports import free_port
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.scenario import CREATED, RUNNING, Job, State, manifest, pods, run_job
from tests.support.state_metrics import expected, of_job, recorded, scrape

from .conftest import RealStack

COMPONENT = REPO / "manifests" / "components" / "kube-state-metrics"
ACCOUNT = "system:serviceaccount:kube-system:kube-state-metrics"


def impersonating(server: ApiServer, path: Path, user: str) -> Path:
    """A kubeconfig of the admin that acts as `user`, so that RBAC decides as for `user`."""
    config = yaml.safe_load(server.kubeconfig.read_text())
    for entry in config["users"]:
        entry["user"]["as"] = user
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="module")
def state_metrics(
    apiserver: ApiServer, go_tool: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The real kube-state-metrics with the component's configuration, as the ServiceAccount the
    component's RBAC is for; yields its /metrics URL."""
    binary = go_tool("kube-state-metrics")
    workdir = tmp_path_factory.mktemp("kube-state-metrics")
    install_crds(apiserver)
    apiserver.kubectl("apply", "-f", str(COMPONENT / "rbac.yaml"))
    port, telemetry = free_port(), free_port()
    command = [
        str(binary), f"--kubeconfig={impersonating(apiserver, workdir / 'kubeconfig', ACCOUNT)}",
        "--custom-resource-state-only=true",
        f"--custom-resource-state-config-file={COMPONENT / 'mxjob-state-metrics.yaml'}",
        "--host=127.0.0.1", f"--port={port}",
        "--telemetry-host=127.0.0.1", f"--telemetry-port={telemetry}",
    ]  # fmt: skip
    log = workdir / "kube-state-metrics.log"
    url = f"http://127.0.0.1:{port}/metrics"
    with running(command, log) as process:
        wait_until(lambda: answers(url), process, log, "kube-state-metrics")
        yield url


def single(name: str) -> dict[str, Any]:
    """examples/single-worker.yaml under `name`, its Worker restarted on a signal (ExitCode)."""
    job = manifest("examples/single-worker.yaml")
    job["metadata"]["name"] = name
    job["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    return job


def lives(stack: RealStack, rest: Rest, namespace: str) -> dict[str, Job]:
    """Four jobs: one running, one restarting (SIGKILLed, its replacement pending), one
    succeeded, one failed (exit code 1)."""
    jobs = {name: run_job(stack.apiserver, rest, namespace, single(name)) for name in
            ("running", "restarting", "succeeded", "failed")}  # fmt: skip
    kubelet = Kubelet(rest, namespace)
    for name, code in (("restarting", 137), ("succeeded", 0), ("failed", 1)):
        kubelet.exit(f"{name}-worker-0", code)
    jobs["restarting"].reaches(
        State(
            CREATED | {"Restarting": "MXJobRestarting"},
            pods("Failed", "restarting-worker-0") | pods("Pending", "restarting-worker-0-r1"),
            ("restarting-worker-0",),
        ),
        "replacement asked for",
    )
    succeeded = pods("Succeeded", "succeeded-worker-0")
    jobs["succeeded"].reaches(
        State(CREATED | {"Succeeded": "MXJobSucceeded"}, succeeded, ("succeeded-worker-0",)),
        "succeeded",
    )
    failed = pods("Failed", "failed-worker-0")
    jobs["failed"].reaches(
        State(CREATED | {"Failed": "MXJobFailed"}, failed, ("failed-worker-0",)), "failed"
    )
    jobs["running"].reaches(
        State(RUNNING, pods("Running", "running-worker-0"), ("running-worker-0",)), "running"
    )
    return jobs


# What each job's status must say, whatever else it says: the series the test expects are
# derived from the status, so these pin the status itself. The restarting job's current pod is
# its pending replacement: no replica counts as failed once the hook has seen it.
PINNED = {
    "running": ({"Created": "True", "Running": "True"}, {"active": 1, "succeeded": 0, "failed": 0}),
    "restarting": (
        {"Created": "True", "Restarting": "True"},
        {"active": 0, "succeeded": 0, "failed": 0},
    ),
    "succeeded": (
        {"Created": "True", "Running": "False", "Succeeded": "True"},
        {"active": 0, "succeeded": 1, "failed": 0},
    ),
    "failed": (
        {"Created": "True", "Running": "False", "Failed": "True"},
        {"active": 0, "succeeded": 0, "failed": 1},
    ),
}
# status.restartCount: the SIGKILLed worker's replacement is the one restart; exit code 1 under
# ExitCode is permanent, not a restart.
RESTARTS = {"running": 0, "restarting": 1, "succeeded": 0, "failed": 0}


def test_kube_state_metrics_exports_each_jobs_state_and_the_rules_count_them(
    real_stack: RealStack,
    rest: Rest,
    namespace: str,
    state_metrics: str,
    go_tool: Callable[[str], Path],
    tmp_path: Path,
    figure: Callable[[str], None],
) -> None:
    jobs = lives(real_stack, rest, namespace)
    for name, job in jobs.items():
        conditions, counts = PINNED[name]

        def counting(status: dict[str, Any], counts: dict[str, Any] = counts) -> bool:
            return bool(status.get("replicaStatuses") == {"Worker": counts})

        status = wait_for(
            job.status, f"the status of {name} counting its current pod", until=counting
        )
        assert {c["type"]: c["status"] for c in status["conditions"]} == conditions, name
        assert ("completionTime" in status) == (name in ("succeeded", "failed")), name
        assert status["restartCount"] == RESTARTS[name], name

    start = time.monotonic()
    for job in jobs.values():
        exported_as_its_status_says(state_metrics, job)
    figure(f"kube-state-metrics: every job's series right {time.monotonic() - start:.1f} s "
           "after the last job reached its state")  # fmt: skip

    exported = {k: v for k, v in scrape(state_metrics).items() if ("namespace", namespace) in k[1]}
    restarting = jobs["restarting"]
    gauge = [v for (metric, labels), v in exported.items()
             if metric == "kube_mxjob_status_restart_count" and ("name", "restarting") in labels]  # fmt: skip
    assert gauge == [float(restarting.status()["restartCount"])] == [1.0]
    figure(f"restarting job: status.restartCount {restarting.status()['restartCount']}, "
           f"kube_mxjob_status_restart_count {gauge[0]:g}")  # fmt: skip
    # One job of each state in the namespace, so each count is 1 and created is 4.
    counts = {"created": 4, "running": 1, "restarting": 1, "succeeded": 1, "failed": 1}
    sums = {"restarts": sum(RESTARTS.values())}
    assert recorded(go_tool("promtool"), tmp_path, exported, namespace, counts, sums) == "SUCCESS"


def exported_as_its_status_says(url: str, job: Job) -> None:
    """Wait until kube-state-metrics serves exactly the series the job's status gives."""
    wait_for(
        lambda: (expected(job.get()), of_job(scrape(url), job.namespace, job.name)),
        f"kube-state-metrics' series of {job.name} as its status says",
        until=lambda pair: pair[0] == pair[1],
    )
