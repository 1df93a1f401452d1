"""Check an MXJob's pod templates: what Kubernetes would refuse on the pod, said at validation
rather than at pod creation (docs/behaviour.md#validation)."""

import re
from typing import Any

from app.core.model.spec import ReplicaSpec, ReplicaType
from app.core.mxnet.kubeenv import ENV_NAME
from app.core.mxnet.names import MAIN_CONTAINER

_DNS_1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# Kubernetes' syntax for label and annotation keys (a qualified name) and label values.
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
MAX_SUBDOMAIN = 253
MAX_LABEL = 63
_QUALIFIED = (
    "a qualified name: an optional DNS subdomain prefix and '/', then at most 63 letters, "
    "digits, '-', '_' or '.', starting and ending with a letter or digit"
)


def template_problems(rtype: ReplicaType, replica: ReplicaSpec) -> list[str]:
    field = f"spec.mxReplicaSpecs.{rtype.value}.template"
    problems = _metadata_problems(field, replica.template.get("metadata"))
    return problems + _containers_problems(field, replica.template.get("spec"))


def _metadata_problems(field: str, metadata: Any) -> list[str]:
    if metadata is None:
        return []
    if not isinstance(metadata, dict):
        return [f"{field}.metadata: must be an object"]
    problems = [
        f"{field}.metadata.{key}: must map strings to strings"
        for key in ("labels", "annotations")
        if not _string_map(metadata.get(key, {}))
    ]
    return problems or _key_problems(f"{field}.metadata", metadata)


def _key_problems(field: str, metadata: dict[str, Any]) -> list[str]:
    """Keys and values Kubernetes would refuse on the pod: say so now, not at pod creation."""
    problems = [
        f"{field}.{kind}: key {key!r} must be {_QUALIFIED}"
        for kind in ("labels", "annotations")
        for key in metadata.get(kind, {})
        if not _qualified_name(key)
    ]
    return problems + [
        f"{field}.labels.{key}: value {value!r} must be empty or at most {MAX_LABEL} letters, "
        "digits, '-', '_' or '.', starting and ending with a letter or digit"
        for key, value in metadata.get("labels", {}).items()
        if not _label_value(value)
    ]


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _containers_problems(field: str, pod_spec: Any) -> list[str]:
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return [f"{field}.spec.containers: needs at least one container"]
    problems = []
    for n, container in enumerate(containers):
        problems += _container_problems(f"{field}.spec.containers[{n}]", container)
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if MAIN_CONTAINER not in names:
        problems.append(f"{field}.spec.containers: one container must be named {MAIN_CONTAINER!r}")
    return problems + _port_problems(field, containers) + _init_problems(field, pod_spec)


def _init_problems(field: str, pod_spec: dict[str, Any]) -> list[str]:
    """Init containers: only what would fail the pod's creation, their env names."""
    inits = pod_spec.get("initContainers", [])
    if not isinstance(inits, list):
        return [f"{field}.spec.initContainers: must be a list of containers"]
    problems = []
    for n, init in enumerate(inits):
        env = init.get("env", []) if isinstance(init, dict) else []
        problems += _env_problems(f"{field}.spec.initContainers[{n}]", env)
    return problems


def _container_problems(field: str, container: Any) -> list[str]:
    if not isinstance(container, dict):
        return [f"{field}: must be an object"]
    problems = []
    if not isinstance(container.get("image"), str) or not container["image"]:
        problems.append(f"{field}.image: must be a non-empty string")
    return problems + _env_problems(field, container.get("env", []))


def _env_problems(field: str, env: Any) -> list[str]:
    if not isinstance(env, list):
        return [f"{field}.env: must be a list of objects with a name"]
    return [
        f"{field}.env[{n}].name: {_env_name_problem(entry)}"
        for n, entry in enumerate(env)
        if _env_name_problem(entry)
    ]


def _env_name_problem(entry: Any) -> str:
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, str):
        return "required: every env entry needs a name"
    if not ENV_NAME.fullmatch(name):
        return f"{name!r} must be printable ASCII without '=', at least one character"
    return ""


def _port_problems(field: str, containers: list[Any]) -> list[str]:
    for n, container in enumerate(containers):
        if not isinstance(container, dict) or container.get("name") != MAIN_CONTAINER:
            continue
        ports = container.get("ports", [])
        if not isinstance(ports, list) or not all(isinstance(p, dict) for p in ports):
            return [f"{field}.spec.containers[{n}].ports: must be a list of objects"]
        for m, port in enumerate(ports):
            number = port.get("containerPort")
            if type(number) is not int or not 0 < number < 65536:
                return [f"{field}.spec.containers[{n}].ports[{m}].containerPort: must be 1-65535"]
    return []


def subdomain(value: str) -> bool:
    """Whether `value` is a DNS-1123 subdomain."""
    return len(value) <= MAX_SUBDOMAIN and _DNS_1123_SUBDOMAIN.fullmatch(value) is not None


def _qualified_name(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and not subdomain(prefix):
        return False
    return len(name) <= MAX_LABEL and _NAME.fullmatch(name) is not None


def _label_value(value: str) -> bool:
    return value == "" or (len(value) <= MAX_LABEL and _NAME.fullmatch(value) is not None)
