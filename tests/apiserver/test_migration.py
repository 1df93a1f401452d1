"""Switching a cluster that has training-operator's MXJob CRD, as
docs/migrating-from-training-operator.md says, on a stack of its own: the real API server with
kube-controller-manager's garbage collector (scripts/kube-controllers), training-operator v1.7's
`kubeflow.org_mxjobs` CRD as released (tests/fixtures/training-operator), jobs and pods stored
as training-operator wrote them, then the page's commands (read from the page) and the real
hook and Metacontroller. What it shows:
1. the page's check (`kubectl get mxjobs -A -o yaml | mxjob-controller render -`) passes these jobs;
2. deleting a running job (step 2) deletes its pods with it: training-operator's controller
   ownerReferences are still on them;
3. the overlay's `kubectl apply --server-side --force-conflicts` (step 4) replaces the CRD in
   place (over training-operator's client-side install it would without the flag too): the
   MXJobs stay, same uid, status as training-operator wrote it but for `lastReconcileTime`,
   which our CRD does not declare and the API server prunes when it reads a stored job;
4. a finished job gets no children and keeps its status; its old pods and Service are released
   (no ownerReference left) and stay, as the page says;
5. a job left running (the page says not to) keeps its old pod, released and still running;
   the hook's pod and Service have the same names, and Metacontroller's creates of them are
   refused as already existing (a log line, no SyncError event, under Metacontroller's default
   apply strategy); the job stays Running with no replica counted active;
6. a new job is built and `kubectl get mxj -A` lists every job with its STATE; the page's
   clean-up by label removes a finished job's old pods and Services and leaves the job."""

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.apiserver import ApiServer, Binaries, cluster
from localcluster.crds import MXJOB_CRD
from localcluster.realstack import Hook, run_metacontroller, serve_hook
from localcluster.rest import Rest
from localcluster.waiting import wait_for
from tests.support import FIXTURES
from tests.support.cluster_errors import fail_on_cluster_error
from tests.support.controllers import GARBAGE_COLLECTOR, kube_controllers
from tests.support.documented import shell_block
from tests.support.kustomize import shipped_access
from tests.support.migration import (
    PAGE,
    exists,
    install_metacontroller_crds,
    listing_and_delete,
    point_at_hook,
    shell,
    sync_errors,
)
from tests.support.scenario import CREATED, State, apply_job, expected_children, manifest, pods
from tests.support.stored_jobs import NAMESPACE, store_job

OLD_CRD = FIXTURES / "training-operator" / "kubeflow.org_mxjobs.yaml"


# Like test_migration_v1_8.py's Stack: each guide's stack holds what its tests read.
@dataclass(frozen=True)
class Stack:
    server: ApiServer
    binaries: Binaries
    metacontroller: Path
    workdir: Path


