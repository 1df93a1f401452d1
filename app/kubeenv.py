"""A container's environment as the kubelet hands it to the process: ConfigMap references
resolved and `$(NAME)` expanded, following kubelet v1.32 (`makeEnvironmentVariables` in
pkg/kubelet/kubelet_pods.go and third_party/forked/golang/expansion/expand.go).

The hook, `python -m app render --expand`, the tests and the e2e kubelet double all read a
pod's environment through this one function, so what they check is what a process reads.
What it does not model: `fieldRef`, `resourceFieldRef` and `secretKeyRef` sources, and
`envFrom` Secrets; a container that uses them is refused with EnvError naming the variable.
"""

import re
from collections.abc import Mapping
from typing import Any

_OPERATOR, _OPENER, _CLOSER = ord("$"), ord("("), ord(")")
# A variable name as kubelet v1.32 takes it (RelaxedEnvironmentVariableValidation): printable
# ASCII without `=`.
_ENV_NAME = re.compile(r"[ -<>-~]+")


class EnvError(Exception):
    """The kubelet would not start the container (CreateContainerConfigError), or this
    module does not model the variable's source."""


def expand(value: str, *defined: Mapping[str, str]) -> str:
    """`value` with `$(NAME)` replaced by the first mapping that defines NAME, `$$` turned
    into `$`, and anything else (an undefined or unclosed reference, a lone `$`) kept.

    Works on UTF-8 bytes as the Go original does, including its one quirk: a `$` before a
    byte that starts neither `$` nor `(` copies that byte as the code point of its value."""
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
    """The environment the container's process starts with, in the kubelet's order: its
    `envFrom` ConfigMaps, then `env` in order (a later entry of the same name wins), then
    the service variables it does not set. `config_maps` maps a ConfigMap's name to the
    ConfigMap (its `data` is read); `service_env` are the Docker-link style variables of
    the namespace's Services (none for headless Services, the only ones the hook makes).
    Among `envFrom` sources a later one wins; an `env` entry beats them all. A missing key
    of an `envFrom` ConfigMap is no error: the variable is just not there."""
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
    return {k: str(v) for k, v in named if _ENV_NAME.fullmatch(k)}
