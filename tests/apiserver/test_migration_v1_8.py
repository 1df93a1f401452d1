"""docs/migrating-from-training-operator.md, followed to the letter on a cluster running the
real training-operator v1.8.1 (localcluster/training_operator.py: its release manifests,
its binary out of cluster with its Deployment's arguments, its webhook registered), on an API
server of its own with an audit log and kube-controller-manager's garbage collector, then the
real hook and Metacontroller with the with-metacontroller overlay's flags and adoption guard.
What it shows, in order:
1. training-operator runs MXJobs: it makes the pods of the jobs submitted, and the test's
   kubelet runs them (one finishes, two run);
2. while it is down its webhook entry refuses every create and delete of an MXJob;
3. the page's steps 1 to 3 for v1.8 (render check, listing and delete, the webhook entry
   deleted, the Deployment patched with the `--enable-scheme` values, training-operator
   restarted with them) and step 4 (the overlay, Metacontroller and the hook): our controller
   makes a new job's pods, the finished job keeps its status, the job left running keeps its
   pods, released, none deleted or made twice, and training-operator writes nothing to any
   MXJob, pod or Service from its restart on (the audit log);
4. without the webhook step (its entry restored, as a re-apply of its manifests would), MXJob
   writes are refused even while it runs;
5. without the `--enable-scheme` step (every kind enabled), training-operator and
   Metacontroller both write the pods of a new job."""

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import training_operator as to
from localcluster.apiserver import ApiServer, Binaries, ClusterError, cluster
from localcluster.kubelet import Kubelet
from localcluster.ports import free_port
from localcluster.realstack import Metacontroller, run_metacontroller, serve_hook
from localcluster.rest import Rest
from localcluster.stack import install_adoption_guard, shipped_flags
from localcluster.waiting import wait_for
from tests.support.controllers import GARBAGE_COLLECTOR, kube_controllers
from tests.support.documented import shell_block
from tests.support.kustomize import shipped_access
from tests.support.migration import (
    PAGE,
    conditions,
    exists,
    install_metacontroller_crds,
    listing_and_delete,
    pod_names,
    pod_writers,
    point_at_hook,
    shell,
    submit,
    sync_errors,
    touched,
)
from tests.support.resources import CONTROLLER_UID

LEGACY = "legacy"
MXJOB_WEBHOOK_CALL = f'failed calling webhook "{to.MXJOB_WEBHOOK}"'
ALL_KINDS = {"tfjob", "pytorchjob", "xgboostjob", "mpijob", "paddlejob", "mxjob"}
Figure = Callable[[str], None]


@dataclass(frozen=True)
class Stack:
    server: ApiServer
    binaries: Binaries
    rest: Rest
    release: to.Release
    metacontroller: Path
    workdir: Path
    audit: Path


