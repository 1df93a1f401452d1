"""Events as children of the MXJob (manifests/components/events), measured on a stack of its
own: a loopback API server with a short `--event-ttl`, the real Metacontroller with the events
child type and a short resync period, the real hook. What it shows, in order:
1. `kubectl describe mxjob` lists the job's story (Created, Running);
2. at rest, syncs go on and write nothing: the API server's audit log records no create,
   update, patch or delete in the job's namespace (of the MXJob or its status, a pod, a
   Service, the ConfigMap or an Event, no-op writes included);
3. an Event the API server expires while the hook still wants it is recreated by Metacontroller
   (so the hook must stop wanting an Event before the cluster's TTL: app/integrations/events.py);
4. once the Events are older than the hook's limit, Metacontroller deletes them, and nothing is
   written again however many TTLs pass.
All of it under Metacontroller's defaults and as with-metacontroller ships it (`[defaults]`,
`[shipped]`)."""

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.integrations.events import MAX_AGE_SECONDS
from localcluster.apiserver import ApiServer, Binaries, cluster
from localcluster.crds import install_crds
from localcluster.kubelet import Kubelet
from localcluster.realstack import (
    Hook,
    composite_controller,
    install_controller,
    run_metacontroller,
    serve_hook,
)
from localcluster.rest import Rest
from localcluster.stack import shipped_flags
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.kustomize import shipped_access

# Seconds, the API server's --event-ttl here (1 h by default): longer than the job's story up to
# the end of its first stretch at rest (about 20 s on a busy machine), which no expiry may cut.
EVENT_TTL = 30
RESYNC = 2  # seconds, the CompositeController's resyncPeriodSeconds here (none as shipped)
AT_REST = 8  # seconds watched for writes at rest: three resyncs or more
# Under the shipped flags, the informers' replay (`--cache-flush-interval`, 0 as shipped) is put
# back, without which Metacontroller ignores RESYNC: the syncs at rest that must write nothing
# come from it.
RESYNCING = ("--cache-flush-interval=1h",)
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


@dataclass(frozen=True)
class Stack:
    server: ApiServer
    workdir: Path
    audit: Path  # the API server's audit log: every request, a JSON line each


