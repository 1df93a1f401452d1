"""The real Metacontroller and the hook when things go wrong or nothing happens: an invalid
spec (refused at admission; reported by the hook where the CRD's rules are off), the hook down
for a while, and a steady minute in which nothing is written."""

import time
from collections.abc import Callable
from typing import Any

import yaml

from localcluster.kubelet import Kubelet
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support.resources import crd_without_rules
from tests.support.scenario import (
    CREATED,
    RUNNING,
    Job,
    State,
    apply_job,
    content,
    manifest,
    pods,
    run_job,
)

from .conftest import RealStack

DIST = "mnist-dist-cpu"
ALL = tuple(f"{DIST}-{r}" for r in ("scheduler-0", "server-0", "server-1", "worker-0", "worker-1"))
NEEDS_SCHEDULER = "jobMode MXTrain needs a Scheduler"
STEADY_SECONDS = 60
# Long enough for Metacontroller's per-object backoff to grow past 10 s (5 ms, doubling).
OUTAGE_SECONDS = 20
# A job that wrote nothing for this long after Running has settled (see `settled`).
QUIET_SECONDS = 5


def without_scheduler() -> dict[str, Any]:
    """examples/dist-cpu.yaml without its Scheduler: Servers need one
    (docs/behaviour.md#validation)."""
    job = manifest("examples/dist-cpu.yaml")
    del job["spec"]["mxReplicaSpecs"]["Scheduler"]
    return job


def invalid_spec(job: Job) -> dict[str, Any] | None:
    """The job's True condition with reason MXJobInvalidSpec, if any."""
    conditions = job.status().get("conditions") or []
    return next(
        (c for c in conditions if c["reason"] == "MXJobInvalidSpec" and c["status"] == "True"),
        None,
    )


