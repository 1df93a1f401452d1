"""Read observed pods: which replica and attempt each one is, and how it is doing."""

import signal
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from app.core.model import values
from app.core.model.spec import BY_LOWERED, ORDER, ReplicaType
from app.core.mxnet import names

_PHASES = {"Pending", "Running", "Succeeded", "Failed", "Unknown"}
# Counts as the hook writes them, looked up rather than checked and converted: every observed
# pod and Service has a few. Others take the long way.
# (docs/performance.md#third-pass-sync-for-the-typical-job)
_DECIMALS = {str(n): n for n in range(4096)}


# Not frozen, which costs more to make, once per observed pod per sync: nothing changes an
# Attempt once it is made. (docs/performance.md#third-pass-sync-for-the-typical-job)
@dataclass(slots=True)
class Attempt:
    """One observed pod: a single attempt at running one replica index."""

    name: str
    rtype: ReplicaType
    index: int
    attempt: int
    restarts_before: int
    phase: str
    in_place_restarts: int
    exit_code: int | None
    reason: str

    @property
    def restarts(self) -> int:
        """Restarts of this replica index up to and including this attempt's own."""
        return self.restarts_before + self.in_place_restarts


def count(value: Any) -> int | None:
    """A non-negative integer written as a number or a string of ASCII digits, else None:
    `str.isdigit` alone also takes "²" or "٣", which nobody here wrote."""
    if type(value) is str and value in _DECIMALS:
        return _DECIMALS[value]
    if isinstance(value, str):
        return values.ascii_int(value) if len(value) < 10 else None
    if type(value) is int and value >= 0:
        return value
    return None


def observe(pods: Iterable[Any], job: str) -> list[Attempt]:
    """The attempts among `pods` that belong to `job`, in a stable order."""
    found = [attempt for pod in pods if (attempt := _attempt(pod, job))]
    found.sort(key=lambda a: (ORDER[a.rtype], a.index, a.attempt, a.name))
    return found


def replica_of(labels: dict[str, Any], job: str) -> tuple[ReplicaType, int] | None:
    """(replica type, index) a child's labels name, if it is one of `job`'s."""
    if labels.get(names.LABEL_JOB) != job:
        return None
    lowered = labels.get(names.LABEL_TYPE)
    rtype = BY_LOWERED.get(lowered) if isinstance(lowered, str) else None
    index = count(labels.get(names.LABEL_INDEX))
    if rtype is None or index is None:
        return None
    return rtype, index


def _attempt(pod: Any, job: str) -> Attempt | None:
    # The hook's hottest loop: each nested dict looked up once, the labels read here, not
    # through `replica_of`, and no detour for a first attempt.
    # (docs/performance.md#fourth-pass-sync-for-the-typical-job-again)
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    if not isinstance(meta, dict):
        return None
    labels, name = meta.get("labels"), meta.get("name")
    if not isinstance(labels, dict) or not isinstance(name, str):
        return None
    if labels.get(names.LABEL_JOB) != job:
        return None
    lowered, written = labels.get(names.LABEL_TYPE), labels.get(names.LABEL_INDEX)
    rtype = BY_LOWERED.get(lowered) if isinstance(lowered, str) else None
    if rtype is None:
        return None
    index = _DECIMALS.get(written) if type(written) is str else None
    if index is not None and name == f"{job}-{lowered}-{written}":
        # The index label as the hook writes it: a first attempt's name is made of the labels.
        attempt = 0
    else:
        index = count(written)
        if index is None:
            return None
        other = attempt_of(name, job, rtype, index)
        if other is None:
            return None
        attempt = other
    status = pod.get("status")
    if not isinstance(status, dict):
        status = {}
    phase = status.get("phase")
    in_place_restarts, exit_code = _containers(status)
    annotations = meta.get("annotations")
    restarts = annotations.get(names.ANNOTATION_RESTARTS) if isinstance(annotations, dict) else None
    # A phase that is not one of Kubernetes' strings (a list, a number) reads as Pending.
    phase = phase if isinstance(phase, str) and phase in _PHASES else "Pending"
    reason = str(status.get("reason") or "")
    restarts_before = 0 if restarts is None else count(restarts) or 0
    return Attempt(
        name, rtype, index, attempt, restarts_before, phase, in_place_restarts, exit_code, reason
    )


def attempt_of(name: str, job: str, rtype: ReplicaType, index: int) -> int | None:
    """The attempt a pod's name says it is, if it is one of this replica index's pod names.
    The name cannot change; the attempt label can (`kubectl label --overwrite`), so it is
    written for people and selectors but never read back."""
    base = names.child_name(job, rtype, index)
    if name == base:
        return 0
    suffix = name[len(base) + 2 :] if name.startswith(f"{base}-r") else ""
    attempt = count(suffix)
    if attempt and names.pod_name(job, rtype, index, attempt) == name:
        return attempt
    return None


def _containers(status: dict[str, Any]) -> tuple[int, int | None]:
    """The in-place restarts of a pod's containers, and its exit code: the main container's,
    or the first non-zero one of another container."""
    statuses = status.get("containerStatuses")
    if not isinstance(statuses, list):
        return 0, None
    restarts, codes = 0, {}
    for container in statuses:
        if not isinstance(container, dict):
            continue
        restart_count = container.get("restartCount")
        if type(restart_count) is int and restart_count >= 0:  # as the kubelet writes it
            restarts += restart_count
        else:
            restarts += count(restart_count) or 0
        state = container.get("state")
        terminated = state.get("terminated") if isinstance(state, dict) else None
        code = terminated.get("exitCode") if isinstance(terminated, dict) else None
        if type(code) is int:
            name = container.get("name")  # any JSON value: only a string can be the main one
            codes[name if isinstance(name, str) else None] = code
    if not codes:  # no container has terminated: the usual case
        return restarts, None
    main = codes.pop(names.MAIN_CONTAINER, None)
    if main:
        return restarts, main
    return restarts, next((c for c in codes.values() if c), main)


def describe_exit(code: int | None) -> str:
    """`exit code 137 (SIGKILL)` for signals, `exit code 1` otherwise."""
    if code is None:
        return "no exit code"
    if code > 128:
        try:
            return f"exit code {code} ({signal.Signals(code - 128).name})"
        except ValueError:
            pass
    return f"exit code {code}"
