"""docs/migrating-from-training-operator.md on a real stack, for the migration tests: its
commands run as a user would, its steps' shared moves (the listing and delete, Metacontroller's
CRDs, the overlay's CompositeController pointed at the hook), and what the API server shows
afterwards (objects gone, SyncError events, the audit log's writes)."""

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import yaml

from localcluster.apiserver import ApiServer, Binaries, KubectlError
from localcluster.realstack import composite_controller, metacontroller_crds
from tests.support import REPO
from tests.support.documented import run_as_user
from tests.support.jobs import one_worker_job

PAGE = REPO / "docs" / "migrating-from-training-operator.md"
COMPONENTS = REPO / "manifests" / "components"
IMAGE = "docker.io/kubeflow/mxnet-gpu:latest"  # any image: no kubelet runs it here


class PageStack(Protocol):
    """A migration test's stack: what the page's commands run against."""

    @property
    def server(self) -> ApiServer: ...

    @property
    def binaries(self) -> Binaries: ...


def shell(stack: PageStack, script: str) -> subprocess.CompletedProcess[str]:
    """A command of the page run as a user would (`documented.run_as_user`)."""
    return run_as_user(script, stack.binaries.kubectl, stack.server.kubeconfig)


def listing_and_delete(block: str, name: str, namespace: str) -> tuple[str, str]:
    """The page's step 2 (its `block`): the listing of the jobs that still run, and the
    delete of one, of job `name` in `namespace`."""
    listing, delete = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    return listing, delete.replace("<name>", name).replace("<namespace>", namespace)


def install_metacontroller_crds(server: ApiServer) -> None:
    """Metacontroller's CRDs, as its install applies them, established."""
    server.apply(*[d for d in yaml.safe_load_all(metacontroller_crds().read_text()) if d])
    server.wait_established("crd/compositecontrollers.metacontroller.k8s.io")


def point_at_hook(server: ApiServer, hook_url: str, *components: str) -> None:
    """The overlay's CompositeController, its hooks at `hook_url` (the hook on loopback), with
    the child types these `components` add."""
    server.kubectl("delete", "compositecontroller", "mxjob-controller")
    controller = composite_controller(hook_url)
    controller["spec"]["childResources"] += [t for c in components for t in child_types(c)]
    server.apply(controller)


def child_types(component: str) -> list[dict[str, Any]]:
    """The childResources entries a component adds to the CompositeController."""
    found = []
    kustomization = yaml.safe_load((COMPONENTS / component / "kustomization.yaml").read_text())
    for patch in kustomization.get("patches", []):
        if patch.get("target", {}).get("kind") != "CompositeController":
            continue
        for operation in yaml.safe_load(patch["patch"]):
            if operation["path"] == "/spec/childResources/-":
                found.append(operation["value"])
    return found


def submit(
    server: ApiServer, namespace: str, name: str, job: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    """`kubectl create` of a job (one Worker unless `job` says otherwise), as its user would;
    the result, refused or not."""
    job = job or one_worker_job(name, IMAGE)
    job["metadata"]["name"] = name
    return server.kubectl("create", f"-n={namespace}", "-f", "-", input=yaml.safe_dump(job),
                          check=False)  # fmt: skip


def parameter_server_job(name: str) -> dict[str, Any]:
    """A Scheduler, two Servers and two Workers, the Workers replaced under `ExitCode`."""
    job = one_worker_job(name, IMAGE)
    (worker,) = job["spec"]["mxReplicaSpecs"].values()
    specs = {
        "Scheduler": copy.deepcopy(worker),
        "Server": copy.deepcopy(worker) | {"replicas": 2},
        "Worker": copy.deepcopy(worker) | {"replicas": 2, "restartPolicy": "ExitCode"},
    }
    job["spec"]["mxReplicaSpecs"] = specs
    return job


def pod_writes(
    audit: Path, since: int, namespace: str, verbs: tuple[str, ...]
) -> Iterator[dict[str, Any]]:
    """The audit events, from line `since` on, of a pod in `namespace` written by one of `verbs`
    (not its status, which the kubelet writes)."""
    with audit.open() as lines:
        for number, line in enumerate(lines):
            if number < since:
                continue
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if (ref.get("resource"), ref.get("namespace")) != ("pods", namespace):
                continue
            if event["verb"] in verbs and not ref.get("subresource"):
                yield event


def pod_changes(audit: Path, since: int, namespace: str) -> list[tuple[str, str, int]]:
    """Every create, patch, update and delete of a pod in `namespace`, by anyone, from line
    `since` on: (verb, pod, answer's code)."""
    verbs = ("create", "patch", "update", "delete")
    return [
        (e["verb"], e["objectRef"].get("name", ""), e["responseStatus"]["code"])
        for e in pod_writes(audit, since, namespace, verbs)
    ]


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


def sync_errors(server: ApiServer, namespace: str, job: str) -> list[str]:
    """The messages of the SyncError warnings Metacontroller recorded on a job."""
    listed = server.get("events", f"-n={namespace}", f"--field-selector=involvedObject.name={job}")
    return [e.get("message") or "" for e in listed["items"] if e["reason"] == "SyncError"]


def touched(writes: list[dict[str, Any]]) -> list[str]:
    """The writes that reach a job or its children (not training-operator's own Secret or
    its webhook configuration, which its certificate rotator keeps up to date)."""
    return [
        f"{w['verb']} {w['objectRef'].get('resource')}/{w['objectRef'].get('subresource', '')} "
        f"in {w['objectRef'].get('namespace')}"
        for w in writes
        if w["objectRef"].get("resource") in ("mxjobs", "pods", "services", "configmaps", "events")
    ]


def pod_writers(audit: Path, since: int, namespace: str) -> dict[str, list[int]]:
    """Who wrote pods in `namespace` (by user agent, up to its `/`) and the answers' codes."""
    found: dict[str, list[int]] = {}
    for event in pod_writes(audit, since, namespace, ("create", "patch", "update")):
        agent = str(event.get("userAgent", "")).split("/")[0]
        found.setdefault(agent, []).append(event["responseStatus"]["code"])
    return found