@pytest.fixture(scope="module")
def stack(
    k8s_binaries: Binaries,
    metacontroller_binary: Path,
    go_tool: Callable[[str], Path],
    progress: Callable[[str], None],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("migration-v1-8")
    audit = workdir / "audit.log"
    failure = None
    try:
        release = to.obtain(progress)
        with (
            cluster(k8s_binaries, workdir, audit_log=audit) as server,
            kube_controllers(
                go_tool("kube-controllers"), server, workdir / "gc.log", GARBAGE_COLLECTOR
            ),
            Rest(server) as rest,
            to.certificates(),
        ):
            yield Stack(server, k8s_binaries, rest, release, metacontroller_binary, workdir, audit)
    except ClusterError as error:
        failure = str(error)
    finally:
        to.unmount()
    if failure is not None:
        pytest.fail(failure, pytrace=False)


def test_the_guide_on_training_operator_v1_8_1(stack: Stack, figure: Figure) -> None:
    server, release, workdir = stack.server, stack.release, stack.workdir
    port = free_port()
    to.install(server, release, port)
    assert to.deployment_args(server) == [], "as released: every kind enabled"
    server.kubectl("create", "namespace", LEGACY)
    old, old_uids = training_operator_runs_mxjobs(stack, port)
    down_its_webhook_refuses_mxjob_writes(stack, figure)
    args = the_pages_steps_1_to_3(stack, port)
    with ExitStack() as running:
        mark = to.audit_lines(stack.audit)
        restricted = running.enter_context(to.run(release, server, workdir, port, args))
        metacontroller = step_4(stack, running)
        a_new_job_is_ours(stack)
        the_job_left_running_is_kept(stack, old, old_uids, figure)
        assert conditions(server, LEGACY, "done").get("Succeeded") == "True"
        assert pod_names(server, LEGACY) == {"done-worker-0", "running-worker-0"}
        assert touched(to.writes(stack.audit, mark)) == [], "training-operator touched a job"
        without_the_webhook_step(stack, port, figure)
        without_the_scheme_step(stack, port, restricted, figure)
        assert metacontroller.refusals() == [], "a request outside the shipped role"


def training_operator_runs_mxjobs(stack: Stack, port: int) -> tuple[dict[str, Any], dict[str, str]]:
    """1. training-operator v1.8.1 runs MXJobs: it makes their pods. Returns its pods by
    name, and the uids of its pods and Services by `kind/name`."""
    server = stack.server
    kubelet = Kubelet(stack.rest, LEGACY)
    with to.run(stack.release, server, stack.workdir, port, to.deployment_args(server)):
        for name in ("done", "running", "deleted"):
            submitted = submit(server, LEGACY, name)
            assert submitted.returncode == 0, submitted.stderr
        wanted = {"done-worker-0", "running-worker-0", "deleted-worker-0"}
        wait_for(lambda: pod_names(server, LEGACY), "training-operator's pods", until=wanted.__le__)
        kubelet.run(*sorted(wanted))
        kubelet.exit("done-worker-0", 0)
        wait_for(lambda: conditions(server, LEGACY, "done").get("Succeeded"), "done Succeeded")
        for name in ("running", "deleted"):

            def runs(n: str = name) -> str | None:
                return conditions(server, LEGACY, n).get("Running")

            wait_for(runs, f"{name} Running")
    old = {p["metadata"]["name"]: p for p in server.get("pods", f"-n={LEGACY}")["items"]}
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "MXJob" for p in old.values())
    old_uids = {
        f"{kind}/{o['metadata']['name']}": o["metadata"]["uid"]
        for kind in ("pod", "service")
        for o in server.get(kind, f"-n={LEGACY}")["items"]
    }
    return old, old_uids


def down_its_webhook_refuses_mxjob_writes(stack: Stack, figure: Figure) -> None:
    """2. Down, its webhook entry (failurePolicy Fail) refuses every MXJob write."""
    server = stack.server
    down = submit(server, LEGACY, "while-down")
    assert down.returncode == 1, down.stderr
    assert MXJOB_WEBHOOK_CALL in down.stderr, down.stderr
    assert "connection refused" in down.stderr, down.stderr
    deleting = server.kubectl("delete", "mxjob", "running", f"-n={LEGACY}", check=False)
    assert deleting.returncode == 1, deleting.stderr
    assert MXJOB_WEBHOOK_CALL in deleting.stderr, deleting.stderr
    figure(f"training-operator v1.8.1 down: {down.stderr.strip()}")
    listed = shell(stack, shell_block(PAGE, "grep mxjob"))
    assert listed.stdout.strip() == to.MXJOB_WEBHOOK, listed


def the_pages_steps_1_to_3(stack: Stack, port: int) -> list[str]:
    """Steps 1 and 2 of the page (the render check, the listing and delete), and step 3 for
    v1.8: the webhook entry, then the arguments. Returns training-operator's arguments."""
    server = stack.server
    with to.run(stack.release, server, stack.workdir, port, to.deployment_args(server)):
        checked = shell(stack, shell_block(PAGE, "python -m app render"))
        assert checked.returncode == 0, checked.stderr
        block = shell_block(PAGE, "kubectl delete mxjob")
        listing, delete = listing_and_delete(block, "deleted", LEGACY)
        assert "running" in shell(stack, listing).stdout
        deleted = shell(stack, delete)
        assert deleted.returncode == 0, deleted.stderr
        wait_for(lambda: not exists(server, "pod/deleted-worker-0", LEGACY), "its pod collected")
        removed = shell(stack, shell_block(PAGE, "validatingwebhookconfiguration validator"))
        assert removed.returncode == 0, removed.stderr
        names = [
            w["name"] for w in server.get("validatingwebhookconfiguration", to.WEBHOOKS)["webhooks"]
        ]
        assert to.MXJOB_WEBHOOK not in names, names
        assert len(names) == 4, names
        assert shell(stack, shell_block(PAGE, "grep mxjob")).stdout == ""
        patch = shell_block(PAGE, "--enable-scheme").split("kubectl -n kubeflow rollout status")[0]
        patched = shell(stack, patch)
        assert patched.returncode == 0, patched.stderr
    args = to.deployment_args(server)
    kinds = {a.removeprefix("--enable-scheme=") for a in args}
    assert kinds == ALL_KINDS - {"mxjob"}, args
    return args


