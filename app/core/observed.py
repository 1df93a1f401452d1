"""The job's observed pods and Services, read once a sync: each pod as an attempt of a replica
index, how the pods read the job's ConfigMap, and every replica index with its attempts."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from app.core.mxconfig import LEGACY_KEYS, Layout, config_map_name
from app.core.pods import Attempt, observe
from app.core.replicas import Replica, recorded_attempts, replicas_of
from app.core.spec import MXJobSpec, ReplicaType


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


def layout(config_map: bool, observed: ConfigMapUse) -> Layout:
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
class ObservedPods:
    """The job's observed pods: each one that is the job's as an attempt, and how they read
    the job's ConfigMap."""

    attempts: list[Attempt]
    config_map_use: ConfigMapUse


def read_pods(pods: dict[str, Any], name: str) -> ObservedPods:
    """The job's observed pods (the request's `Pod.v1` children), read once for the sync."""
    # `observe` puts the pods in its own order: they need not be sorted by name first.
    return ObservedPods(observe(pods.values(), name), config_map_use(pods.values(), name))


@dataclass(frozen=True)
class ObservedReplicas:
    """The job's observed pods, as attempts, and every replica index its spec asks for."""

    attempts: list[Attempt]
    replicas: list[Replica]


def owned(
    pods: ObservedPods, services: Callable[[], Iterable[Any]], name: str, spec: MXJobSpec
) -> ObservedReplicas:
    """Every replica index of a valid spec with its attempts; `services`, the observed
    Services, is read only for an index that has no pod left."""

    def recorded() -> dict[tuple[ReplicaType, int], tuple[int, int]]:
        return recorded_attempts(services(), name)

    return ObservedReplicas(pods.attempts, replicas_of(spec, pods.attempts, recorded))
