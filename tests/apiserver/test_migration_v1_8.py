"""docs/migrating-from-training-operator.md, followed to the letter on a cluster running the
real training-operator v1.8.1 (localcluster/training_operator.py: its release manifests,
its binary out of cluster with its Deployment's arguments, its webhook registered), on an API
server of its own with an audit log, OwnerReferencesPermissionEnforcement and
kube-controller-manager's garbage collector, then the real hook and Metacontroller with the
with-metacontroller overlay's flags and role, the adoption guard and the scheduler-plugins
component. What it shows, in order:
1. training-operator runs MXJobs: it makes the pods of the jobs submitted, and the test's
   kubelet runs them: a 1/2/2 job running, a job whose Worker it restarted in place, a
   suspended one, a finished one, one to delete, and, restarted with
   `--gang-scheduler-name=scheduler-plugins`, a gang job with its PodGroup;
2. while it is down its webhook entry refuses every create and delete of an MXJob;
3. the page's steps 1 and 2 for v1.8 (render check, the drain path's listing and delete, the
   webhook entry deleted, the Deployment patched with the `--enable-scheme` values,
   training-operator restarted with them), step 3 (the takeover, dry run then run) and step 4
   (the overlay, Metacontroller and the hook): every job is carried on where training-operator
   left it, no pod of theirs written at the adoption (the audit log), and each then reaches
   the state its pods decide, every pod write one that a pod's own state asks for; deleting a
   taken-over job deletes its pods; training-operator writes nothing to any MXJob, pod or
   Service from its restart on;
4. without the webhook step (its entry restored, as a re-apply of its manifests would), MXJob
   writes are refused even while it runs;
5. without the `--enable-scheme` step (every kind enabled), training-operator and
   Metacontroller both write the pods of a new job."""

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from localcluster import training_operator as to
from localcluster.apiserver import ApiServer, Binaries, ClusterError, cluster
from localcluster.crds import PODGROUP_CRDS
from localcluster.kubelet import Kubelet
from localcluster.ports import free_port
from localcluster.realstack import Metacontroller, run_metacontroller, serve_hook
from localcluster.rest import Rest
from localcluster.stack import install_adoption_guard, shipped_flags
from localcluster.waiting import wait_for
from tests.support.controllers import GARBAGE_COLLECTOR, kube_controllers
from tests.support.documented import shell_block
from tests.support.kustomize import shipped_access
from tests.support.live_switch import (
    ASKED_FOR,
    LEGACY,
    PODGROUPS,
    a_new_job_is_ours,
    carried_on,
    each_job_reaches_the_state_its_pods_decide,
    objects,
    restarted_job,
    step_3_takes_over,
    suspended_job,
)
from tests.support.migration import (
    PAGE,
    conditions,
    exists,
    install_metacontroller_crds,
    listing_and_delete,
    parameter_server_job,
    pod_changes,
    pod_names,
    pod_writers,
    point_at_hook,
    shell,
    submit,
    touched,
)

GANG = "scheduler-plugins"
MXJOB_WEBHOOK_CALL = f'failed calling webhook "{to.MXJOB_WEBHOOK}"'
ALL_KINDS = {"tfjob", "pytorchjob", "xgboostjob", "mpijob", "paddlejob", "mxjob"}
# The jobs training-operator runs before the switch.
BEFORE = ("done", "running", "restarted", "suspended", "deleted")
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
    kubelet: Kubelet


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
            kubelet = Kubelet(rest, LEGACY)
            yield Stack(
                server, k8s_binaries, rest, release, metacontroller_binary, workdir, audit, kubelet
            )
    except ClusterError as error:
        failure = str(error)
    finally:
        to.unmount()
    if failure is not None:
        pytest.fail(failure, pytrace=False)


