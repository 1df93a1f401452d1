"""The live switch from training-operator v1.8.1 (docs/migrating-from-training-operator.md,
step 3) on a real stack, for tests/apiserver/test_migration_v1_8.py: the jobs
training-operator starts, what the takeover must claim, and what each job does once
Metacontroller and the hook carry it on."""

import json
from typing import Any, Protocol

from app.core.mxnet.kubeenv import resolve
from localcluster.apiserver import ApiServer
from localcluster.kubelet import Kubelet
from localcluster.waiting import wait_for
from tests.support.documented import shell_block
from tests.support.jobs import one_worker_job
from tests.support.migration import (
    IMAGE,
    PAGE,
    PageStack,
    conditions,
    exists,
    pod_names,
    shell,
    submit,
)
from tests.support.resources import CONTROLLER_UID

LEGACY = "legacy"
PODGROUPS = "podgroups.scheduling.x-k8s.io"
# The jobs the takeover finds (training-operator started one more, which the drain deletes).
TAKEN = ("done", "gang", "restarted", "running", "suspended")
DMLC = ("DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER",
        "DMLC_ROLE", "DMLC_USE_KUBERNETES", "DMLC_WORKER_ID")  # fmt: skip
Figure = Any


class SwitchStack(PageStack, Protocol):
    """The migration test's stack, as far as these steps use it: the page's, and its kubelet."""

    @property
    def kubelet(self) -> Kubelet: ...


def restarted_job() -> dict[str, Any]:
    """One Worker restarted in place (OnFailure), failed past two restarts."""
    job = one_worker_job("restarted", IMAGE)
    job["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "OnFailure"
    job["spec"]["runPolicy"] = {"backoffLimit": 2}
    return job


def suspended_job() -> dict[str, Any]:
    job = one_worker_job("suspended", IMAGE)
    job["spec"]["runPolicy"] = {"suspend": True}
    return job


def objects(server: ApiServer) -> dict[str, Any]:
    """Every MXJob, pod, Service and PodGroup of the legacy namespace, by `kind/name`."""
    return {
        f"{kind}/{o['metadata']['name']}": o
        for kind in ("mxjob", "pod", "service", PODGROUPS)
        for o in server.get(kind, f"-n={LEGACY}")["items"]
    }


def claimable(left: dict[str, Any]) -> set[str]:
    """`job: kind name` of every child training-operator made: controlled by its MXJob."""
    uids = {o["metadata"]["uid"]: key.split("/")[1] for key, o in left.items()
            if key.startswith("mxjob/")}  # fmt: skip
    found = set()
    for key, obj in left.items():
        kind, name = key.split("/")
        refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]
        if kind != "mxjob" and refs and refs[0]["uid"] in uids:
            shown = "podgroup.scheduling.x-k8s.io" if kind == PODGROUPS else kind
            found.add(f"{LEGACY}/{uids[refs[0]['uid']]}: {shown} {name}")
    return found


def carried_on(stack: SwitchStack, left: dict[str, Any], figure: Figure) -> None:
    """Every job synced by the hook (its `restartCount` written) and carried on where
    training-operator left it: the same children, adopted, the same conditions and
    `startTime`, the restart made before the switch counted."""
    server = stack.server

    def synced() -> list[str]:
        return [n for n in TAKEN
                if "restartCount" in (server.get("mxjob", n, f"-n={LEGACY}").get("status") or {})]  # fmt: skip

    wait_for(synced, "every job synced by the hook", until=lambda done: len(done) == len(TAKEN))
    now = objects(server)
    for key, before in left.items():
        if key.startswith("mxjob/"):
            status, was = now[key]["status"], before["status"]
            assert status["conditions"] == was["conditions"], key
            assert status.get("startTime") == was.get("startTime"), key
            continue
        meta = now[key]["metadata"]
        assert meta["uid"] == before["metadata"]["uid"], f"{key} made again"
        job_uid = meta["ownerReferences"][0]["uid"]
        assert meta["labels"][CONTROLLER_UID] == job_uid, f"{key} not adopted"
        if not key.startswith(PODGROUPS):
            assert now[key]["spec"] == before["spec"], f"{key} changed"
    assert now["mxjob/restarted"]["status"]["restartCount"] == 1
    states = shell(stack, shell_block(PAGE, "kubectl get mxj -A").split("#")[0])
    assert states.returncode == 0, states.stderr
    figure(f"kubectl get mxj -A after the switch:\n{states.stdout}")


# The pod writes after the adoption, each one a pod's own state asks for: (verb, pod, code).
# Server-side apply creates with a patch (201).
ASKED_FOR = [
    ("patch", "running-worker-1-r1", 201),  # its predecessor killed by SIGKILL (ExitCode)
    ("delete", "running-worker-1", 200),  # the failed attempt, once its replacement runs
    *[("delete", f"running-{p}", 200) for p in ("server-0", "server-1", "worker-0", "worker-1-r1")],
    ("delete", "restarted-worker-0", 200),  # failed past its backoffLimit: cleanPodPolicy
    ("patch", "suspended-worker-0", 201),  # resumed
    ("delete", "done-worker-0", 200),  # its job deleted: the garbage collector
]


