"""The components' backoff (app/controllers/backoff.py): the waits grow, are capped, are
jittered and start again after a success."""

import random

import pytest

from app.controllers.backoff import CAP_SECONDS, Backoff, delay


@pytest.mark.parametrize(
    ("failures", "draw", "expected"),
    [
        pytest.param(1, 1.0, 1.0, id="first-failure-at-most-base"),
        pytest.param(1, 0.0, 0.5, id="first-failure-at-least-half-base"),
        pytest.param(2, 1.0, 2.0, id="doubles"),
        pytest.param(5, 1.0, 16.0, id="doubles-again"),
        pytest.param(6, 1.0, CAP_SECONDS, id="capped"),
        pytest.param(6, 0.0, CAP_SECONDS / 2, id="capped-and-jittered"),
        pytest.param(10_000, 1.0, CAP_SECONDS, id="no-overflow-after-very-many"),
        pytest.param(0, 1.0, 1.0, id="zero-counts-as-one"),
    ],
)
def test_delay_grows_and_is_capped(failures: int, draw: float, expected: float) -> None:
    assert delay(failures, draw=lambda: draw) == expected


def test_delays_grow_until_the_cap() -> None:
    backoff = Backoff(draw=lambda: 1.0)
    assert [backoff.failed() for _ in range(8)] == [1, 2, 4, 8, 16, 30, 30, 30]


def test_delays_are_jittered_within_the_upper_half() -> None:
    """Two replicas failing together do not retry together: the waits after the same failure
    spread over the upper half of the ceiling."""
    draws = random.Random(38)
    waits = [Backoff(draw=draws.random).failed() for _ in range(200)]
    assert all(0.5 <= w <= 1.0 for w in waits)
    assert len(set(waits)) == len(waits)
    assert min(waits) < 0.6
    assert max(waits) > 0.9


def test_a_success_resets_the_waits() -> None:
    backoff = Backoff(draw=lambda: 1.0)
    assert [backoff.failed() for _ in range(4)] == [1, 2, 4, 8]
    backoff.succeeded()
    assert [backoff.failed() for _ in range(2)] == [1, 2]
