"""A job's sync request once every child exists, as Metacontroller sends it, without creating
thousands of objects: a few children of each kind are written to the real API server and read
back (server defaults, managedFields, uid, a running pod's status, Metacontroller's
last-applied annotation), and every other child is that sample with its own identity, labels,
annotations and env. What differs between two pods of one replica type is only those."""

import copy
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml

from app.core.model.kinds import CONFIG_MAP_TYPE, POD_TYPE, SERVICE_TYPE
from app.core.mxnet.layout import Layout
from localcluster.apiserver import ApiServer
from localcluster.crds import MXJOB
from tests.support import jobs as s
from tests.support.golden_cases import released_0_1_0
from tests.support.resources import as_written, kind_key


@dataclass(frozen=True)
class Sampled:
    parent: dict[str, Any]
    answer: dict[str, Any]
    samples: dict[tuple[str, str], dict[str, Any]]


def create_parent(server: ApiServer, job: dict[str, Any]) -> dict[str, Any]:
    server.apply(job)
    ns = job["metadata"]["namespace"]
    return server.get(MXJOB, job["metadata"]["name"], f"--namespace={ns}")


def _sample_key(child: dict[str, Any]) -> tuple[str, str]:
    labels = child["metadata"].get("labels", {})
    return kind_key(child), labels.get("training.kubeflow.org/replica-type", "")


def sample_children(
    server: ApiServer, parent: dict[str, Any], now: datetime, layout: Layout = Layout.CONFIG_MAP
) -> Sampled:
    """The hook's answer that creates `parent`'s children (after its first answer, the status
    alone) in `layout` (inline: under a CompositeController
    that declares no ConfigMaps; release 0.1.0's: as that release answered), and the first
    child of each kind and replica type written as Metacontroller writes it (with its
    last-applied annotation), pods run."""
    maps: dict[str, list[dict[str, Any]]] = {} if layout is Layout.INLINE else {CONFIG_MAP_TYPE: []}
    answer = s.created(s.request(parent, others=maps), now)
    if layout is Layout.CONFIG_MAP_KEYS:
        answer = released_0_1_0(answer)
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for child in answer["children"]:
        first.setdefault(_sample_key(child), child)
    documents = [as_written(c, parent, last_applied=True) for c in first.values()]
    server.kubectl("create", "-f", "-", input=yaml.safe_dump_all(documents))
    ns = parent["metadata"]["namespace"]
    for pod in (c for c in first.values() if c["kind"] == "Pod"):
        patch = json.dumps({"status": running_status(pod)})
        server.kubectl(
            "patch", "pod", pod["metadata"]["name"], f"--namespace={ns}",
            "--subresource=status", "--type=merge", f"--patch={patch}",
        )  # fmt: skip
    # Metacontroller sends what its informers hold, managedFields included.
    listed = server.get("configmaps,pods,services", f"--namespace={ns}", "--show-managed-fields")[
        "items"
    ]
    by_name = {(kind_key(c), c["metadata"]["name"]): c for c in listed}
    samples = {key: by_name[(key[0], c["metadata"]["name"])] for key, c in first.items()}
    return Sampled(parent, answer, samples)


def running_status(pod: dict[str, Any]) -> dict[str, Any]:
    """What a kubelet reports for a running pod: addresses, its five conditions, QoS class
    and, per container, its image and container IDs and running state."""
    at = "2026-11-22T11:58:30Z"
    conditions = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
    return {
        "phase": "Running",
        "hostIP": "10.0.3.17",
        "hostIPs": [{"ip": "10.0.3.17"}],
        "podIP": "10.244.3.41",
        "podIPs": [{"ip": "10.244.3.41"}],
        "qosClass": "BestEffort",
        "startTime": at,
        "conditions": [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": at}
            for t in (*conditions, "PodScheduled")
        ],
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c["image"],
                "imageID": f"docker.io/{c['image']}@sha256:" + "a7" * 32,
                "containerID": "containerd://" + "3f" * 32,
                "ready": True,
                "started": True,
                "restartCount": 0,
                "lastState": {},
                "state": {"running": {"startedAt": at}},
            }
            for c in pod["spec"]["containers"]
        ],
    }


def observed_everything(sampled: Sampled, layout: Layout = Layout.CONFIG_MAP) -> dict[str, Any]:
    """The sync request once every child of the answer exists and every pod runs."""
    kinds: tuple[str, ...] = (POD_TYPE, SERVICE_TYPE)
    if layout is not Layout.INLINE:
        kinds = (CONFIG_MAP_TYPE, *kinds)
    children: dict[str, dict[str, Any]] = {t: {} for t in kinds}
    for child in sampled.answer["children"]:
        sample = sampled.samples[_sample_key(child)]
        seen = _like(sample, as_written(child, sampled.parent, last_applied=True))
        children[kind_key(child)][
            f"{seen['metadata']['namespace']}/{child['metadata']['name']}"
        ] = seen
    parent = sampled.parent | {"status": sampled.answer["status"]}
    return s.envelope(parent, children)


def _like(sample: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(sample)
    meta = out["metadata"]
    for key in ("name", "labels", "annotations"):
        meta[key] = written["metadata"][key]
    if "data" in written:
        out["data"] = written["data"]
    if written["kind"] == "Pod":
        wanted = written["spec"]["containers"]
        for container, own in zip(out["spec"]["containers"], wanted, strict=True):
            container["env"] = own.get("env", [])
    if written["kind"] == "Service":
        out["spec"]["selector"] = written["spec"]["selector"]
    return out
