"""What the web service refuses or fails at, besides the core's (app/core/model/errors.py)."""

from app.core.model.envelope import JobId


class Refused(Exception):
    """A request answered with a 4xx or 503: not authorised, too large, too slow, too many
    bytes in flight, queued too long, or not a sync request."""

    def __init__(
        self,
        status: int,
        outcome: str,
        detail: str,
        job: JobId = (None, None),
        retry_after: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.status, self.outcome, self.detail, self.job = status, outcome, detail, job
        self.retry_after = retry_after


class Crashed(Exception):
    """The core raised: a bug, answered with 500 and logged with the job and the traceback
    (as text: the exception itself, with the frames that hold the request, is not kept)."""

    def __init__(self, job: JobId, trace: str) -> None:
        super().__init__(f"sync of {job} crashed")
        self.job, self.trace = job, trace


class ClientGone(Exception):
    """The client closed its connection before its answer was computed."""


class SettingsError(ValueError):
    """A setting from the environment is out of its range: one line per variable, naming it
    and what it allows (app/service/settings.py)."""


class CannotListen(Exception):
    """The address `serve` is to listen on is taken by another process, or not this machine's:
    found before the hook starts, so that no line says it did."""
