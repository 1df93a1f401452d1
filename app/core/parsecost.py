"""What parsing a JSON body costs in memory, estimated from its text before parsing it: the
hook refuses a body over PARSE_BUDGET (app/service/web.py), and the size rule admits a job only if
every sync request of it is well within that budget (app/core/sizerule.py)."""

MiB = 1024 * 1024
# The budget: the costliest bodies it admits peak within the 512 MiB the hook promises
# (docs/security.md#limits, measured by tests/http/test_parse_memory.py).
PARSE_BUDGET = 480 * MiB
PARSE_COST_PER_CONTAINER = 112
PARSE_COST_PER_VALUE = 264


def parse_cost(body: bytes | bytearray) -> int:
    """An upper estimate of the memory, in bytes, that parsing `body` takes at its peak: JSON
    costs memory by its values, not its bytes, so `cost_of` its `{`/`[`, its `,` and its
    length (docs/security.md#limits)."""
    containers = body.count(b"{") + body.count(b"[")
    values = body.count(b",")
    return cost_of(containers, values, len(body))


def cost_of(containers: int, values: int, size: int) -> int:
    """parse_cost of a text of `size` bytes holding `containers` `{` and `[` and `values` `,`."""
    return PARSE_COST_PER_CONTAINER * containers + PARSE_COST_PER_VALUE * values + size
