"""Times as Kubernetes writes them: to the second in UTC; only a time with a zone is read."""

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from app.core.model.values import MAX_WAIT_SECONDS, format_time, parse_time, seconds_until, sooner

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def test_format_time_is_rfc3339_to_the_second() -> None:
    assert format_time(NOW + timedelta(microseconds=999_999)) == "2026-11-22T12:00:00Z"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("2026-11-22T12:00:00Z", NOW, id="utc"),
        pytest.param(
            "2026-11-22T13:00:00+01:00",
            datetime(2026, 11, 22, 13, tzinfo=timezone(timedelta(hours=1))),
            id="offset",
        ),
        pytest.param("2026-11-22T12:00:00", None, id="no-zone"),
        pytest.param("yesterday", None, id="not-a-time"),
        pytest.param(1700000000, None, id="a-number"),
        pytest.param(None, None, id="absent"),
    ],
)
def test_parse_time(value: Any, expected: datetime | None) -> None:
    assert parse_time(value) == expected


@pytest.mark.parametrize(
    ("since", "seconds", "expected"),
    [
        pytest.param(NOW, 30, 30, id="ahead"),
        pytest.param(NOW - timedelta(seconds=10), 30, 20, id="partly-gone"),
        pytest.param(NOW - timedelta(milliseconds=500), 30, 30, id="rounded-up"),
        pytest.param(NOW - timedelta(hours=1), 30, 0, id="past"),
        pytest.param(NOW, 10**12, MAX_WAIT_SECONDS, id="capped"),
    ],
)
def test_seconds_until(since: datetime, seconds: int, expected: int) -> None:
    assert seconds_until(since, seconds, NOW) == expected


@pytest.mark.parametrize(
    ("wait", "other", "expected"),
    [
        pytest.param(0, 0, 0, id="neither"),
        pytest.param(30, 0, 30, id="first-only"),
        pytest.param(0, 30, 30, id="second-only"),
        pytest.param(30, 20, 20, id="both-second-sooner"),
        pytest.param(5, 20, 5, id="both-first-sooner"),
    ],
)
def test_sooner(wait: int, other: int, expected: int) -> None:
    assert sooner(wait, other) == expected
