"""app.core.model.values: a number from text only when it is written in ASCII digits."""

import pytest

from app.core.model.values import ascii_int
from tests.support.odd_digits import NOT_DIGITS, UNICODE_DIGITS


# Like test_pods.py's test_count, whose `count` adds integers and a length bound: the texts
# both refuse are one table in tests/support/odd_digits.py.
@pytest.mark.parametrize(
    ("text", "number"),
    [
        pytest.param("0", 0, id="zero"),
        pytest.param("0012", 12, id="leading-zeros"),
        pytest.param("4096", 4096, id="plain"),
        *(
            pytest.param(text, None, id=name)
            for name, text in (NOT_DIGITS | UNICODE_DIGITS).items()
        ),
    ],
)
def test_only_ascii_digits_are_a_number(text: str, number: int | None) -> None:
    assert ascii_int(text) == number
