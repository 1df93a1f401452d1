"""The job's observed pods and Services, read once a sync: per replica index, the current
attempt, what it needs, and which pods to keep; and how the pods read the job's ConfigMap."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.core.model.spec import MXJobSpec, ReplicaType, RestartPolicy
from app.core.mxnet import names
from app.core.mxnet.layout import ConfigMapUse, config_map_use
from app.core.observe.pods import Attempt, count, observe, replica_of

RETRYABLE_EXIT = 128


class ReplicaState(StrEnum):
    MISSING = "missing"
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    RETRY = "retry"
    PERMANENT = "permanent"


# Not frozen (see Attempt): nothing changes a Replica once it is made.
@dataclass(slots=True)
class Replica:
    """One replica index of a job and every attempt of it that was observed."""

    rtype: ReplicaType
    index: int
    policy: RestartPolicy
    attempts: tuple[Attempt, ...]
    # (attempt, restarts before it) recorded on the replica's Service, for when no pod is left.
    recorded: tuple[int, int] = (0, 0)
    # Worked out once: status, restarts and the children each ask, for every replica index.
    current: Attempt | None = field(init=False)
    state: ReplicaState = field(init=False)

    def __post_init__(self) -> None:
        self.current = self.attempts[-1] if self.attempts else None
        self.state = _state_of(self.policy, self.current)

    @property
    def restarts(self) -> int:
        """Restarts of this index so far, counting a replacement this sync asks for."""
        current = self.current
        done = current.restarts if current else self.recorded[1]
        return done + (self.state is ReplicaState.RETRY)

    @property
    def next_attempt(self) -> tuple[int, int]:
        """(attempt, restarts before it) of the pod this index should be running."""
        current = self.current
        if current is None:
            return self.recorded
        if self.state is ReplicaState.RETRY:
            return current.attempt + 1, current.restarts + 1
        return current.attempt, current.restarts_before

    @property
    def replaced(self) -> Attempt | None:
        """The failed attempt before the current one, kept while its replacement starts."""
        previous = self.attempts[-2] if len(self.attempts) > 1 else None
        return previous if previous and previous.phase == "Failed" else None

    @property
    def restarting(self) -> bool:
        """A failed attempt is being replaced: asked for this sync, or pending."""
        if self.state is ReplicaState.RETRY:
            return True
        return self.state is ReplicaState.PENDING and self.replaced is not None

    @property
    def last_failed(self) -> Attempt | None:
        """The failed attempt that makes this index restart (`restarting`)."""
        return self.current if self.state is ReplicaState.RETRY else self.replaced

    def going_on(self) -> Attempt | None:
        """The one observed attempt to keep, if it is also the pod this index should be
        running: the usual case, worked out without `next_attempt` and `keep_while_running`."""
        current = self.current
        if current is None or self.state is ReplicaState.RETRY:
            return None
        if len(self.attempts) == 1 or current.phase in ("Running", "Succeeded"):
            return current
        return None

    def keep_while_running(self) -> list[Attempt]:
        """Observed attempts to keep while the job runs: the last failed one stays, for
        `kubectl logs`, until its replacement is running."""
        current = self.current
        if current is None:
            return []
        if self.state is ReplicaState.RETRY or len(self.attempts) == 1:
            return [current]
        if current.phase in ("Running", "Succeeded"):
            return [current]
        return list(self.attempts[-2:])


def _state_of(policy: RestartPolicy, current: Attempt | None) -> ReplicaState:
    if current is None:
        return ReplicaState.MISSING
    if current.phase == "Failed":
        return ReplicaState.RETRY if _retryable(policy, current) else ReplicaState.PERMANENT
    return _PHASE_STATES.get(current.phase, ReplicaState.PENDING)


_PHASE_STATES = {"Running": ReplicaState.RUNNING, "Succeeded": ReplicaState.SUCCEEDED}


def _retryable(policy: RestartPolicy, current: Attempt) -> bool:
    if policy is RestartPolicy.NEVER:
        return False
    if policy is RestartPolicy.EXIT_CODE and current.exit_code is not None:
        # 1-127 are the program's own verdict; 128+ are signals and user-retryable codes.
        return current.exit_code == 0 or current.exit_code >= RETRYABLE_EXIT
    return True


def recorded_attempts(
    services: Iterable[Any], job: str
) -> dict[tuple[ReplicaType, int], tuple[int, int]]:
    """Attempt numbers the Services remember, keyed by (replica type, index)."""
    out = {}
    for service in services:
        meta = service.get("metadata") if isinstance(service, dict) else None
        if not isinstance(meta, dict):
            continue
        labels, annotations = meta.get("labels"), meta.get("annotations")
        if not isinstance(labels, dict) or not isinstance(annotations, dict):
            continue
        replica = replica_of(labels, job)
        if replica is None:
            continue
        attempt = count(annotations.get(names.LABEL_ATTEMPT)) or 0
        restarts = count(annotations.get(names.ANNOTATION_RESTARTS)) or 0
        out[replica] = (attempt, restarts)
    return out


def replicas_of(
    spec: MXJobSpec,
    attempts: list[Attempt],
    recorded: Callable[[], dict[tuple[ReplicaType, int], tuple[int, int]]],
) -> list[Replica]:
    """Every replica index the spec asks for, in canonical order, with its attempts.
    `recorded` reads the attempts the Services remember, which only an index with no pod
    left needs: a job whose every index has a pod never reads its Services."""
    by_slot: dict[tuple[ReplicaType, int], list[Attempt]] = {}
    for attempt in attempts:
        slot = (attempt.rtype, attempt.index)
        found = by_slot.get(slot)
        if found is None:
            by_slot[slot] = [attempt]
        else:
            found.append(attempt)
    remembered = None
    out = []
    for rtype in spec.types():
        replica = spec.mxReplicaSpecs[rtype]
        for index in range(replica.replicas):
            found = by_slot.get((rtype, index))
            if found is None:
                # What the Services remember only counts for an index without a pod.
                if remembered is None:
                    remembered = recorded()
                done = remembered.get((rtype, index), (0, 0))
                out.append(Replica(rtype, index, replica.restartPolicy, (), done))
                continue
            if len(found) > 1:
                found.sort(key=lambda a: a.attempt)
            out.append(Replica(rtype, index, replica.restartPolicy, tuple(found)))
    return out


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
