"""The job's observed pods and Services, read once a sync: each pod as an attempt of a replica
index, how the pods read the job's ConfigMap, and every replica index with its attempts."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from app.core.layout import ConfigMapUse, config_map_use
from app.core.pods import Attempt, observe
from app.core.replicas import Replica, recorded_attempts, replicas_of
from app.core.spec import MXJobSpec, ReplicaType


@dataclass(frozen=True)
class ObservedPods:
    """The job's observed pods: each one that is the job's as an attempt, how they read the
    job's ConfigMap, and whether Metacontroller sent any pod at all."""

    attempts: list[Attempt]
    config_map_use: ConfigMapUse
    any_pod: bool


def read_pods(pods: dict[str, Any], name: str) -> ObservedPods:
    """The job's observed pods (the request's `Pod.v1` children), read once for the sync."""
    # `observe` puts the pods in its own order: they need not be sorted by name first.
    return ObservedPods(
        observe(pods.values(), name), config_map_use(pods.values(), name), any_pod=bool(pods)
    )


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
