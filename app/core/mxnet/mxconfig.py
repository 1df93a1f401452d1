"""What the job's pods are made of beyond the user's template: the mxnet container and its port,
MX_CONFIG's text and the job-wide variables, shared by the pods' builder and the size rule;
and MX_CONFIG's length, worked out from the replica counts alone (a job of any size costs the
same to check)."""

import json
from typing import Any

import orjson

from app.core.model.spec import MXJobSpec, ReplicaSpec, ReplicaType
from app.core.mxnet import names

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


def mx_config_bytes(name: str, spec: MXJobSpec) -> int:
    """The length of the longest MX_CONFIG the job's processes read, worked out from the
    counts alone (a job of any size costs the same): what `shared_parts` and
    `mx_config_around_index` write, character for character."""
    cluster = 1 + max(len(spec.mxReplicaSpecs) - 1, 0)  # its `{`, and commas between types
    task = 0
    for rtype, replica in spec.mxReplicaSpecs.items():
        n, kind = replica.replicas, rtype.lowered
        cluster += _cluster_length(name, rtype, replica)
        if n:
            task = max(task, len(f'"task":{{"index":,"type":"{kind}"}}}}') + len(str(n - 1)))
    labels = labels_text(spec)
    return len('{"cluster":}') + cluster + len(',"labels":,') + len(labels) + task


def cluster_text_counts(name: str, spec: MXJobSpec) -> tuple[int, int, int, int]:
    """MX_CONFIG's `cluster` map as (characters, `"`, `{`/`[`, `,`), from the counts alone
    as `mx_config_bytes` works it out: no name or port needs escaping in JSON or for the
    kubelet."""
    between = max(len(spec.mxReplicaSpecs) - 1, 0)  # commas between types
    length, quotes, brackets, commas = 2 + between, 0, 1, between
    for rtype, replica in spec.mxReplicaSpecs.items():
        n = replica.replicas
        length += _cluster_length(name, rtype, replica)
        quotes += 2 + 6 * n
        brackets += 1 + n
        commas += n + max(n - 1, 0)
    return length, quotes, brackets, commas


def _cluster_length(name: str, rtype: ReplicaType, replica: ReplicaSpec) -> int:
    """The characters of one replica type's `"<type>":[...]` in MX_CONFIG's `cluster`."""
    n, kind = replica.replicas, rtype.lowered
    entry = len('{"port":,"url":"--"}') + len(str(main_port(replica))) + len(name) + len(kind)
    return len(f'"{kind}":[]') + n * entry + _digits(n) + max(n - 1, 0)


def _digits(n: int) -> int:
    """How many digits the indices 0 to n-1 have in all."""
    total, low = 0, 0
    for width in range(1, len(str(n)) + 1):
        high = 10**width
        total += width * max(min(n, high) - low, 0)
        low = high
    return total