def step_4(stack: Stack, running: ExitStack) -> Metacontroller:
    """Step 4: Metacontroller (its CRDs; the process), the overlay, and the hook (the overlay's
    CompositeController pointed at the hook's loopback address), kept running by `running`."""
    server = stack.server
    install_metacontroller_crds(server)
    installed = shell(stack, shell_block(PAGE, "kubectl apply --server-side").split("#")[0])
    assert installed.returncode == 0, installed.stderr
    hook = running.enter_context(serve_hook(stack.workdir))
    point_at_hook(server, hook.url)
    install_adoption_guard(server)
    # As the ServiceAccount of the role install.md gives a Metacontroller of one's own.
    return running.enter_context(
        run_metacontroller(
            stack.metacontroller, server, stack.workdir, shipped_flags(), shipped_access(server)
        )
    )


def a_new_job_is_ours(stack: Stack) -> None:
    """Step 5: a new job's pod is made by Metacontroller."""
    server = stack.server
    server.kubectl("create", "namespace", "fresh")
    assert submit(server, "fresh", "fresh").returncode == 0
    made = wait_for(
        lambda: server.get("pods", "-n=fresh")["items"], "the new job's pod",
        until=lambda pods: len(pods) == 1,
    )  # fmt: skip
    assert CONTROLLER_UID in made[0]["metadata"]["labels"], "made by Metacontroller"


def the_job_left_running_is_kept(
    stack: Stack, old: dict[str, Any], old_uids: dict[str, str], figure: Figure
) -> None:
    """The job left running: its pod released, kept, the guard refusing the take-over."""
    server = stack.server
    wait_for(
        lambda: server.get("pod", "running-worker-0", f"-n={LEGACY}")["metadata"].get(
            "ownerReferences"
        ),
        "the running job's pod released", until=lambda refs: not refs,
    )  # fmt: skip
    kept = server.get("pod", "running-worker-0", f"-n={LEGACY}")
    assert kept["metadata"]["uid"] == old["running-worker-0"]["metadata"]["uid"]
    assert kept["status"]["phase"] == "Running"
    # Metacontroller's applies of the same names are refused (a pod's spec cannot change;
    # the adoption guard refuses the rest), reported as SyncError events on the job.
    errors = wait_for(
        lambda: sync_errors(server, LEGACY, "running"), "a SyncError on the job left running",
        until=lambda found: any("running-worker-0" in m for m in found),
    )  # fmt: skip
    figure(f"the job left running: {errors[0][:300]}")
    for kind in ("pod", "service"):
        meta = server.get(kind, "running-worker-0", f"-n={LEGACY}")["metadata"]
        assert meta["uid"] == old_uids[f"{kind}/running-worker-0"], "kept"
        assert not meta.get("ownerReferences"), "released, not taken over"
        assert CONTROLLER_UID not in meta["labels"], "not taken over"


def without_the_webhook_step(stack: Stack, port: int, figure: Figure) -> None:
    """4. Its MXJob webhook entry back (a re-apply of its manifests) while it runs without
    `mxjob`: MXJob writes refused."""
    server = stack.server
    (webhooks,) = [
        d for d in to.release_objects(server, stack.release)
        if d["kind"] == "ValidatingWebhookConfiguration"
    ]  # fmt: skip
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump(to.loopback(webhooks, port)))
    wait_for(
        lambda: submit(server, "fresh", "refused"), "the restored entry refusing",
        until=lambda done: done.returncode == 1 and MXJOB_WEBHOOK_CALL in done.stderr,
    )  # fmt: skip
    figure(
        f"webhook entry kept, training-operator without mxjob: {submit(server, 'fresh', 'refused').stderr.strip()}"
    )
    assert (
        shell(stack, shell_block(PAGE, "validatingwebhookconfiguration validator")).returncode == 0
    )
    assert submit(server, "fresh", "after").returncode == 0


def without_the_scheme_step(
    stack: Stack, port: int, restricted: to.Process, figure: Figure
) -> None:
    """5. Every kind enabled beside our controller: both write a new job's pods."""
    server = stack.server
    restricted.process.terminate()
    restricted.process.wait(timeout=30)
    server.kubectl("create", "namespace", "clash")
    mark = to.audit_lines(stack.audit)
    with to.run(stack.release, server, stack.workdir, port, []):
        assert submit(server, "clash", "clash").returncode == 0
        writers = wait_for(
            lambda: pod_writers(stack.audit, mark, "clash"), "both controllers writing pods",
            until=lambda found: {"training-operator", "metacontroller"} <= set(found),
        )  # fmt: skip
    figure(f"both controllers on one job: pod writes and answers by client {writers}")
