"""Exponential backoff with jitter for the components' relists and retries: each failure in a
row doubles the ceiling up to a cap, the wait is drawn from its upper half, a success resets it."""

import random
from collections.abc import Callable
from dataclasses import dataclass, field

BASE_SECONDS = 1.0
CAP_SECONDS = 30.0
# Past this many failures the ceiling is the cap anyway; it keeps 2**n a float that fits.
_MAX_DOUBLINGS = 60


def delay(
    failures: int,
    base: float = BASE_SECONDS,
    cap: float = CAP_SECONDS,
    draw: Callable[[], float] = random.random,
) -> float:
    """The wait after `failures` failures in a row (1 or more): between half and all of
    min(cap, base * 2**(failures-1)). Never all of it at once for every replica, never less than
    half: a wait drawn from zero up would let an unlucky draw hammer a failing API server."""
    ceiling = min(cap, base * 2.0 ** min(max(failures - 1, 0), _MAX_DOUBLINGS))
    return ceiling * (1 + draw()) / 2


@dataclass
class Backoff:
    """The failures in a row of one loop (a watch, a job's write), and the wait each one brings."""

    base: float = BASE_SECONDS
    cap: float = CAP_SECONDS
    draw: Callable[[], float] = field(default=random.random, repr=False)
    failures: int = 0

    def failed(self) -> float:
        """Count one more failure; return how long to wait before trying again."""
        self.failures += 1
        return delay(self.failures, self.base, self.cap, self.draw)

    def succeeded(self) -> None:
        """The next failure waits the shortest again."""
        self.failures = 0
