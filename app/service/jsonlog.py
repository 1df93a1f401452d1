"""Structured logs: one JSON object per line, with the job a line is about."""

import logging
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import orjson

LOGGER = "mxjob"
# (namespace, name) of the job whose sync is being answered, for every line logged meanwhile.
CURRENT_JOB: ContextVar[tuple[str | None, str | None]] = ContextVar("job", default=(None, None))
# Attributes every LogRecord has; anything else was passed with `extra=` and is logged too,
# except uvicorn's `color_message`: its message again, with ANSI colour escapes for a terminal.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
_NOT_LOGGED = _STANDARD | {"color_message"}


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", "namespace", "job", ...extra}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        namespace, name = CURRENT_JOB.get()
        if name is not None:
            line |= {"namespace": namespace, "job": name}
        line |= {k: v for k, v in vars(record).items() if k not in _NOT_LOGGED}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def config(level: str = "INFO") -> dict[str, Any]:
    """A dictConfig for our logger and uvicorn's, all as JSON on stderr. uvicorn's access
    log is off: the hook logs each sync itself, with the job's name."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    quiet = {"handlers": [], "level": "WARNING", "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"stderr": handler},
        "loggers": {
            LOGGER: {"handlers": ["stderr"], "level": level, "propagate": False},
            "uvicorn": {"handlers": ["stderr"], "level": level, "propagate": False},
            "uvicorn.error": {"level": level},
            "uvicorn.access": quiet,
        },
    }
