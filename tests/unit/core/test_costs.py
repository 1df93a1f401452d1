"""What a value costs (app/core/validate/costs.py): the parse cost estimated from a body's text,
and a value's bytes, `{`/`[` and `,` in a child and in Metacontroller's copies of it, each
worked out by hand below."""

from typing import Any

import pytest

from app.core.validate import costs

# The parse cost's weights: a `{` or `[` costs this much more than a `,`, a `,` more than a byte.
CONTAINER, VALUE = costs.PARSE_COST_PER_CONTAINER, costs.PARSE_COST_PER_VALUE


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b"", 0, id="empty"),
        pytest.param(b"[]", CONTAINER + 2, id="an-empty-list"),
        pytest.param(b'{"a":[1,2]}', 2 * CONTAINER + VALUE + 11, id="an-object-and-a-list"),
        pytest.param(b'"{,"', CONTAINER + VALUE + 4, id="counted-in-strings-too"),
        pytest.param(bytearray(b"[1,2,3]"), CONTAINER + 2 * VALUE + 7, id="a-bytearray"),
    ],
)
def test_parse_cost(body: bytes, expected: int) -> None:
    assert costs.parse_cost(body) == expected


@pytest.mark.parametrize(
    ("containers", "values", "size", "expected"),
    [
        pytest.param(0, 0, 0, 0, id="nothing"),
        pytest.param(0, 0, 100, 100, id="bytes-alone"),
        pytest.param(2, 1, 11, 2 * 112 + 264 + 11, id="the-weights"),
    ],
)
def test_cost_of(containers: int, values: int, size: int, expected: int) -> None:
    assert costs.cost_of(containers, values, size) == expected


# (bytes, `{`/`[`, `,`): twice the JSON (the child and its last-applied copy) plus that copy's
# escaping (a `\` per `"` and `\`), plus managedFields: per key its JSON, `:{},` (6) and, for
# an object, `".":{},` (7); per keyed-list entry `"k:<key JSON>"`, 11 and 7 besides.
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(5, (2, 0, 0), id="a-scalar-no-fields"),
        # `"a\u003cb"`: 10 bytes as Go escapes `<`, 2 `"` and a `\` escaped again.
        pytest.param("a<b", (2 * 10 + 2 + 1, 0, 0), id="go-escapes"),
        pytest.param([1, 2], (2 * 5, 2, 2), id="an-atomic-list-no-fields"),
        # `{"a":1}` twice, 2 `"`; the field `"a"` 3 + 6.
        pytest.param({"a": 1}, (2 * 7 + 2 + 3 + 6, 2 + 1, 1), id="an-object"),
        # `{"a":{"b":1}}` twice, 4 `"`; field `a` 3 + 6 + 7 (an object) + field `b` 3 + 6.
        pytest.param(
            {"a": {"b": 1}}, (2 * 13 + 4 + 3 + 6 + 7 + 3 + 6, 2 * 2 + 3, 3), id="nested-objects"
        ),
        # `{"c":[{"name":"x","v":1}]}` twice, 8 `"`; field `c` 3 + 6; the entry keyed by its
        # name, `"k:{\"name\":\"x\"}"` 20 + 11 + 7, its fields `name` 6 + 6 and `v` 3 + 6.
        pytest.param(
            {"c": [{"name": "x", "v": 1}]},
            (2 * 26 + 8 + 3 + 6 + 20 + 11 + 7 + 6 + 6 + 3 + 6, 2 * 3 + 7, 2 * 1 + 6),
            id="a-keyed-list",
        ),
    ],
)
def test_copies(value: Any, expected: costs.Copies) -> None:
    assert costs.copies(value) == expected


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        pytest.param((), (0, 0, 0), id="none"),
        pytest.param(((1, 2, 3),), (1, 2, 3), id="one"),
        pytest.param(((1, 2, 3), (10, 20, 30), (100, 0, 0)), (111, 22, 33), id="three"),
    ],
)
def test_sum_copies(parts: tuple[costs.Copies, ...], expected: costs.Copies) -> None:
    assert costs.sum_copies(*parts) == expected
