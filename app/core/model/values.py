"""Values as Kubernetes writes them: times (RFC 3339, UTC, to the second), waits until a time,
and numbers in ASCII digits, the one way the hook reads a number from text."""

import math
from datetime import datetime
from typing import Any

# The longest wait the hook asks for. Metacontroller holds resyncAfterSeconds in a Go
# time.Duration (at most ~292 years), and a datetime ends in year 9999: whole-second
# arithmetic capped here overflows neither, whatever a spec or a status says.
MAX_WAIT_SECONDS = 2**31 - 1


def format_time(now: datetime) -> str:
    """RFC 3339 in UTC, to the second, as Kubernetes writes times."""
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    """A time with its zone, from an observed object; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


def seconds_until(since: datetime, seconds: int, now: datetime) -> int:
    """Whole seconds from `now` until `seconds` after `since`: 0 once past, capped."""
    left = math.ceil((since - now).total_seconds()) + seconds
    return min(max(left, 0), MAX_WAIT_SECONDS)


def sooner(wait: int, other: int) -> int:
    """The earlier of two waits in seconds, where 0 means no wait at all."""
    return min(wait, other) if wait and other else wait or other


def ascii_int(text: str) -> int | None:
    """The number `text` writes in ASCII digits alone, else None. `str.isdigit` alone is true of
    "²", "①" or "٣", which `int` refuses or reads as a number nobody wrote."""
    if text.isascii() and text.isdigit():
        return int(text)
    return None
