"""One MXJob through the real stack: apply it into a namespace as its user would, read back what
Metacontroller and the hook made of it, and wait until it reaches a state."""

import copy
from dataclasses import dataclass
from typing import Any

import yaml

from localcluster.apiserver import ApiServer
from localcluster.kubelet import Kubelet
from localcluster.rest import Rest
from localcluster.waiting import WAIT, wait_for
from tests.support import REPO
from tests.support.resources import CONTROLLER_UID

# Where a job's children can be: the CompositeController's child types, and ConfigMaps, which
# the contract allows for (one per job, carrying MX_CONFIG).
CHILD_LISTS = {
    "Pod": "/api/v1/namespaces/{}/pods",
    "Service": "/api/v1/namespaces/{}/services",
    "ConfigMap": "/api/v1/namespaces/{}/configmaps",
}
CREATED = {"Created": "MXJobCreated"}
RUNNING = CREATED | {"Running": "MXJobRunning"}


def manifest(relative: str) -> dict[str, Any]:
    """A manifest of the repository (`examples/dist-cpu.yaml`), as a dict."""
    document: dict[str, Any] = yaml.safe_load((REPO / relative).read_text())
    return document


def expected_children(job: dict[str, Any]) -> list[str]:
    """`<job>-<replica type, lower-cased>-<index>` for every replica the manifest asks for."""
    name = job["metadata"]["name"]
    return sorted(
        f"{name}-{rtype.lower()}-{index}"
        for rtype, spec in job["spec"]["mxReplicaSpecs"].items()
        for index in range(spec.get("replicas", 1))
    )


@dataclass(frozen=True)
class State:
    """What a user sees of a job: its True conditions (type: reason), its pods (name: phase)
    and its Services (names)."""

    conditions: dict[str, str]
    pods: dict[str, str]
    services: tuple[str, ...]


@dataclass(frozen=True)
class Job:
    server: ApiServer
    rest: Rest
    namespace: str
    name: str

    @property
    def path(self) -> str:
        return f"/apis/kubeflow.org/v1/namespaces/{self.namespace}/mxjobs/{self.name}"

    def get(self) -> dict[str, Any]:
        return self.rest.get(self.path)

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = self.get().get("status") or {}
        return status

    def condition(self, ctype: str) -> dict[str, Any] | None:
        conditions = self.status().get("conditions") or []
        return next((c for c in conditions if c["type"] == ctype), None)

    def children(self) -> dict[str, dict[str, Any]]:
        """`Kind/name` of every child Metacontroller made for this job (by its selector label)."""
        selector = f"?labelSelector={CONTROLLER_UID}%3D{self.get()['metadata']['uid']}"
        return {
            f"{kind}/{child['metadata']['name']}": child
            for kind, path in CHILD_LISTS.items()
            for child in self.rest.get(path.format(self.namespace) + selector)["items"]
        }

    def state(self) -> State:
        parent = self.get()
        conditions = (parent.get("status") or {}).get("conditions") or []
        children = self.children()
        return State(
            conditions={c["type"]: c["reason"] for c in conditions if c["status"] == "True"},
            pods={
                key.split("/", 1)[1]: child.get("status", {}).get("phase", "")
                for key, child in sorted(children.items())
                if key.startswith("Pod/")
            },
            services=tuple(
                sorted(k.split("/", 1)[1] for k in children if k.startswith("Service/"))
            ),
        )

    def reaches(self, expected: State, what: str, timeout: float = WAIT) -> State:
        """Wait until the job is exactly in `expected`."""
        return wait_for(self.state, f"{what} ({expected})", timeout, lambda s: s == expected)

    def versions(self) -> dict[str, str]:
        """resourceVersion of the MXJob and of each child: any write to one changes it."""
        found = {f"MXJob/{self.name}": self.get()["metadata"]["resourceVersion"]}
        found |= {
            key: child["metadata"]["resourceVersion"] for key, child in self.children().items()
        }
        return found

    def warnings(self, reason: str) -> int:
        """How many times a Warning event with `reason` was recorded on the MXJob."""
        events = self.rest.get(
            f"/api/v1/namespaces/{self.namespace}/events"
            f"?fieldSelector=involvedObject.name%3D{self.name},reason%3D{reason}"
        )["items"]
        return sum(e.get("count") or 1 for e in events if e["type"] == "Warning")

    def warning_messages(self, reason: str) -> list[str]:
        """The messages of the Warning events with `reason` recorded on the MXJob."""
        events = self.rest.get(
            f"/api/v1/namespaces/{self.namespace}/events"
            f"?fieldSelector=involvedObject.name%3D{self.name},reason%3D{reason}"
        )["items"]
        return [e.get("message") or "" for e in events if e["type"] == "Warning"]

    def apply(self, job: dict[str, Any]) -> None:
        """`kubectl apply` of an edited manifest of this job."""
        apply(self.server, self.namespace, job)


def content(child: dict[str, Any]) -> tuple[str, Any, Any, Any]:
    """A child's identity and what it is: uid, labels, spec (a ConfigMap's data)."""
    meta = child["metadata"]
    return meta["uid"], meta.get("labels"), child.get("spec"), child.get("data")


def apply(server: ApiServer, namespace: str, job: dict[str, Any]) -> None:
    server.kubectl(
        "apply", f"--namespace={namespace}", "-f", "-", input=yaml.safe_dump(job, sort_keys=False)
    )


def apply_job(server: ApiServer, rest: Rest, namespace: str, job: dict[str, Any]) -> Job:
    """`kubectl apply -f` of the manifest into `namespace`, as its user would submit it."""
    document = copy.deepcopy(job)
    apply(server, namespace, document)
    return Job(server, rest, namespace, document["metadata"]["name"])


def pods(phase: str, *names: str) -> dict[str, str]:
    """Pods by phase, for a `State`."""
    return dict.fromkeys(names, phase)


def run_job(server: ApiServer, rest: Rest, namespace: str, job: dict[str, Any]) -> Job:
    """The job applied, its pods created and then started by the kubelet, the job Running
    and its status counting every replica active."""
    applied = apply_job(server, rest, namespace, job)
    names = tuple(expected_children(job))
    applied.reaches(State(CREATED, pods("Pending", *names), names), "created")
    Kubelet(rest, namespace).run(*names)
    applied.reaches(State(RUNNING, pods("Running", *names), names), "running")
    # `Running` can be written before the last pod's start is counted (the scheduler decides):
    # wait for the status that counts every replica active, the one nothing changes after.
    wait_for(
        lambda: active(applied.status()),
        "every replica counted active",
        until=lambda n: n == len(names),
    )
    return applied


def active(status: dict[str, Any]) -> int:
    """Replicas the status counts as active (running), over all replica types."""
    counts = status.get("replicaStatuses") or {}
    return sum(c.get("active", 0) for c in counts.values())
