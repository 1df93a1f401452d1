"""How the job's pods read its ConfigMap, in one place: what the observed pods show, the layout
the size rule bounds, and how the pods a sync builds read it."""

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from app.core.model.spec import MXJobSpec
from app.core.mxnet.mxconfig import LEGACY_KEYS, config_map_name, dmlc_env, legacy_key_env


class Layout(Enum):
    """Where a job's pods find MX_CONFIG's shared parts, which decides how large its sync
    requests grow (the size rule, app/core/validate/sizerule.py)."""

    # In the job's ConfigMap, through `envFrom`: a pod is O(1).
    CONFIG_MAP = "ConfigMap"
    # In the job's ConfigMap under release 0.1.0's keys, read key by key, with every DMLC_*
    # variable in the pod's own env: a pod is O(1).
    CONFIG_MAP_KEYS = "ConfigMap keys"
    # Whole in every container's env: a pod is O(replicas), a sync request O(replicas^2).
    INLINE = "inline"


@dataclass(frozen=True)
class ConfigMapUse:
    """How the job's observed pods read its ConfigMap (`config_map_use` finds out)."""

    # By release 0.1.0's keys `cluster` and `labels` (`configMapKeyRef`).
    old_keys: bool = False
    # Whole, through `envFrom`, as this version makes them.
    env_from: bool = False
    # Not at all: MX_CONFIG whole in their own env, made under a CompositeController that
    # declared no ConfigMaps.
    inline: bool = False


# Pods all made anew: none observed.
NO_PODS = ConfigMapUse()


def layout_for(config_map: bool, observed: ConfigMapUse) -> Layout:
    """The layout whose requests the size rule must bound: inline without ConfigMap children
    or while an observed pod carries MX_CONFIG whole (its env never changes), release
    0.1.0's while a pod reads its keys."""
    if not config_map or observed.inline:
        return Layout.INLINE
    return Layout.CONFIG_MAP_KEYS if observed.old_keys else Layout.CONFIG_MAP


def config_map_use(pods: Iterable[Any], name: str) -> ConfigMapUse:
    """How these observed pods read the job's ConfigMap, in any order. Pods are never
    updated (OnDelete), so a pod keeps its env for life, and a container that restarts in it
    must still find what it reads."""
    wanted = config_map_name(name)
    old_keys = env_from = inline = False
    # Every container of every observed pod on every sync: one flat loop, no call per
    # container where its `envFrom` names no ConfigMap of the job's.
    # (docs/performance.md#fourth-pass-sync-for-the-typical-job-again)
    for pod in pods:
        spec = pod.get("spec") if isinstance(pod, dict) else None
        containers = spec.get("containers") if isinstance(spec, dict) else None
        for container in containers if isinstance(containers, list) else ():
            if not isinstance(container, dict):
                continue
            # A container of this version's layout has no key reference to look for: its
            # `envFrom` is a list of one or two, its `env` would be a scan.
            sources = container.get("envFrom")
            for source in sources if isinstance(sources, list) else ():
                ref = source.get("configMapRef") if isinstance(source, dict) else None
                if isinstance(ref, dict) and ref.get("name") == wanted:
                    env_from = True
                    break
            else:
                if not old_keys:
                    old_keys = _reads_old_keys(container.get("env"), wanted)
                if not inline:
                    inline = _carries_whole_mx_config(container.get("env"))
    return ConfigMapUse(old_keys, env_from, inline)


def _carries_whole_mx_config(env: Any) -> bool:
    """Whether MX_CONFIG's text holds the cluster itself, not a reference to it."""
    for var in env if isinstance(env, list) else ():
        if isinstance(var, dict) and var.get("name") == "MX_CONFIG":
            value = var.get("value")
            return isinstance(value, str) and value.startswith('{"cluster":{')
    return False


def _reads_old_keys(env: Any, config_map: str) -> bool:
    for var in env if isinstance(env, list) else ():
        source = var.get("valueFrom") if isinstance(var, dict) else None
        ref = source.get("configMapKeyRef") if isinstance(source, dict) else None
        if isinstance(ref, dict) and ref.get("name") == config_map:
            return ref.get("key") in LEGACY_KEYS
    return False


@dataclass(frozen=True)
class NewPods:
    """How the pods a sync builds read the job's ConfigMap, and what it holds for them
    (`new_pods` works it out)."""

    # The controller declares ConfigMap children: the job has one.
    config_map: bool = False
    # Each container imports it whole through `envFrom`.
    env_from: bool = False
    # It holds MX_CONFIG's shared parts under release 0.1.0's keys, read key by key, since an
    # `envFrom` of the same ConfigMap would import those keys as variables too.
    legacy_keys: bool = False
    # It holds the variables under their own names: always but in the layout above, and
    # there too while an observed pod takes them in through `envFrom`.
    named_keys: bool = True


def new_pods(config_map: bool, observed: ConfigMapUse) -> NewPods:
    """How the pods the sync builds read the ConfigMap: as the observed pods of release 0.1.0
    do while one does (docs/behaviour.md#children), else through `envFrom`."""
    legacy = config_map and observed.old_keys
    return NewPods(
        config_map,
        env_from=config_map and not legacy,
        legacy_keys=legacy,
        named_keys=not legacy or observed.env_from,
    )


def own_env(name: str, spec: MXJobSpec, layout: Layout) -> tuple[dict[str, Any], ...]:
    """What a container of release 0.1.0's layout or of the inline one carries in its env
    beyond the ConfigMap layout's, besides MX_CONFIG: the job-wide variables, and 0.1.0's
    `cluster` key reference (its `labels` one is as long as REQUIRED_KEY's); none in the
    ConfigMap layout."""
    if layout is Layout.CONFIG_MAP:
        return ()
    job_wide = (*dmlc_env(name, spec), {"name": "DMLC_USE_KUBERNETES", "value": "1"})
    return (legacy_key_env(name)[0], *job_wide) if layout is Layout.CONFIG_MAP_KEYS else job_wide
