"""What the job's pods are made of beyond the user's template: the mxnet container and its port,
MX_CONFIG's text and the job-wide variables, shared by the pods' builder and the size rule."""

import json
from typing import Any

import orjson

from app.core import names
from app.core.spec import MXJobSpec, ReplicaSpec, ReplicaType

PORT_NAME = "mxjob-port"
DEFAULT_PORT = 9091
TUNER_SERVER_KEY = "tuner-server-key"
# MX_CONFIG's shared parts, O(replicas) each: the variables that carry them into every
# container, ahead of the MX_CONFIG that refers to them, and the ConfigMap keys release
# 0.1.0 stored them under (its pods read those keys through configMapKeyRef).
SHARED_PARTS = (("MX_CONFIG_CLUSTER", "cluster"), ("MX_CONFIG_LABELS", "labels"))
LEGACY_KEYS = tuple(key for _, key in SHARED_PARTS)
# The variables every container of a job reads with the same value: the keys of the job's
# ConfigMap, in its order, which every container imports through one `envFrom`.
JOB_ENV = (
    *(variable for variable, _ in SHARED_PARTS),
    "DMLC_PS_ROOT_URI",
    "DMLC_PS_ROOT_PORT",
    "DMLC_NUM_SERVER",
    "DMLC_NUM_WORKER",
    "DMLC_USE_KUBERNETES",
)
# The one ConfigMap key each container also reads by name, so a ConfigMap of the job's name
# that is not the job's holds its pods back; why this one (docs/security.md#the-jobs-configmap).
REQUIRED_KEY = "MX_CONFIG_LABELS"
# Only the operator sets these: a template's own entry of one of these names is dropped.
RESERVED_ENV = (*JOB_ENV, "MX_CONFIG", "DMLC_ROLE", "DMLC_WORKER_ID")


def main_container(template: dict[str, Any]) -> dict[str, Any]:
    """The template's mxnet container."""
    containers: list[dict[str, Any]] = template["spec"]["containers"]
    return next(c for c in containers if c.get("name") == names.MAIN_CONTAINER)


def main_port(replica: ReplicaSpec) -> int:
    """The replica's mxjob-port: the one its mxnet container declares, or 9091."""
    for port in main_container(replica.template).get("ports") or []:
        if port.get("name") == PORT_NAME:
            number: int = port["containerPort"]
            return number
    return DEFAULT_PORT


def service_port(port: dict[str, Any]) -> dict[str, Any]:
    """The Service's port for a port of the mxnet container."""
    number = port["containerPort"]
    out = {"name": port.get("name") or f"port-{number}", "port": number, "targetPort": number}
    if port.get("protocol"):
        out["protocol"] = port["protocol"]
    return out


def tuner_label(replica: ReplicaSpec) -> str:
    annotations = (replica.template.get("metadata") or {}).get("annotations") or {}
    label = annotations.get(TUNER_SERVER_KEY, replica.label or "")
    return str(label)


def config_map_name(job: str) -> str:
    return f"{job}-mx-config"


def kubelet_literal(text: str) -> str:
    """`text` as an env `value` that the kubelet's `$(VAR)` expansion turns into `text`
    itself: every `$` doubled (`$$` expands to `$`, and nothing else does)."""
    return text.replace("$", "$$")


# MX_CONFIG's maps as `json.dumps(value, sort_keys=True, separators=(",", ":"))` writes them,
# without making an encoder on every call.
_MX_CONFIG_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def shared_parts(name: str, spec: MXJobSpec) -> dict[str, str]:
    """MX_CONFIG's `cluster` and `labels` values as JSON text, keyed by the variables that
    carry them."""
    cluster = {
        t.lowered: [{"port": port, "url": names.child_name(name, t, i)} for i in range(r.replicas)]
        for t, r in spec.mxReplicaSpecs.items()
        for port in (main_port(r),)
    }
    return {
        "MX_CONFIG_CLUSTER": _MX_CONFIG_JSON.encode(cluster),
        "MX_CONFIG_LABELS": labels_text(spec),
    }


def labels_text(spec: MXJobSpec) -> str:
    """MX_CONFIG's `labels` map as the process reads it."""
    labels = {t.lowered: tuner_label(r) for t, r in spec.mxReplicaSpecs.items()}
    return _MX_CONFIG_JSON.encode(labels)


# Where a pod's replica index goes in MX_CONFIG's text (`mx_config_around_index`).
_INDEX = "\x00"


def mx_config_around_index(cluster: str, labels: str, kind: str) -> tuple[str, str]:
    """MX_CONFIG for a replica type, in two pieces that each pod joins around its index: the
    compact JSON object `{"cluster": ..., "labels": ..., "task": {"index": <index>, "type":
    kind}}`, keys sorted, `cluster` and `labels` the JSON text given (or `$(VAR)` references)."""
    text = orjson.dumps(
        {
            "cluster": orjson.Fragment(cluster),
            "labels": orjson.Fragment(labels),
            "task": {"index": orjson.Fragment(_INDEX), "type": kind},
        },
        option=orjson.OPT_SORT_KEYS,
    ).decode()
    before, after = text.split(_INDEX)
    return before, after


def dmlc_env(name: str, spec: MXJobSpec) -> tuple[dict[str, str], ...]:
    """The job-wide DMLC_* variables but DMLC_USE_KUBERNETES."""
    scheduler = spec.mxReplicaSpecs.get(ReplicaType.SCHEDULER)
    root = names.child_name(name, ReplicaType.SCHEDULER, 0) if scheduler else ""
    return (
        {"name": "DMLC_PS_ROOT_URI", "value": root},
        {"name": "DMLC_PS_ROOT_PORT", "value": str(main_port(scheduler) if scheduler else 0)},
        {"name": "DMLC_NUM_SERVER", "value": str(spec.replicas(ReplicaType.SERVER))},
        {"name": "DMLC_NUM_WORKER", "value": str(spec.replicas(ReplicaType.WORKER))},
    )


def legacy_key_env(name: str) -> tuple[dict[str, Any], ...]:
    """MX_CONFIG's shared parts read key by key, as release 0.1.0 wrote them."""
    return tuple(
        {
            "name": variable,
            "valueFrom": {"configMapKeyRef": {"name": config_map_name(name), "key": key}},
        }
        for variable, key in SHARED_PARTS
    )
