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

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import training_operator as to
from localcluster.apiserver import ApiServer, Binaries, ClusterError, KubectlError, cluster
from localcluster.kubelet import Kubelet
from localcluster.ports import free_port
from localcluster.realstack import (
    composite_controller,
    metacontroller_crds,
    run_metacontroller,
    serve_hook,
)
from localcluster.rest import Rest
from localcluster.stack import install_adoption_guard, shipped_flags
from localcluster.waiting import wait_for
from tests.support import REPO
from tests.support.controllers import GARBAGE_COLLECTOR, kube_controllers
from tests.support.documented import run_as_user, shell_block
from tests.support.jobs import one_worker_job
from tests.support.kustomize import shipped_access
from tests.support.resources import CONTROLLER_UID

PAGE = REPO / "docs" / "migrating-from-training-operator.md"
LEGACY = "legacy"
IMAGE = "docker.io/kubeflow/mxnet-gpu:latest"  # any image: no kubelet runs it here
MXJOB_WEBHOOK_CALL = f'failed calling webhook "{to.MXJOB_WEBHOOK}"'
ALL_KINDS = {"tfjob", "pytorchjob", "xgboostjob", "mpijob", "paddlejob", "mxjob"}


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


def submit(server: ApiServer, namespace: str, name: str) -> subprocess.CompletedProcess[str]:
    """`kubectl create` of a job, as its user would; the result, refused or not."""
    return server.kubectl(
        "create",
        f"-n={namespace}",
        "-f",
        "-",
        input=yaml.safe_dump(one_worker_job(name, IMAGE)),
        check=False,
    )


def shell(stack: Stack, script: str) -> subprocess.CompletedProcess[str]:
    """A command of the page run as a user would (`documented.run_as_user`)."""
    return run_as_user(script, stack.binaries.kubectl, stack.server.kubeconfig)


def conditions(server: ApiServer, namespace: str, name: str) -> dict[str, str]:
    status = server.get("mxjob", name, f"-n={namespace}").get("status") or {}
    return {c["type"]: c["status"] for c in status.get("conditions") or []}


def pod_names(server: ApiServer, namespace: str) -> set[str]:
    return {p["metadata"]["name"] for p in server.get("pods", f"-n={namespace}")["items"]}


def exists(server: ApiServer, target: str, namespace: str) -> bool:
    try:
        server.get(target, f"-n={namespace}")
    except KubectlError:
        return False
    return True


def touched(writes: list[dict[str, Any]]) -> list[str]:
    """The writes that reach a job or its children (not training-operator's own Secret or
    its webhook configuration, which its certificate rotator keeps up to date)."""
    return [
        f"{w['verb']} {w['objectRef'].get('resource')}/{w['objectRef'].get('subresource', '')} "
        f"in {w['objectRef'].get('namespace')}"
        for w in writes
        if w["objectRef"].get("resource") in ("mxjobs", "pods", "services", "configmaps", "events")
    ]


def sync_errors(server: ApiServer, namespace: str, job: str) -> list[str]:
    """The messages of the SyncError warnings Metacontroller recorded on a job."""
    listed = server.get("events", f"-n={namespace}", f"--field-selector=involvedObject.name={job}")
    return [e.get("message") or "" for e in listed["items"] if e["reason"] == "SyncError"]


def pod_writers(audit: Path, since: int, namespace: str) -> dict[str, list[int]]:
    """Who wrote pods in `namespace` (by user agent, up to its `/`) and the answers' codes."""
    found: dict[str, list[int]] = {}
    with audit.open() as lines:
        for number, line in enumerate(lines):
            if number < since:
                continue
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if (ref.get("resource"), ref.get("namespace")) != ("pods", namespace):
                continue
            if event["verb"] not in ("create", "patch", "update") or ref.get("subresource"):
                continue
            agent = str(event.get("userAgent", "")).split("/")[0]
            found.setdefault(agent, []).append(event["responseStatus"]["code"])
    return found