@pytest.fixture(scope="module")
def stack(
    k8s_binaries: Binaries,
    metacontroller_binary: Path,
    go_tool: Callable[[str], Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("migration")
    with (
        fail_on_cluster_error(),
        cluster(k8s_binaries, workdir) as server,
        kube_controllers(
            go_tool("kube-controllers"), server, workdir / "gc.log", GARBAGE_COLLECTOR
        ),
    ):
        yield Stack(server, k8s_binaries, metacontroller_binary, workdir)


def switching_commands() -> list[str]:
    """The page's steps 1, 2 and 4 (the render check, the listing and delete, the install)."""
    needles = ("mxjob-controller render", "kubectl delete mxjob", "kubectl apply --server-side")
    return [shell_block(PAGE, needle) for needle in needles]


def without_reconcile_time(status: dict[str, Any]) -> dict[str, Any]:
    assert "lastReconcileTime" in status
    return {k: v for k, v in status.items() if k != "lastReconcileTime"}


def established(server: ApiServer, name: str) -> bool:
    conditions = server.get("crd", name).get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def syncs(hook: Hook, name: str) -> Callable[[], int]:
    return lambda: hook.syncs(NAMESPACE, name)


def owners(server: ApiServer) -> dict[str, Any]:
    """The ownerReferences of every pod and Service in the namespace, by `kind/name`."""
    return {
        f"{kind}/{o['metadata']['name']}": o["metadata"].get("ownerReferences")
        for kind in ("pod", "service")
        for o in server.get(kind, f"-n={NAMESPACE}")["items"]
    }


def refusals(log: Path, job: str) -> set[str]:
    """The kinds of child Metacontroller logged it could not create for `job` because an
    object of that name already exists."""
    found = set()
    for line in log.read_text(errors="replace").splitlines():
        if "child object already exists" in line and f'"name":"{job}"' in line:
            found.add(json.loads(line)["child"]["kind"])
    return found


def gone(server: ApiServer, *targets: str) -> bool:
    return not any(exists(server, target, NAMESPACE) for target in targets)


def test_switching_keeps_the_jobs_and_releases_training_operators_pods(stack: Stack) -> None:
    server = stack.server
    # training-operator's install (its README: `kubectl apply -k`, client-side).
    server.kubectl("apply", "-f", str(OLD_CRD))
    wait_for(lambda: established(server, "mxjobs.kubeflow.org"), "the old CRD established", 60)
    server.kubectl("create", "namespace", NAMESPACE)
    finished = store_job(server, "to-finished", "Succeeded")
    running = store_job(server, "to-running", "Running")
    store_job(server, "to-deleted", "Running")
    old_pod = server.get("pod", "to-running-worker-0", f"-n={NAMESPACE}")
    step1, step2, step4 = switching_commands()

    # 1. The render check passes the three jobs.
    checked = shell(stack, step1)
    assert checked.returncode == 0, checked.stderr
    deleting_a_job_deletes_its_pods(stack, step2)
    the_overlay_replaces_the_crd_in_place(stack, step4, [finished, running])

    # The hook and Metacontroller, the overlay's CompositeController pointed at the hook.
    with serve_hook(stack.workdir) as hook:
        point_at_hook(server, hook.url)
        # As the ServiceAccount of the role install.md gives a Metacontroller of one's own.
        access = shipped_access(server)
        with (
            run_metacontroller(
                stack.metacontroller, server, stack.workdir, (), access
            ) as controller,
            Rest(server) as rest,
        ):
            released(stack, hook)
            settled = the_finished_job_keeps_its_status(stack, finished)
            the_job_left_running_keeps_its_pod(stack, old_pod)
            a_new_job_is_built_and_listed(stack, rest)
            the_cleanup_by_label(stack, settled)
            assert controller.refusals() == [], "a request outside the shipped role"


def deleting_a_job_deletes_its_pods(stack: Stack, step2: str) -> None:
    """2. The listing shows which jobs still run; deleting one deletes its pods with it."""
    listing, delete = listing_and_delete(step2, "to-deleted", NAMESPACE)
    listed = shell(stack, listing).stdout
    assert re.search(r"to-running\s+Running", listed), listed
    assert shell(stack, delete).returncode == 0
    wait_for(lambda: gone(stack.server, "pod/to-deleted-worker-0", "service/to-deleted-worker-0"),
             "the deleted job's pod and Service collected", 60)  # fmt: skip


def the_overlay_replaces_the_crd_in_place(
    stack: Stack, step4: str, stored: list[dict[str, Any]]
) -> None:
    """4. Metacontroller's CRDs (its install), then the overlay as the page applies it: the
    CRD is ours, the `stored` jobs stay (same uid, same status but for `lastReconcileTime`)."""
    server = stack.server
    install_metacontroller_crds(server)
    server.kubectl("create", "namespace", "kubeflow")  # a Kubeflow cluster has it
    command = step4.split("#")[0].strip()
    unforced = shell(stack, command.replace(" --force-conflicts", "") + " --dry-run=server")
    # Over a client-side install (training-operator's), no field conflicts even without the
    # flag: kubectl only warns that it will move the last-applied annotation next time.
    assert unforced.returncode == 0, unforced.stderr
    applied = shell(stack, command)
    assert applied.returncode == 0, applied.stderr
    crd = server.get("crd", "mxjobs.kubeflow.org")
    ours = yaml.safe_load(MXJOB_CRD.read_text())
    assert crd["spec"]["versions"] == ours["spec"]["versions"], "the CRD is ours now"
    for job in stored:
        kept = server.get("mxjob", job["metadata"]["name"], f"-n={NAMESPACE}")
        assert kept["metadata"]["uid"] == job["metadata"]["uid"]
        # Our CRD does not declare training-operator's `lastReconcileTime`: the API server
        # prunes it when it reads the stored job; the rest of the status is as it was written.
        assert kept["status"] == without_reconcile_time(job["status"])


def released(stack: Stack, hook: Hook) -> None:
    """Both jobs synced, and training-operator's pods and Services released: no owner."""
    for name in ("to-finished", "to-running"):
        wait_for(syncs(hook, name), f"{name} synced", until=lambda n: n >= 2)
    everything = {
        f"{kind}/{name}-worker-0": None
        for kind in ("pod", "service")
        for name in ("to-finished", "to-running")
    }
    wait_for(
        lambda: owners(stack.server),
        "training-operator's pods and Services released",
        until=lambda found: found == everything,
    )
    print(f"\nafter the switch, no owner: {sorted(everything)}")


def the_finished_job_keeps_its_status(stack: Stack, finished: dict[str, Any]) -> dict[str, Any]:
    """4. The finished job: status kept, nothing created. Returns the status it settled on."""
    server = stack.server
    after = server.get("mxjob", "to-finished", f"-n={NAMESPACE}")
    # The hook's status adds its own bookkeeping (observedGeneration, zero counts).
    settled, before = after["status"], finished["status"]
    for key in ("conditions", "startTime", "completionTime"):
        assert settled[key] == before[key], key
    assert settled["replicaStatuses"]["Worker"]["succeeded"] == 1
    children = server.get("pods,services,configmaps", f"-n={NAMESPACE}",
                          f"-l=controller-uid={finished['metadata']['uid']}")  # fmt: skip
    assert children["items"] == [], "nothing created for the finished job"
    assert (
        server.get("pod", "to-finished-worker-0", f"-n={NAMESPACE}")["status"]["phase"]
        == "Succeeded"
    )
    return dict(settled)


def the_job_left_running_keeps_its_pod(stack: Stack, old_pod: dict[str, Any]) -> None:
    """5. The job left running: its pod stays; the hook's same-named children refused."""
    server = stack.server
    log = next(stack.workdir.glob("metacontroller-*.log"))
    refused = wait_for(
        lambda: refusals(log, "to-running"),
        "Metacontroller's create of to-running's pod refused",
        until=lambda found: {"Pod", "Service"} <= found,
    )
    running_pod = server.get("pod", "to-running-worker-0", f"-n={NAMESPACE}")
    assert running_pod["metadata"]["uid"] == old_pod["metadata"]["uid"]
    assert running_pod["status"]["phase"] == "Running", "left alone"
    assert sync_errors(server, NAMESPACE, "to-running") == [], "no SyncError: only a log line"
    status = server.get("mxjob", "to-running", f"-n={NAMESPACE}")["status"]
    assert status["replicaStatuses"]["Worker"]["active"] == 0
    assert {c["type"]: c["status"] for c in status["conditions"]}["Running"] == "True"
    print(f"to-running: creates refused as already existing: {sorted(refused)}")


def a_new_job_is_built_and_listed(stack: Stack, rest: Rest) -> None:
    """5 (the page's step 5). A new job is built; the listing shows every job."""
    stack.server.kubectl("create", "namespace", "fresh")
    example = manifest("examples/dist-cpu.yaml")
    new = apply_job(stack.server, rest, "fresh", example)
    names = tuple(expected_children(example))
    new.reaches(State(CREATED, pods("Pending", *names), names), "a new job created")
    listed = shell(stack, "kubectl get mxj -A").stdout
    print(listed)
    assert re.search(r"to-finished\s+Succeeded", listed), listed
    assert re.search(r"to-running\s+\S+", listed), listed
    assert re.search(rf"{example['metadata']['name']}\s+Created", listed), listed


def the_cleanup_by_label(stack: Stack, settled: dict[str, Any]) -> None:
    """The page's clean-up of a finished job's old pods and Services, by label: the job stays
    as it was."""
    (cleanup,) = re.findall(r"`(kubectl delete pods,services -l [^`]+)`", PAGE.read_text())
    cleanup = cleanup.replace("<name>", "to-finished").replace("<namespace>", NAMESPACE)
    assert shell(stack, cleanup).returncode == 0
    assert gone(stack.server, "pod/to-finished-worker-0", "service/to-finished-worker-0")
    assert stack.server.get("mxjob", "to-finished", f"-n={NAMESPACE}")["status"] == settled
