"""Waiting on a condition (never on a fixed sleep)."""

import time
from collections.abc import Callable
from typing import TypeVar

# Generous: the machine has 2 shared cores and Metacontroller writes 5 objects a second.
WAIT = 120.0
POLL = 0.25
T = TypeVar("T")


class NotSeen(AssertionError):
    """What was waited for did not come in time (an AssertionError: in a test, a failure)."""


def wait_for(
    probe: Callable[[], T], what: str, timeout: float = WAIT, until: Callable[[T], bool] = bool
) -> T:
    """Poll `probe` until `until` holds for its value, and return that value; fail naming
    `what` and the last value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if until(value):
            return value
        if time.monotonic() > deadline:
            raise NotSeen(f"{what}: not seen after {timeout:.0f} s; last seen: {value!r}")
        time.sleep(POLL)
