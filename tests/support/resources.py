"""The MXJob CRD with and without its CEL rules, and a child as Metacontroller would write it
for its parent."""

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import yaml

from app.core.observe.applied import LAST_APPLIED
from localcluster.apiserver import ApiServer
from localcluster.crds import MXJOB_CRD
from localcluster.waiting import wait_for

CONTROLLER_UID = "controller-uid"
SERVER_WRITTEN = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def without_rules(document: Any) -> Any:
    """The document with every `x-kubernetes-validations` (CEL rule list) left out."""
    if isinstance(document, dict):
        return {k: without_rules(v) for k, v in document.items() if k != "x-kubernetes-validations"}
    if isinstance(document, list):
        return [without_rules(item) for item in document]
    return document


@contextmanager
def crd_without_rules(server: ApiServer, namespace: str, probe: dict[str, Any]) -> Iterator[None]:
    """Inside the block the MXJob CRD has no CEL rules, as on a cluster that ignores them (CRD
    validation rules are GA only since Kubernetes 1.29), so what they refuse reaches the hook.
    The API server takes a CRD change into its handlers asynchronously: the block starts once
    a dry run admits `probe`, a job the rules refuse, and ends once the restored rules refuse
    it again."""
    shipped = yaml.safe_load(MXJOB_CRD.read_text())
    server.apply(without_rules(shipped))
    try:
        wait_for(lambda: admits(server, namespace, probe), "the CRD without its rules")
        yield
    finally:
        server.apply(shipped)
        wait_for(lambda: not admits(server, namespace, probe), "the CRD with its rules again")


def admits(server: ApiServer, namespace: str, document: dict[str, Any]) -> bool:
    """Whether the API server would accept `document` now (a server-side dry run)."""
    result = server.kubectl(
        "create", "--dry-run=server", f"--namespace={namespace}", "-f", "-",
        input=yaml.safe_dump(document), check=False,
    )  # fmt: skip
    return result.returncode == 0


def owner_reference(parent: dict[str, Any]) -> dict[str, Any]:
    """The ownerReference Metacontroller gives every child of `parent`."""
    return {
        "apiVersion": parent["apiVersion"],
        "kind": parent["kind"],
        "name": parent["metadata"]["name"],
        "uid": parent["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def as_written(
    child: dict[str, Any], parent: dict[str, Any], last_applied: bool = False
) -> dict[str, Any]:
    """A child of the hook's answer as Metacontroller writes it for `parent`: without what the
    server writes (status, uid, resourceVersion, ...), in the parent's namespace, with the parent
    as controlling owner and the `controller-uid` label of generateSelector; with `last_applied`,
    also the annotation in which Metacontroller's apply keeps what it applied, compact JSON as Go
    writes it."""
    out = copy.deepcopy(child)
    out.pop("status", None)
    meta = out["metadata"]
    for field in SERVER_WRITTEN:
        meta.pop(field, None)
    meta["namespace"] = parent["metadata"]["namespace"]
    meta["labels"] = meta.get("labels", {}) | {CONTROLLER_UID: parent["metadata"]["uid"]}
    meta["ownerReferences"] = [owner_reference(parent)]
    if last_applied:
        meta["annotations"] = meta.get("annotations", {}) | {
            LAST_APPLIED: json.dumps(out, separators=(",", ":"))
        }
    return out


def kind_key(child: dict[str, Any]) -> str:
    """The key of the child's type in a sync request: `Pod.v1`, `PodGroup.<group>/<version>`."""
    return f"{child['kind']}.{child['apiVersion']}"


def resource(key: str) -> str:
    """What kubectl calls a child type: `pods`, `podgroups.scheduling.volcano.sh`, ..."""
    kind, _, api_version = key.partition(".")
    group = api_version.rpartition("/")[0]
    plural = kind.lower() + "s"
    return f"{plural}.{group}" if group else plural