def test_admission_refuses_an_invalid_job(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    refused = real_stack.apiserver.kubectl(
        "apply", f"--namespace={namespace}", "-f", "-",
        input=yaml.safe_dump(without_scheduler()), check=False,
    )  # fmt: skip

    assert refused.returncode != 0
    assert f'The MXJob "{DIST}" is invalid' in refused.stderr
    assert NEEDS_SCHEDULER in refused.stderr
    assert rest.get(f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs")["items"] == []


def test_hook_fails_an_invalid_new_job_without_creating_anything(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    server = real_stack.apiserver
    with crd_without_rules(server, namespace, without_scheduler()):
        job = apply_job(server, rest, namespace, without_scheduler())

        job.reaches(State({"Failed": "MXJobInvalidSpec"}, {}, ()), "reported invalid")

    condition = invalid_spec(job)
    assert condition is not None
    assert "spec.mxReplicaSpecs.Scheduler" in condition["message"]
    assert job.children() == {}


def version(children: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {key: child["metadata"]["resourceVersion"] for key, child in children.items()}


def test_invalid_edit_of_a_running_job_keeps_its_children(
    real_stack: RealStack, rest: Rest, namespace: str
) -> None:
    """Nothing is created, deleted or written (the hook answers each child with what
    Metacontroller last applied to it). Once the spec is valid again the job runs on with the
    very same children."""
    server = real_stack.apiserver
    with crd_without_rules(server, namespace, without_scheduler()):
        job = run_job(server, rest, namespace, manifest("examples/dist-cpu.yaml"))
        before = job.children()

        job.apply(without_scheduler())

        condition = wait_for(lambda: invalid_spec(job), "the invalid spec reported")
        assert condition is not None
        assert "spec.mxReplicaSpecs.Scheduler" in condition["message"]
        after = job.children()
        assert {k: content(c) for k, c in after.items()} == {
            k: content(c) for k, c in before.items()
        }
        assert version(after) == version(before), "no child written"

        job.apply(manifest("examples/dist-cpu.yaml"))

        job.reaches(State(RUNNING, pods("Running", *ALL), ALL), "valid again, running on")
        assert invalid_spec(job) is None
        assert {k: content(c) for k, c in job.children().items()} == {
            k: content(c) for k, c in before.items()
        }


def test_hook_outage_deletes_nothing_and_converges_when_it_is_back(
    real_stack: RealStack, rest: Rest, namespace: str, figure: Callable[[str], None]
) -> None:
    job = run_job(real_stack.apiserver, rest, namespace, manifest("examples/dist-cpu.yaml"))
    kubelet = Kubelet(rest, namespace)
    children = {key: child["metadata"]["uid"] for key, child in job.children().items()}
    killed = pods("Running", *ALL[:4]) | {f"{DIST}-worker-1": "Failed"}

    with real_stack.hook.down():
        started = time.monotonic()
        kubelet.exit(f"{DIST}-worker-1", 137)
        failed = wait_for(
            lambda: job.warnings("SyncError"),
            f"Metacontroller's failed syncs over {OUTAGE_SECONDS} s",
            timeout=OUTAGE_SECONDS + 60,
            until=lambda n: n >= 3 and time.monotonic() - started >= OUTAGE_SECONDS,
        )
        down = time.monotonic() - started
        assert job.state() == State(RUNNING, killed, ALL), "nothing written while the hook is down"
        assert {k: c["metadata"]["uid"] for k, c in job.children().items()} == children
    back = time.monotonic()

    replaced = killed | {f"{DIST}-worker-1-r1": "Pending"}
    job.reaches(State(CREATED | {"Restarting": "MXJobRestarting"}, replaced, ALL), "converged")
    figure(
        f"hook down {down:.1f} s ({failed} failed syncs): converged "
        f"{time.monotonic() - back:.1f} s after it came back"
    )


def settled(job: Job) -> tuple[dict[str, str], float]:
    """The job's versions once nothing has written to it for QUIET_SECONDS, and how long that
    took. run_job returns when the status counts every replica active, but Metacontroller may
    still write once more: it syncs from its informer cache, which can lag its own last status
    write under load, and it writes the status computed from the older one over the live
    object (`AtomicStatusUpdate` compares with a fresh GET), so a condition set in that sync
    gets the later second as its time. The sync that follows its own write's watch event reads
    the latest status and settles it."""
    started = time.monotonic()
    versions, since = job.versions(), started

    def quiet_for() -> float:
        nonlocal versions, since
        now, current = time.monotonic(), job.versions()
        if current != versions:
            versions, since = current, now
        return now - since

    wait_for(quiet_for, "no write for a while", until=lambda quiet: quiet >= QUIET_SECONDS)
    return versions, time.monotonic() - started


def test_a_steady_minute_costs_nothing(
    real_stack: RealStack, rest: Rest, namespace: str, figure: Callable[[str], None]
) -> None:
    """At rest nothing happens: no periodic resync (none in the CompositeController, and the
    shipped `--cache-flush-interval=0`), so a running job with no timer gets no sync in a
    minute, and neither the MXJob nor any child is written."""
    job = run_job(real_stack.apiserver, rest, namespace, manifest("examples/dist-cpu.yaml"))
    before, settling = settled(job)
    syncs, started = real_stack.hook.syncs(namespace, DIST), time.monotonic()

    waited = wait_for(
        lambda: time.monotonic() - started,
        "a minute at rest",
        timeout=STEADY_SECONDS + 60,
        until=lambda seconds: seconds >= STEADY_SECONDS,
    )

    answered = real_stack.hook.syncs(namespace, DIST) - syncs
    # Under Metacontroller's defaults its informers replay every job every 30 minutes
    # (`--cache-flush-interval`), which this minute may catch once: a sync that writes nothing.
    assert answered <= (0 if real_stack.shipped else 1), "no sync at rest"
    assert job.versions() == before
    figure(
        f"steady state (settled {settling:.1f} s after run_job): {answered} syncs in {waited:.0f} s, "
        f"0 writes to the MXJob and its {len(before) - 1} children"
    )
