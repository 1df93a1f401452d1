"""JSON that costs the most memory per byte once parsed, as the `related` field of a valid sync
request (a field the hook ignores), sized to a number of bytes or to app.core.validate.costs.PARSE_BUDGET."""

from collections.abc import Callable

import orjson

from app.core.validate import costs
from tests.support import jobs as s

NEW_JOB = orjson.dumps(s.after_first(s.request(s.mxjob(s.train_spec()))))


def _items(unit: Callable[[int], bytes], n: int) -> bytes:
    return b",".join(unit(i) for i in range(n))


# Each shape: n -> the JSON of n of its values (a list, or an object of n keys).
SHAPES: dict[str, Callable[[int], bytes]] = {
    "tiny-objects": lambda n: b"[" + b"{}," * (n - 1) + b"{}]",
    "nested-lists": lambda n: b"[" + b"[[[[]]]]," * (n - 1) + b"[]]",
    "short-distinct-strings": lambda n: b"[" + _items(lambda i: b'"%x"' % i, n) + b"]",
    "distinct-key-map": lambda n: b"{" + _items(lambda i: b'"k%x":0' % i, n) + b"}",
    "distinct-keys-and-strings": lambda n: b"{" + _items(lambda i: b'"%x":"%x"' % (i, i), n) + b"}",
    "one-key-objects": lambda n: b"[" + _items(lambda i: b'{"%x":0}' % i, n) + b"]",
}


def request_with(related: bytes) -> bytes:
    """A new job's sync request carrying `related` as its `related` field."""
    return NEW_JOB[:-1] + b',"related":{"junk":' + related + b"}}"


def of_size(shape: str, size: int) -> bytes:
    """A request of about `size` bytes (at most), its `related` of `shape`."""
    make = SHAPES[shape]
    unit = len(make(1001)) - len(make(1000))
    n = (size - len(request_with(make(1)))) // unit
    while len(body := request_with(make(n))) > size:
        n = n * size // len(body) - 1
    return body


def most_admitted(shape: str) -> bytes:
    """The largest request of `shape` whose parse_cost is within PARSE_BUDGET."""
    make = SHAPES[shape]
    low, high = 1, 2
    while costs.parse_cost(request_with(make(high))) <= costs.PARSE_BUDGET:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if costs.parse_cost(request_with(make(middle))) <= costs.PARSE_BUDGET:
            low = middle
        else:
            high = middle
    return request_with(make(low))