def test_the_live_switch_on_training_operator_v1_8_1(stack: Stack, figure: Figure) -> None:
    server, release, workdir = stack.server, stack.release, stack.workdir
    port = free_port()
    to.install(server, release, port)
    (podgroup_crd,) = [p for p in PODGROUP_CRDS if p.name.startswith(GANG)]
    server.apply(yaml.safe_load(podgroup_crd.read_text()))
    server.wait_established(f"crd/{PODGROUPS}")
    assert to.deployment_args(server) == [], "as released: every kind enabled"
    server.kubectl("create", "namespace", LEGACY)
    training_operator_runs_mxjobs(stack, port)
    down_its_webhook_refuses_mxjob_writes(stack, figure)
    args = the_pages_steps_1_and_2(stack, port)
    left = objects(server)
    with ExitStack() as running:
        mark = to.audit_lines(stack.audit)
        restricted = running.enter_context(to.run(release, server, workdir, port, args))
        to.rolled_out(server)
        step_3_takes_over(stack, left, figure)
        adopted = to.audit_lines(stack.audit)
        metacontroller = step_4(stack, running)
        carried_on(stack, left, figure)
        assert pod_changes(stack.audit, adopted, LEGACY) == [], "an adopted pod written"
        a_new_job_is_ours(stack)
        each_job_reaches_the_state_its_pods_decide(stack, left)
        assert sorted(pod_changes(stack.audit, adopted, LEGACY)) == sorted(ASKED_FOR), (
            "a pod written that no pod's own state asked for"
        )
        assert touched(to.writes(stack.audit, mark)) == [], "training-operator touched a job"
        without_the_webhook_step(stack, port, figure)
        without_the_scheme_step(stack, port, restricted, figure)
        assert metacontroller.refusals() == [], "a request outside the shipped role"


def training_operator_runs_mxjobs(stack: Stack, port: int) -> None:
    """1. training-operator v1.8.1 runs MXJobs: it makes their pods, Services and, with gang
    scheduling, PodGroups."""
    server, kubelet = stack.server, stack.kubelet
    jobs = {"running": parameter_server_job("running"), "restarted": restarted_job(),
            "suspended": suspended_job()}  # fmt: skip
    with to.run(stack.release, server, stack.workdir, port, to.deployment_args(server)):
        for name in BEFORE:
            submitted = submit(server, LEGACY, name, jobs.get(name))
            assert submitted.returncode == 0, submitted.stderr
        wanted = {"done-worker-0", "deleted-worker-0", "restarted-worker-0",
                  "running-scheduler-0", "running-server-0", "running-server-1",
                  "running-worker-0", "running-worker-1"}  # fmt: skip
        wait_for(lambda: pod_names(server, LEGACY), "training-operator's pods", until=wanted.__le__)
        kubelet.run(*sorted(wanted))
        kubelet.exit("done-worker-0", 0)
        kubelet.restart("restarted-worker-0", 1)
        for name, state in (("done", "Succeeded"), ("running", "Running"),
                            ("restarted", "Running"), ("deleted", "Running"),
                            ("suspended", "Suspended")):  # fmt: skip
            wait_for(lambda n=name, s=state: conditions(server, LEGACY, n).get(s),  # type: ignore[misc]
                     f"{name} {state}", until=lambda found: found == "True")  # fmt: skip
    gang_args = [*to.deployment_args(server), f"--gang-scheduler-name={GANG}"]
    with to.run(stack.release, server, stack.workdir, port, gang_args):
        assert submit(server, LEGACY, "gang").returncode == 0
        wait_for(lambda: exists(server, f"{PODGROUPS}/gang", LEGACY), "its PodGroup")
        wait_for(lambda: exists(server, "pod/gang-worker-0", LEGACY), "the gang job's pod")
        kubelet.run("gang-worker-0")
        wait_for(lambda: conditions(server, LEGACY, "gang").get("Running"), "gang Running")


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


def the_pages_steps_1_and_2(stack: Stack, port: int) -> list[str]:
    """Step 1 of the page (the render check), the drain path's listing and delete (of one
    job, `deleted`), and step 2 for v1.8: the webhook entry, then the arguments. Returns
    training-operator's arguments."""
    server = stack.server
    with to.run(stack.release, server, stack.workdir, port, to.deployment_args(server)):
        checked = shell(stack, shell_block(PAGE, "mxjob-controller render"))
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
    CompositeController pointed at the hook's loopback address, with the scheduler-plugins
    component's PodGroups, as a team that ran training-operator's gang scheduling installs it),
    kept running by `running`."""
    server = stack.server
    install_metacontroller_crds(server)
    installed = shell(stack, shell_block(PAGE, "kubectl apply --server-side").split("#")[0])
    assert installed.returncode == 0, installed.stderr
    hook = running.enter_context(serve_hook(stack.workdir))
    point_at_hook(server, hook.url, GANG)
    install_adoption_guard(server)
    # As the ServiceAccount of the role install.md gives a Metacontroller of one's own.
    return running.enter_context(
        run_metacontroller(
            stack.metacontroller, server, stack.workdir, shipped_flags(),
            shipped_access(server, GANG),
        )
    )  # fmt: skip


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