def each_job_reaches_the_state_its_pods_decide(stack: SwitchStack, left: dict[str, Any]) -> None:
    running_job_goes_on_after_a_crash(stack, left)
    restarted_job_fails_past_its_backoff_limit(stack)
    server, kubelet = stack.server, stack.kubelet
    patch = {"spec": {"runPolicy": {"suspend": False}}}
    server.kubectl("patch", "mxjob", "suspended", f"-n={LEGACY}", "--type=merge",
                   "-p", json.dumps(patch))  # fmt: skip
    wait_for(lambda: exists(server, "pod/suspended-worker-0", LEGACY), "the resumed job's pod")
    assert conditions(server, LEGACY, "suspended")["Suspended"] == "False"
    kubelet.exit("gang-worker-0", 0)
    wait_for(lambda: conditions(server, LEGACY, "gang").get("Succeeded"), "gang Succeeded")
    group = server.get(PODGROUPS, "gang", f"-n={LEGACY}")["metadata"]
    assert group["uid"] == left[f"{PODGROUPS}/gang"]["metadata"]["uid"], "the PodGroup kept"
    assert conditions(server, LEGACY, "done")["Succeeded"] == "True"
    server.kubectl("delete", "mxjob", "done", f"-n={LEGACY}")
    wait_for(lambda: not exists(server, "pod/done-worker-0", LEGACY), "the done job's pod gone")
    assert not exists(server, "service/done-worker-0", LEGACY)


def running_job_goes_on_after_a_crash(stack: SwitchStack, left: dict[str, Any]) -> None:
    """A Worker killed after the switch is replaced under our next attempt's name, with the
    variables training-operator gave its predecessor; the Scheduler's exit 0 decides."""
    server, kubelet = stack.server, stack.kubelet
    kubelet.exit("running-worker-1", 137)
    wait_for(lambda: exists(server, "pod/running-worker-1-r1", LEGACY), "the replacement")
    replacement = server.get("pod", "running-worker-1-r1", f"-n={LEGACY}")
    config_map = server.get("configmap", "running-mx-config", f"-n={LEGACY}")
    ours = resolve(replacement["spec"]["containers"][0], {"running-mx-config": config_map})
    theirs = resolve(left["pod/running-worker-1"]["spec"]["containers"][0], {})
    assert {k: ours[k] for k in DMLC} == {k: theirs[k] for k in DMLC}
    assert json.loads(ours["MX_CONFIG"]) == json.loads(theirs["MX_CONFIG"])
    assert conditions(server, LEGACY, "running")["Restarting"] == "True"
    kubelet.run("running-worker-1-r1")
    wait_for(lambda: not exists(server, "pod/running-worker-1", LEGACY), "the failed attempt gone")
    kubelet.exit("running-scheduler-0", 0)
    wait_for(lambda: conditions(server, LEGACY, "running").get("Succeeded"), "running Succeeded")
    # cleanPodPolicy Running: what still ran goes, the Scheduler's pod stays for its logs.
    wait_for(
        lambda: {n for n in pod_names(server, LEGACY) if n.startswith("running-")},
        "running's pods cleaned up", until=lambda found: found == {"running-scheduler-0"},
    )  # fmt: skip


def restarted_job_fails_past_its_backoff_limit(stack: SwitchStack) -> None:
    """backoffLimit 2 and one restart made under training-operator: the third fails it."""
    server, kubelet = stack.server, stack.kubelet

    def restarts() -> int:
        return int(server.get("mxjob", "restarted", f"-n={LEGACY}")["status"]["restartCount"])

    kubelet.restart("restarted-worker-0", 2)
    wait_for(restarts, "two restarts counted", until=lambda n: n == 2)
    assert "Failed" not in conditions(server, LEGACY, "restarted")
    kubelet.restart("restarted-worker-0", 3)
    wait_for(lambda: conditions(server, LEGACY, "restarted").get("Failed"), "restarted Failed")
    status = server.get("mxjob", "restarted", f"-n={LEGACY}")["status"]
    (failed,) = [c for c in status["conditions"] if c["type"] == "Failed"]
    assert failed["reason"] == "BackoffLimitExceeded", failed
    wait_for(lambda: not exists(server, "pod/restarted-worker-0", LEGACY), "its pod cleaned up")


def step_3_takes_over(stack: SwitchStack, left: dict[str, Any], figure: Figure) -> None:
    """Step 3: the listing, the dry run (nothing changed) and the takeover, which claims
    every child training-operator made, and only those."""
    listing, dry, real = [
        line.split("#")[0].strip() for line in shell_block(PAGE, "takeover --dry-run").splitlines()
    ]
    listed = shell(stack, listing)
    assert listed.returncode == 0, listed.stderr
    assert all(f" {name} " in listed.stdout for name in TAKEN), listed.stdout
    figure(f"{listing} before the switch:\n{listed.stdout}")
    expected = claimable(left)
    assert len(expected) >= 13, expected
    tried = shell(stack, dry)
    assert tried.returncode == 0, tried.stderr
    would = {line.replace(" would claim ", " ") for line in tried.stdout.splitlines()
             if " would claim " in line}  # fmt: skip
    assert would == expected
    assert objects(stack.server) == left, "the dry run changed something"
    done = shell(stack, real)
    assert done.returncode == 0, done.stderr
    claimed = {line.replace(" claimed ", " ") for line in done.stdout.splitlines()
               if ": claimed " in line}  # fmt: skip
    assert claimed == expected
    assert done.stdout.splitlines()[-1] == (
        f"takeover: {len(TAKEN)} MXJobs; {len(expected)} objects claimed, 0 already ours, "
        "0 left alone"
    )
    figure(f"the takeover: {done.stdout.splitlines()[-1]}")


def a_new_job_is_ours(stack: SwitchStack) -> None:
    """Step 5: a new job's pod is made by Metacontroller."""
    server = stack.server
    server.kubectl("create", "namespace", "fresh")
    assert submit(server, "fresh", "fresh").returncode == 0
    made = wait_for(
        lambda: server.get("pods", "-n=fresh")["items"], "the new job's pod",
        until=lambda pods: len(pods) == 1,
    )  # fmt: skip
    assert CONTROLLER_UID in made[0]["metadata"]["labels"], "made by Metacontroller"
