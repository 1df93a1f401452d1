"""The seam between the core and its integrations: what a sync decides (`Decision`), and how an
integration, handed to the sync by the service (`Integration`), contributes to it: what it
reports before the decision, what it adds to the pods and the children it adds, read by the
core without naming the integration."""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from app.core.model.conditions import Condition
from app.core.model.envelope import SyncRequest
from app.core.model.spec import CleanPodPolicy, MXJobSpec, ReplicaType


@dataclass(frozen=True)
class Decision:
    """What this sync decided about the job as a whole."""

    conditions: list[Condition]
    start_time: str | None
    resync_after: int
    # The restarts charged against backoffLimit in this run (0 while no run: suspended, queued).
    restarts: int
    # Succeeded or Failed: no pod is made any more.
    finished: bool = False
    # Finished by this very sync, which removes nothing: the evidence outlives the decision.
    finishing: bool = False
    # When it finished, as the status says (`completionTime`).
    completion_time: str | None = None
    # The pods that go once it is finished: cleanPodPolicy, but None reads as Running when
    # the job was stopped against its will (a deadline, the backoff limit).
    cleanup: CleanPodPolicy = CleanPodPolicy.RUNNING


class PodUpdate(Protocol):
    """What an integration adds to the pods of one replica type."""

    @property
    def node_selector(self) -> dict[str, str]: ...

    @property
    def tolerations(self) -> list[dict[str, Any]]: ...

    @property
    def labels(self) -> dict[str, str]: ...

    @property
    def annotations(self) -> dict[str, str]: ...


class Report(Protocol):
    """What an integration reports before the decision: its own condition (of `condition_type`)
    to set, as (status, reason, message), or None to leave it; whether the job waits (no pods,
    Services or job children); and what the pods of each replica type get."""

    @property
    def wait(self) -> bool: ...

    @property
    def condition_type(self) -> str: ...

    @property
    def condition(self) -> tuple[str, str, str] | None: ...

    @property
    def pod_sets(self) -> Mapping[ReplicaType, PodUpdate]: ...


def add_to_pod(pod: dict[str, Any], update: PodUpdate) -> None:
    """Add an update's labels, annotations, node selector and tolerations to a freshly built
    pod (its nested maps are its own, or shared read-only with its template)."""
    meta, spec = pod["metadata"], pod["spec"]
    if update.labels:
        meta["labels"] = meta["labels"] | update.labels
    if update.annotations:
        meta["annotations"] = (meta.get("annotations") or {}) | update.annotations
    if update.node_selector:
        spec["nodeSelector"] = (spec.get("nodeSelector") or {}) | update.node_selector
    if update.tolerations:
        have = list(spec.get("tolerations") or [])
        spec["tolerations"] = have + [t for t in update.tolerations if t not in have]


# The job's first pod of a replica type, as the core builds it and the integrations that
# contributed to the sync before fit it (`Contribution.fit_pod`).
FirstPod = Callable[[ReplicaType], dict[str, Any]]


class Contribution(Protocol):
    """An integration's part in one sync, once it has read the request: what it reports before
    the decision, what every pod of the job gets as it is built, the children it puts ahead of
    the pods, and those it adds after the core's, with the resync its timers need (0: none)."""

    @property
    def report(self) -> Report | None: ...

    def fit_pod(self, pod: dict[str, Any]) -> None:
        """Add what this integration gives every pod of the job to one freshly built."""

    def job_children(self) -> list[dict[str, Any]]:
        """Children, one of each per job, that go ahead of its pods while it has any."""

    def children(self, decision: Decision, now: datetime) -> tuple[list[dict[str, Any]], int]: ...


class ContributionDefaults:
    """What a contribution does at the fixed points it has no part in: nothing to the pods, no child
    ahead of them, none after the core's."""

    def fit_pod(self, pod: dict[str, Any]) -> None:
        """Leave the pod as the core built it."""

    def job_children(self) -> list[dict[str, Any]]:
        """No child ahead of the pods."""
        return []

    def children(self, decision: Decision, now: datetime) -> tuple[list[dict[str, Any]], int]:
        """No child after the core's, no resync."""
        return [], 0


@dataclass(frozen=True)
class Reports:
    """The reports of a sync's integrations before the decision, in the integrations' order."""

    reports: tuple[Report, ...] = ()

    @property
    def wait(self) -> bool:
        """Whether any of them holds the job: no pods, Services or job children."""
        return any(report.wait for report in self.reports)

    def pod_updates(self, rtype: ReplicaType) -> list[PodUpdate]:
        """What each of them adds to the pods of `rtype`."""
        return [r.pod_sets[rtype] for r in self.reports if rtype in r.pod_sets]


NO_REPORTS = Reports()


def reports_of(contributions: Sequence[Contribution]) -> Reports:
    """The reports of every contribution that has one."""
    return Reports(tuple(c.report for c in contributions if c.report is not None))


@dataclass(frozen=True)
class SyncInputs:
    """What an integration is handed to contribute to a sync of a valid job: the request, the spec,
    the previous status's conditions, whether the job had finished, and its first pods."""

    request: SyncRequest
    spec: MXJobSpec
    previous: list[Condition]
    finished: bool
    first_pod: FirstPod


# How an integration contributes to a sync of a valid job: its Contribution, or None when the
# controller does not declare what it needs.
Contributor = Callable[[SyncInputs], Contribution | None]


@dataclass(frozen=True)
class Integration:
    """A guest of the core as the service hands it to a sync: its name, how it contributes, and
    the condition types it sets on the job, which the core keeps when it reads the status back."""

    name: str
    contribute: Contributor
    condition_types: tuple[str, ...] = ()
