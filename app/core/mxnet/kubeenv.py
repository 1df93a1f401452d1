"""A container's environment as the kubelet v1.32 hands it to the process (ConfigMap
references resolved, `$(NAME)` expanded): the one reading the hook, the CLI, the tests and the
e2e kubelet double share (docs/behaviour.md#user-text-and-the-kubelets-var-expansion)."""

import re
from collections.abc import Mapping
from typing import Any

from app.core.model.errors import EnvError

_OPERATOR, _OPENER, _CLOSER = ord("$"), ord("("), ord(")")
# A variable name as kubelet v1.32 takes it (RelaxedEnvironmentVariableValidation): printable
# ASCII without `=`.
ENV_NAME = re.compile(r"[ -<>-~]+")


def expand(value: str, *defined: Mapping[str, str]) -> str:
    """`value` with `$(NAME)` replaced by the first mapping that defines NAME and `$$` by `$`,
    anything else kept; on UTF-8 bytes, as Go's `expansion.Expand`, quirk included (a `$` before
    a byte that starts neither `$` nor `(` copies that byte as the code point of its value)."""
    data = value.encode("utf-8", "surrogateescape")
    out = bytearray()
    checkpoint, cursor = 0, 0
    while cursor < len(data):
        if data[cursor] == _OPERATOR and cursor + 1 < len(data):
            out += data[checkpoint:cursor]
            read, advance = _reference(data[cursor + 1 :], defined)
            out += read
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out += data[checkpoint:]
    return out.decode("utf-8", "surrogateescape")


def _reference(rest: bytes, defined: tuple[Mapping[str, str], ...]) -> tuple[bytes, int]:
    """What `$` followed by `rest` becomes, and how many bytes of `rest` it consumed."""
    first = rest[0]
    if first == _OPERATOR:
        return b"$", 1
    if first != _OPENER:
        return b"$" + chr(first).encode("utf-8"), 1
    closer = rest.find(_CLOSER, 1)
    if closer < 0:
        return b"$(", 1
    name = rest[1:closer].decode("utf-8", "surrogateescape")
    for mapping in defined:
        if name in mapping:
            return mapping[name].encode("utf-8", "surrogateescape"), closer + 1
    return b"$(" + rest[1:closer] + b")", closer + 1


def resolve(
    container: Mapping[str, Any],
    config_maps: Mapping[str, Mapping[str, Any]],
    service_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The process's environment in the kubelet's order: `envFrom` ConfigMaps (by name in
    `config_maps`; a later source wins, a missing key is no error), then `env` (a later entry
    wins), then the `service_env` variables it does not set."""
    services = dict(service_env or {})
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        env |= _from_config_map(source, config_maps)
    for var in container.get("env") or []:
        name = var["name"]
        value = var.get("value") or ""
        if value:
            env[name] = expand(value, env, services)
        elif var.get("valueFrom") is not None:
            found = _value_from(name, var["valueFrom"], config_maps)
            if found is not None:
                env[name] = found
        else:
            env[name] = ""
    return env | {k: v for k, v in services.items() if k not in env}


def _value_from(
    name: str, source: Mapping[str, Any], config_maps: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """A `valueFrom.configMapKeyRef`'s value; None when an optional one is missing."""
    ref = source.get("configMapKeyRef")
    if ref is None:
        raise EnvError(f"env {name}: only configMapKeyRef sources are modelled, got {source}")
    optional = bool(ref.get("optional"))
    config_map = config_maps.get(ref.get("name", ""))
    if config_map is None:
        if optional:
            return None
        raise EnvError(f'env {name}: configmap "{ref.get("name")}" not found')
    data = config_map.get("data") or {}
    if ref.get("key") not in data:
        if optional:
            return None
        raise EnvError(
            f"env {name}: couldn't find key {ref.get('key')} in ConfigMap {ref.get('name')}"
        )
    return str(data[ref["key"]])


def _from_config_map(
    source: Mapping[str, Any], config_maps: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    ref = source.get("configMapRef")
    if ref is None:
        raise EnvError(f"envFrom: only configMapRef sources are modelled, got {source}")
    config_map = config_maps.get(ref.get("name", ""))
    if config_map is None:
        if ref.get("optional"):
            return {}
        raise EnvError(f'envFrom: configmap "{ref.get("name")}" not found')
    prefix = source.get("prefix") or ""
    # A key that is not a variable name once prefixed is skipped (the kubelet records an
    # InvalidEnvironmentVariableNames event and starts the container without it).
    named = ((prefix + k, v) for k, v in (config_map.get("data") or {}).items())
    return {k: str(v) for k, v in named if ENV_NAME.fullmatch(k)}
