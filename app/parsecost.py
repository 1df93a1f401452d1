"""What parsing a JSON body costs in memory, estimated from its text before parsing it: the
hook refuses a body over PARSE_BUDGET (app/web.py), and the size rule admits a job only if
every sync request of it is well within that budget (app/validation.py)."""

MiB = 1024 * 1024
# The budget: the costliest bodies it admits, of the shapes that cost the most memory per byte
# once parsed, peak at 464-469 MiB of RSS on a fresh hook, within the 512 MiB promised
# (docs/security.md#memory; tests/test_hardening_parse.py measures them).
PARSE_BUDGET = 480 * MiB
PARSE_COST_PER_CONTAINER = 112
PARSE_COST_PER_VALUE = 264


def parse_cost(body: bytes | bytearray) -> int:
    """An upper estimate of the memory, in bytes, that parsing `body` takes at its peak.

    JSON costs memory by its values, not its bytes: `{}` is 2 bytes of text and about 100 of
    Python objects, so a body at the 64 MiB limit could take 2 GiB. Every object and list
    opens with a `{` or a `[`, and every value in one after its first (a key with its value,
    in an object) follows a `,`. So with C the count of `{` and `[` and V the count of `,`:

        cost = PARSE_COST_PER_CONTAINER * C + PARSE_COST_PER_VALUE * V + len(body)

    a container with its first value costing at most PARSE_COST_PER_CONTAINER bytes besides
    its text, each further value PARSE_COST_PER_VALUE (a list's pointer or an object's slot,
    a key and a value string of their own, the parser's transient vectors and table
    resizes), and strings their length. The coefficients are the smallest that cover, with a
    tenth to spare, the peak resident memory measured for the costliest shapes of JSON
    (distinct keys with distinct string values bind; docs/security.md#memory). Structure
    inside strings counts too, so the estimate errs high for a string holding JSON (the
    last-applied annotation). Three `bytes.count` passes: about 0.1 s for 64 MiB."""
    containers = body.count(b"{") + body.count(b"[")
    values = body.count(b",")
    return cost_of(containers, values, len(body))


def cost_of(containers: int, values: int, size: int) -> int:
    """parse_cost of a text of `size` bytes holding `containers` `{` and `[` and `values` `,`."""
    return PARSE_COST_PER_CONTAINER * containers + PARSE_COST_PER_VALUE * values + size
