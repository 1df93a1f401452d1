"""app.core.model.values: a number from text only when it is written in ASCII digits."""

import pytest

from app.core.model.values import ascii_int


# Like test_pods.py's test_count, whose `count` adds integers and a length bound: each
# function keeps its own table.
@pytest.mark.parametrize(
    ("text", "number"),
    [
        pytest.param("0", 0, id="zero"),
        pytest.param("0012", 12, id="leading-zeros"),
        pytest.param("4096", 4096, id="plain"),
        pytest.param("", None, id="empty"),
        pytest.param("-1", None, id="sign"),
        pytest.param(" 1", None, id="space"),
        pytest.param("1e3", None, id="exponent"),
        pytest.param("²", None, id="superscript"),
        pytest.param("٣", None, id="arabic-indic"),
        pytest.param("\uff11", None, id="fullwidth"),
    ],
)
def test_only_ascii_digits_are_a_number(text: str, number: int | None) -> None:
    assert ascii_int(text) == number