def test_the_guide_on_training_operator_v1_8_1(stack: Stack, figure: Callable[[str], None]) -> None:
    server, release, workdir = stack.server, stack.release, stack.workdir
    port = free_port()
    to.install(server, release, port)
    assert to.deployment_args(server) == [], "as released: every kind enabled"
    server.kubectl("create", "namespace", LEGACY)
    kubelet = Kubelet(stack.rest, LEGACY)

    # 1. training-operator v1.8.1 runs MXJobs: it makes their pods.
    with to.run(release, server, workdir, port, to.deployment_args(server)):
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

    # 2. Down, its webhook entry (failurePolicy Fail) refuses every MXJob write.
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

    with to.run(release, server, workdir, port, to.deployment_args(server)):
        # Steps 1 and 2 of the page.
        checked = shell(stack, shell_block(PAGE, "python -m app render"))
        assert checked.returncode == 0, checked.stderr
        listing, delete = [
            line.split("#")[0].strip()
            for line in shell_block(PAGE, "kubectl delete mxjob").strip().splitlines()
        ]
        assert "running" in shell(stack, listing).stdout
        deleted = shell(stack, delete.replace("<name>", "deleted").replace("<namespace>", LEGACY))
        assert deleted.returncode == 0, deleted.stderr
        wait_for(lambda: not exists(server, "pod/deleted-worker-0", LEGACY), "its pod collected")
        # Step 3 for v1.8: the webhook entry, then the arguments.
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

    with ExitStack() as running:
        mark = to.audit_lines(stack.audit)
        restricted = running.enter_context(to.run(release, server, workdir, port, args))
        # Step 4: Metacontroller (its CRDs; the process below), the overlay, and the hook (the
        # overlay's CompositeController pointed at the hook's loopback address).
        server.apply(*[d for d in yaml.safe_load_all(metacontroller_crds().read_text()) if d])
        server.wait_established("crd/compositecontrollers.metacontroller.k8s.io")
        installed = shell(stack, shell_block(PAGE, "kubectl apply --server-side").split("#")[0])
        assert installed.returncode == 0, installed.stderr
        hook = running.enter_context(serve_hook(workdir))
        server.kubectl("delete", "compositecontroller", "mxjob-controller")
        server.apply(composite_controller(hook.url))
        install_adoption_guard(server)
        # As the ServiceAccount of the role install.md gives a Metacontroller of one's own.
        metacontroller = running.enter_context(
            run_metacontroller(
                stack.metacontroller, server, workdir, shipped_flags(), shipped_access(server)
            )
        )

        # Step 5: a new job is ours.
        server.kubectl("create", "namespace", "fresh")
        assert submit(server, "fresh", "fresh").returncode == 0
        made = wait_for(
            lambda: server.get("pods", "-n=fresh")["items"], "the new job's pod",
            until=lambda pods: len(pods) == 1,
        )  # fmt: skip
        assert CONTROLLER_UID in made[0]["metadata"]["labels"], "made by Metacontroller"
        # The job left running: its pod released, kept, the guard refusing the take-over.
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
        assert conditions(server, LEGACY, "done").get("Succeeded") == "True"
        assert pod_names(server, LEGACY) == {"done-worker-0", "running-worker-0"}
        assert touched(to.writes(stack.audit, mark)) == [], "training-operator touched a job"

        # 4. Its MXJob webhook entry back (a re-apply of its manifests) while it runs without
        # `mxjob`: MXJob writes refused.
        (webhooks,) = [
            d for d in to.release_objects(server, release)
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
            shell(stack, shell_block(PAGE, "validatingwebhookconfiguration validator")).returncode
            == 0
        )
        assert submit(server, "fresh", "after").returncode == 0

        # 5. Every kind enabled beside our controller: both write a new job's pods.
        restricted.process.terminate()
        restricted.process.wait(timeout=30)
        server.kubectl("create", "namespace", "clash")
        mark = to.audit_lines(stack.audit)
        with to.run(release, server, workdir, port, []):
            assert submit(server, "clash", "clash").returncode == 0
            writers = wait_for(
                lambda: pod_writers(stack.audit, mark, "clash"), "both controllers writing pods",
                until=lambda found: {"training-operator", "metacontroller"} <= set(found),
            )  # fmt: skip
        figure(f"both controllers on one job: pod writes and answers by client {writers}")
        assert metacontroller.refusals() == [], "a request outside the shipped role"
