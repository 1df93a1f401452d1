"""The MXJobs `make demo` and tests/e2e submit: what a user would `kubectl apply`."""

from typing import Any

import yaml

from e2e.images import CHECKS_IMAGE, EXAMPLES

# The checks of ours, run from the repository root (CHECKS_IMAGE).
CHECKS = {"kvstore": "e2e/kvstore_check.py"}
# What each program's job runs: a check, or the quick start's example as it is.
PROGRAMS = CHECKS | {"train": "examples/dist-cpu.yaml (train.py of the examples image)"}
# The user's own env, passed through by the hook: ps-lite logs who joined the cluster and when.
USER_ENV = [{"name": "PS_VERBOSE", "value": "1"}]


def template(program: str, args: list[str], port: int | None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "mxnet",
        "image": CHECKS_IMAGE,
        "command": ["python", CHECKS[program]],
        "env": USER_ENV,
    }
    if args:
        container["args"] = args
    if port is not None:
        container["ports"] = [{"name": "mxjob-port", "containerPort": port}]
    return {"spec": {"containers": [container]}}


def example(file: str, name: str, port: int, listener: str = "Scheduler") -> dict[str, Any]:
    """examples/`file` as a user applies it, renamed, the replica the others connect to
    (`listener`) on `port` (see `mxjob`) and every container with USER_ENV."""
    job: dict[str, Any] = yaml.safe_load((EXAMPLES / file).read_text())
    job["metadata"]["name"] = name
    for rtype, spec in job["spec"]["mxReplicaSpecs"].items():
        for container in spec["template"]["spec"]["containers"]:
            container["env"] = [*container.get("env", []), *USER_ENV]
            if rtype == listener:
                container["ports"] = [{"name": "mxjob-port", "containerPort": port}]
    return job


def tune(name: str, tracker_port: int, tuner_args: list[str] | None = None) -> dict[str, Any]:
    """examples/tune.yaml as a user applies it, renamed, its TunerTracker on `tracker_port` (a
    free port of this shared host, as the Scheduler's in `mxjob`), the Tuner's args replaced
    by `tuner_args` if given."""
    job = example("tune.yaml", name, tracker_port, "TunerTracker")
    if tuner_args is not None:
        (tuner,) = job["spec"]["mxReplicaSpecs"]["Tuner"]["template"]["spec"]["containers"]
        tuner["args"] = tuner_args
    return job


def mxjob(
    name: str,
    program: str,
    scheduler_port: int,
    worker_policy: str = "Never",
    worker_args: list[str] | None = None,
) -> dict[str, Any]:
    """Scheduler 1, Server 2, Worker 2, every replica running `program`; for `train`, the
    quick start's examples/dist-cpu.yaml itself.

    The scheduler listens on `scheduler_port` on this shared host, so the job names it as its
    `mxjob-port` instead of the default 9091; the hook passes it on in `DMLC_PS_ROOT_PORT`.
    """
    if program == "train":
        return example("dist-cpu.yaml", name, scheduler_port)
    replicas = {
        "Scheduler": (1, "Never", template(program, [], scheduler_port)),
        "Server": (2, "Never", template(program, [], None)),
        "Worker": (2, worker_policy, template(program, worker_args or [], None)),
    }
    specs = {
        rtype: {"replicas": n, "restartPolicy": policy, "template": tmpl}
        for rtype, (n, policy, tmpl) in replicas.items()
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name},
        "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": specs},
    }


def single_worker(name: str, program: str, args: list[str]) -> dict[str, Any]:
    """Worker 1 and nothing else, as examples/single-worker.yaml: training in one pod.

    The job has no Scheduler, so the hook gives the pod `DMLC_PS_ROOT_URI=""` and
    `DMLC_PS_ROOT_PORT=0`, and the Worker's outcome is the job's. `restartPolicy: Never`
    (the example's `OnFailure` restarts the container in place, which the local kubelet
    does not model).
    """
    worker = {"replicas": 1, "restartPolicy": "Never", "template": template(program, args, None)}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name},
        "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": {"Worker": worker}},
    }
