"""This sync's decision about the job as a whole: app/core/status.py makes it, and the children
follow it without reading the status again."""

from dataclasses import dataclass

from app.core.conditions import Condition
from app.core.spec import CleanPodPolicy


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