@pytest.fixture(scope="module", params=("defaults", "shipped"))
def stack(
    request: pytest.FixtureRequest,
    k8s_binaries: Binaries,
    metacontroller_binary: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    """Under Metacontroller's defaults (dynamic apply) and the flags with-metacontroller ships
    (server-side apply, which writes each Event with an apply patch)."""
    workdir = tmp_path_factory.mktemp(f"events-stack-{request.param}")
    flags = (*shipped_flags(), *RESYNCING) if request.param == "shipped" else ()
    audit = workdir / "audit.log"
    ttl = (f"--event-ttl={EVENT_TTL}s",)
    with (
        fail_on_cluster_error(),
        cluster(k8s_binaries, workdir, audit_log=audit, flags=ttl) as server,
    ):
        install_crds(server)
        install_controller(server, "http://127.0.0.1:9")  # Metacontroller's CRDs; no hook yet
        kubeconfig = shipped_access(server, "events")
        with run_metacontroller(
            metacontroller_binary, server, workdir, flags, kubeconfig
        ) as running:
            yield Stack(server, workdir, audit)
            assert running.refusals() == [], "a request outside the shipped role"


def with_events(hook_url: str) -> dict[str, Any]:
    """Our CompositeController with the events component's child type, resyncing every RESYNC s."""
    controller = composite_controller(hook_url, events=True)
    controller["spec"]["resyncPeriodSeconds"] = RESYNC
    return controller


@contextmanager
def hook_at(stack: Stack, clock: datetime | None) -> Iterator[Hook]:
    """The real hook (its clock frozen at `clock` if given), and the controller pointed at it."""
    env = {"MXJOB_FROZEN_CLOCK": clock.isoformat()} if clock else {}
    with serve_hook(stack.workdir, env) as hook:
        stack.server.apply(with_events(hook.url))
        yield hook


def syncs(hook: Hook) -> float:
    with urllib.request.urlopen(f"{hook.url}/metrics", timeout=5) as response:
        text = response.read().decode()
    found = re.search(r'^mxjob_sync_requests_total\{outcome="ok"\} (\S+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


@dataclass(frozen=True)
class Job:
    server: ApiServer
    namespace: str
    name: str

    def events(self) -> dict[str, dict[str, Any]]:
        selector = f"training.kubeflow.org/job-name={self.name}"
        listed = self.server.get("events", f"-n={self.namespace}", f"-l={selector}")["items"]
        return {e["metadata"]["name"]: e for e in listed}

    def reasons(self) -> list[str] | None:
        found = sorted(e["reason"] for e in self.events().values())
        return found or None

    def versions(self) -> dict[str, tuple[str, str]]:
        """uid and resourceVersion of the job, its pods and its Events: any write changes one."""
        objects = [self.server.get("mxjob", self.name, f"-n={self.namespace}")]
        objects += self.server.get("pods", f"-n={self.namespace}")["items"]
        objects += list(self.events().values())
        return {
            f"{o['kind']}/{o['metadata']['name']}": (
                o["metadata"]["uid"],
                o["metadata"]["resourceVersion"],
            )
            for o in objects
        }


def submit(stack: Stack) -> Job:
    namespace = "events"
    stack.server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    manifest = yaml.safe_load((REPO / "examples" / "single-worker.yaml").read_text())
    manifest["metadata"]["namespace"] = namespace
    stack.server.apply(manifest)
    return Job(stack.server, namespace, manifest["metadata"]["name"])


def described(job: Job) -> list[list[str]]:
    """Type and reason of each Event `kubectl describe mxjob` lists, in its order."""
    out = job.server.kubectl("describe", "mxjob", job.name, f"-n={job.namespace}").stdout
    print(out.split("Events:")[1])
    return [line.split()[:2] for line in out.split("Events:")[1].splitlines() if "MXJob" in line]


def settle(job: Job) -> None:
    """Wait until a resync period and more pass without a write: a transition stamped twice
    (a sync that saw the status from before its last write) is undone a sync later."""

    def quiet() -> bool:
        before = job.versions()
        time.sleep(RESYNC + 1)  # the thing under test: a resync period that writes nothing
        return job.versions() == before

    wait_for(quiet, "the job at rest", 30)


def writes(audit: Path, namespace: str, offset: int) -> list[str]:
    """The write requests (create, update, patch, delete) in `namespace` that the audit log
    records past `offset`, as `verb user resource/subresource name code`: whatever the
    request changed or not, to whatever object of the namespace."""
    found = []
    with audit.open("rb") as log:
        log.seek(offset)
        for line in log:
            entry = json.loads(line)
            target = entry.get("objectRef") or {}
            if entry["verb"] in WRITES and target.get("namespace") == namespace:
                resource = "/".join(
                    filter(None, (target.get("resource"), target.get("subresource")))
                )
                found.append(
                    f"{entry['verb']} {entry['user']['username']} {resource} "
                    f"{target.get('name', '')} {entry.get('responseStatus', {}).get('code')}"
                )
    return found


def at_rest(stack: Stack, job: Job, hook: Hook, seconds: float) -> dict[str, Any]:
    """What was written in the job's namespace while `seconds` passed: the write requests the
    API server's audit log records (no-op writes too), and the uid and resourceVersion before
    and after of each object that changed; after checking that the hook was synced 3 times or
    more (the audit log is written before each answer: it is complete when `after` is read)."""
    before, synced, offset = job.versions(), syncs(hook), stack.audit.stat().st_size
    time.sleep(seconds)  # the thing under test: a stretch of time at rest, whatever happens
    after = job.versions()
    assert syncs(hook) - synced >= 3, f"only {syncs(hook) - synced} syncs in {seconds} s"
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    found: dict[str, Any] = {k: (before.get(k), after.get(k)) for k in sorted(changed)}
    requests = writes(stack.audit, job.namespace, offset)
    print(f"\nat rest for {seconds} s: {len(requests)} write requests in {job.namespace}")
    return found | ({"audit": requests} if requests else {})


def uids(job: Job) -> dict[str, str]:
    return {n: e["metadata"]["uid"] for n, e in job.events().items()}


def tell_the_story(stack: Stack, hook: Hook, rest: Rest) -> Job:
    """A job through Created, Running (then a stretch at rest: nothing written) and Succeeded,
    each told by an Event that `kubectl describe` lists."""
    job = submit(stack)
    # Exactly one: a sync that saw the status from before its last write may stamp the
    # transition again, and that second Event is deleted a sync later.
    assert wait_for(lambda: job.reasons() == ["MXJobCreated"], "the Created Event", 30)
    kubelet = Kubelet(rest, job.namespace)
    # The Created Event is a child like the pod, and Metacontroller may write it first.
    worker = f"{job.name}-worker-0"
    wait_for(lambda: worker in kubelet.phases(), "the Worker's pod", 30)
    kubelet.run(worker)
    story = ["MXJobCreated", "MXJobRunning"]
    assert wait_for(lambda: job.reasons() == story, "the Running Event", 30)
    settle(job)
    assert described(job) == [["Normal", "MXJobCreated"], ["Normal", "MXJobRunning"]]

    # At rest: the hook keeps answering with the same Events; nothing is written.
    assert at_rest(stack, job, hook, AT_REST) == {}

    # Success: Running is no longer True, but its Event stays in the story.
    kubelet.exit(f"{job.name}-worker-0", 0)
    story = ["MXJobCreated", "MXJobRunning", "MXJobSucceeded"]
    assert wait_for(lambda: job.reasons() == story, "the Succeeded Event", 30)
    settle(job)
    told = [["Normal", "MXJobCreated"], ["Normal", "MXJobRunning"], ["Normal", "MXJobSucceeded"]]
    assert described(job) == told
    return job


def expire(job: Job) -> None:
    """The API server expires every Event after the TTL. Metacontroller recreates those of the
    conditions that are still True; the Running one is history and stays gone."""
    first = uids(job)
    current = {n for n, e in job.events().items() if e["reason"] != "MXJobRunning"}

    def expired_and_recreated() -> bool:
        now = uids(job)
        return set(now) == current and all(now[n] != first[n] for n in current)

    started = time.monotonic()
    wait_for(expired_and_recreated, "the current Events recreated", EVENT_TTL + 30)
    print(
        f"\nafter the {EVENT_TTL} s TTL ({time.monotonic() - started:.0f} s): recreated "
        f"{sorted(current)}, gone {sorted(set(first) - current)}"
    )


def test_events_tell_the_story_without_writes_at_rest_and_age_out_before_the_ttl(
    stack: Stack,
) -> None:
    with hook_at(stack, None) as hook, Rest(stack.server) as rest:
        job = tell_the_story(stack, hook, rest)
        expire(job)

    # The hook's clock past MAX_AGE_SECONDS: the Events are no longer wanted and are deleted.
    later = datetime.now(UTC) + timedelta(seconds=MAX_AGE_SECONDS + 60)
    with hook_at(stack, later) as hook:
        assert wait_for(lambda: job.events() == {}, "the old Events deleted", 30)
        assert (
            at_rest(stack, job, hook, EVENT_TTL + 5) == {}
        )  # longer than a TTL: nothing comes back
